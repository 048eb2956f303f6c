"""The hardmax counter-example: one-layer hardmax attention is not a contextual mapping.

Part II, :ref:`ch-hardmax` (:prf:ref:`hm-thm-hardmax`). Two integer sequences whose shared tokens
every hardmax head maps identically, verified in exact rational arithmetic over random integer
weights, and one softmax head that separates them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import check_rng, check_size
from ..layers import AttentionHead, multihead_attention
from ..results import Result

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = ["hardmax_counterexample", "HardmaxReport", "check_hardmax_counterexample"]
# The module's public names: the flat ones, then those that stay in this module.
__all__ = [*__flat__, "COUNTEREXAMPLE_T", "validate_draw_sizes", "validate_hardmax_d"]


#: The two sets of positions of the counter-example: same min (1), max (6) and mean (7/2).
COUNTEREXAMPLE_T = ((1, 2, 5, 6), (1, 3, 4, 6))


#: Caps of the random integer heads of :func:`check_hardmax_counterexample` (and of the hardmax
#: checks of :mod:`sattn.precision`): every trial runs exact rational hardmax attention, about 3 ms
#: at d = 1 and 0.1 s at d = 64, so 10**5 trials take minutes and larger heads grow the cost of
#: each trial as d * max_heads * max_s.
MAX_TRIALS = 10**5
MAX_HEAD_SIZE = 64
#: The largest magnitude of the integer weights (products of scores stay far inside int64/float64).
MAX_BOUND = 10**6


def validate_draw_sizes(trials, d, max_heads, max_s, bound):
    """The sizes of the random integer heads, checked and capped (``MAX_TRIALS``,
    ``MAX_HEAD_SIZE``, ``MAX_BOUND``); a value above its cap is a
    :class:`sattn.SizeTooLargeError`."""
    why = "the work of every exact trial grows with d, max_heads and max_s"
    return (check_size("trials", trials, cap=MAX_TRIALS,
                       why="each trial is an exact rational computation of milliseconds or more"),
            validate_hardmax_d(d),
            check_size("max_heads", max_heads, cap=MAX_HEAD_SIZE, why=why),
            check_size("max_s", max_s, cap=MAX_HEAD_SIZE, why=why),
            check_size("bound", bound, cap=MAX_BOUND,
                       why="integer weights beyond that make scores whose exact products no "
                           "longer fit the float64 formats checked"))


def validate_hardmax_d(d):
    """The token dimension ``d`` of the counter-example, ``1 <= d <= MAX_HEAD_SIZE``."""
    return check_size("d", d, cap=MAX_HEAD_SIZE,
                      why="the token dimension of the counter-example; the exact checks run heads "
                          "of size d")


def hardmax_counterexample(d: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Two integer sequences on which one-layer hardmax attention is never a contextual mapping.

    Tokens are ``x(t) = t e_1 + e_2`` (``x(t) = t`` when ``d = 1``) for ``t`` in
    ``T1 = {1, 2, 5, 6}`` and ``T2 = {1, 3, 4, 6}``: the two position sets share their minimum,
    maximum and mean, so every hardmax head returns the same vector at the shared tokens ``x(1)``
    (column 0) and ``x(6)`` (column 3), whatever its weights.

    Parameters
    ----------
    d : int, default 1
        Token dimension, ``1 <= d <= 64`` (``MAX_HEAD_SIZE``; larger is a
        :class:`sattn.SizeTooLargeError`).

    Returns
    -------
    X1, X2 : numpy.ndarray of int, shape (d, 4)

    References
    ----------
    Theorem 1 of Kajitsuka & Sato (2024) (the example here is the book's own, not the paper's);
    :ref:`ch-hardmax`.
    """
    d = validate_hardmax_d(d)
    out = []
    for T in COUNTEREXAMPLE_T:
        X = np.zeros((d, 4), dtype=np.int64)
        X[0] = T
        if d >= 2:
            X[1] = 1
        out.append(X)
    return out[0], out[1]


@dataclass(frozen=True)
class HardmaxReport(Result):
    """Outcome of :func:`check_hardmax_counterexample`.

    ``mismatches`` counts the trials where a shared token's hardmax output differed between the
    two sequences (0 expected, exactly); ``softmax_gap`` is the distance between the softmax
    outputs at token ``x(1)`` for one fixed head, showing that softmax separates the pair.
    ``ok``: no mismatch in any trial, and a positive softmax gap.
    """

    trials: int
    mismatches: int
    max_heads: int
    zero_key_trials: int
    tied_trials: int
    softmax_outputs: tuple
    softmax_gap: float

    @property
    def ok(self) -> bool:
        """Every hardmax trial confused the shared tokens, and softmax separated them."""
        return self.mismatches == 0 and self.softmax_gap > 0

    @property
    def message(self) -> str:
        """One line: mismatches over the trials and the softmax gap."""
        verdict = "counter-example confirmed" if self.ok else "counter-example FAILS"
        return (f"{verdict}: {self.mismatches} mismatches in {self.trials} exact hardmax trials "
                f"(up to {self.max_heads} heads, {self.zero_key_trials} with W_K = 0, "
                f"{self.tied_trials} with ties); softmax gap {self.softmax_gap:.3g}")


def _random_int_heads(rng, d, max_heads, max_s, bound, zero_key):
    h = int(rng.integers(1, max_heads + 1))
    heads = []
    for _ in range(h):
        s = int(rng.integers(1, max_s + 1))
        W = [rng.integers(-bound, bound + 1, size=shape) for shape in ((s, d), (s, d), (s, d), (d, s))]
        if zero_key:
            W[1] = np.zeros((s, d), dtype=np.int64)
        heads.append(AttentionHead(*W))
    return heads


def check_hardmax_counterexample(rng, *, trials: int = 1000, d: int = 1, max_heads: int = 4,
                                 max_s: int = 3, bound: int = 5) -> HardmaxReport:
    """Verify the counter-example exactly (rational arithmetic) over random integer weights.

    For each trial, draws 1..``max_heads`` heads of size 1..``max_s`` with integer entries in
    ``[-bound, bound]`` (every fifth trial with ``W_K = 0``, where hardmax returns the plain mean),
    runs exact hardmax attention on both sequences and compares the outputs at the shared tokens.

    Parameters
    ----------
    rng : numpy.random.Generator
    trials, d, max_heads, max_s, bound : int
        At least 1 each, and at most ``trials <= 10**5`` (``MAX_TRIALS``),
        ``d, max_heads, max_s <= 64`` (``MAX_HEAD_SIZE``), ``bound <= 10**6``
        (``MAX_BOUND``); a larger value is a :class:`sattn.SizeTooLargeError`.

    Returns
    -------
    HardmaxReport

    References
    ----------
    Theorem 1 of Kajitsuka & Sato (2024); :ref:`ch-hardmax`.
    """
    rng = check_rng("rng", rng)
    trials, d, max_heads, max_s, bound = validate_draw_sizes(trials, d, max_heads, max_s, bound)
    X1, X2 = hardmax_counterexample(d)
    mismatches = zero = tied = 0
    for t in range(trials):
        zero_key = t % 5 == 4
        zero += zero_key
        heads = _random_int_heads(rng, d, max_heads, max_s, bound, zero_key)
        Y1, P1 = multihead_attention(X1, heads, kind="hardmax", exact=True, return_weights=True)
        Y2 = multihead_attention(X2, heads, kind="hardmax", exact=True)
        tied += any(any(sum(1 for x in P[:, k] if x != 0) > 1 for k in range(4)) for P in P1)
        if not (np.all(Y1[:, 0] == Y2[:, 0]) and np.all(Y1[:, 3] == Y2[:, 3])):
            mismatches += 1
    # softmax separates the same pair (one fixed head, d = 1 projection on the first coordinate)
    e = np.zeros((1, d))
    e[0, 0] = 1.0
    head = AttentionHead(W_Q=0.3 * e, W_K=e, W_V=e, W_O=e.T)
    S1 = multihead_attention(X1.astype(float), [head])
    S2 = multihead_attention(X2.astype(float), [head])
    return HardmaxReport(
        trials=trials, mismatches=mismatches, max_heads=max_heads, zero_key_trials=zero,
        tied_trials=tied, softmax_outputs=(float(S1[0, 0]), float(S2[0, 0])),
        softmax_gap=float(np.linalg.norm(S1[:, 0] - S2[:, 0])),
    )


# The old names of this module's renamed functions warn and resolve for one release
# (sattn/_deprecation.py); imported last so that no line above moves.
from .._deprecation import module_getattr as _old_names  # noqa: E402

__getattr__ = _old_names(__name__)

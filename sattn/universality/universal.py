"""Universal approximation with one attention layer (Part II, :ref:`ch-universal-approximation`).

:func:`two_layer_approximation` builds a model of the class ``T_2 = F_FF2 o F_SA o F_FF1``
(:prf:ref:`ua-alg-construction`) approximating a continuous permutation-equivariant function for
``d = 1`` (Proposition 1 of Kajitsuka & Sato 2024, :prf:ref:`ua-thm-universal`): a token-wise
quantizer, the rank-1 softmax attention of :mod:`sattn.universality.rank_one` as context ids, and
the interpolating feed-forward layer of :mod:`sattn.universality.memorize`. The construction
verifies itself and returns a report with the measured distances.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import SizeTooLargeError
from .._validate import MAX_DRAWS, as_float_array, check_real, check_rng, check_size
from ..layers import AttentionHead, FeedForward, feed_forward, multihead_attention
from ..results import Result
from .memorize import interpolating_ffn

__flat__ = [
    "quantizer_ffn",
    "TwoLayerModel",
    "UniversalApproximationReport",
    "two_layer_approximation",
]
__all__ = [*__flat__, "multihead_attention_batch"]


#: The most cells per coordinate (``K``): the quantizer has 2K ReLUs, built one by one.
MAX_K = 10**5
#: The longest sequence of :func:`two_layer_approximation` (``n``; 2 or 3 are practical).
MAX_N = 1024
#: The most cells (multisets of ``n`` of the ``K`` cells, ``C(K + n - 1, n)``) that
#: :func:`two_layer_approximation` interpolates: each is a context id of the second FFN, checked
#: one by one in Python.
MAX_CELLS = 10**5
#: The most Monte-Carlo numbers (``samples * n``) of one evaluation: 10**7 (a few arrays of 80 MB).
MAX_POINTS = 10**7


def _check_K(K):
    return check_size("K", K, cap=MAX_K, why="the quantizer has 2K ReLUs, built one by one")


def quantizer_ffn(K: int, *, ramp: float = 1e-3) -> FeedForward:
    """Token-wise staircase on [0, 1] (d = 1): ``x -> 1 + #{j >= 1 : x >= j/K}``, a FFN with skip.

    Each step rises linearly over ``[j/K - ramp/K, j/K]`` (two ReLUs); two more ReLUs cancel the
    skip connection. Exact outside the ramps, whose total length is ``(K - 1) ramp / K``.

    References
    ----------
    Step 2 of the construction behind Proposition 1 of Kajitsuka & Sato (2024) (derived for the
    book); :ref:`ch-universal-approximation`.

    Raises
    ------
    ValueError, TypeError
        If ``K`` is not an integer ``>= 1`` or ``ramp`` is not in ``(0, 1]``.
    SizeTooLargeError
        If ``K > 10**5`` (``MAX_K``).
    """
    K = _check_K(K)
    ramp = check_real("ramp", ramp, low=0.0, high=1.0, low_open=True)
    eta = ramp / K
    W1, b1, w2 = [1.0, -1.0], [0.0, 0.0], [-1.0, 1.0]  # -relu(x) + relu(-x) = -x
    for j in range(1, K):
        W1 += [1 / eta, 1 / eta]
        b1 += [-(j / K) / eta + 1.0, -(j / K) / eta]
        w2 += [1.0, -1.0]
    return FeedForward(W1=np.array(W1)[:, None], b1=np.array(b1), W2=np.array(w2)[None, :],
                       b2=np.array([1.0]))


@dataclass
class TwoLayerModel:
    """A model of the class ``T_2``: ``F_FF2(F_SA(F_FF1(X)))`` with a single rank-1 head.

    ``__call__`` evaluates one sequence with the public layers; ``batch`` evaluates an array of
    shape (B, 1, n) with the same arithmetic, vectorised.
    """

    ffn1: FeedForward
    head: AttentionHead
    ffn2: FeedForward
    K: int

    def __call__(self, X) -> np.ndarray:
        X = as_float_array("X", X, ndim=2)
        return feed_forward(multihead_attention(feed_forward(X, self.ffn1), [self.head]), self.ffn2)

    def batch(self, Xs) -> np.ndarray:
        Xs = as_float_array("Xs", Xs, ndim=3)
        return _ffn_batch(multihead_attention_batch(_ffn_batch(Xs, self.ffn1), self.head), self.ffn2)


def _ffn_batch(H, ffn):
    hid = np.maximum(np.einsum("qd,bdn->bqn", ffn.W1, H) + ffn.b1[None, :, None], 0.0)
    return H + np.einsum("dq,bqn->bdn", ffn.W2, hid) + ffn.b2[None, :, None]


@dataclass(frozen=True)
class UniversalApproximationReport(Result):
    """Measured quality of a ``T_2`` approximation on ``[0, 1]^n`` (d = 1).

    ``dp_error`` estimates ``d_p(f, g)`` by Monte Carlo with ``samples`` uniform points;
    ``dp_quantization`` is the same for the piecewise-constant target ``f_bar`` (the error the
    network inherits from the grid); ``max_memorization_error`` is the largest error of the
    network on the grid's cell centres; ``n_ids`` the number of context ids (= FFN2 width + 1).
    ``ok``: the network reproduces ``f`` at every cell centre within ``TOLERANCE``, so that its
    distance to ``f`` is the quantization error plus the ramps of the quantizer.
    """

    #: Largest error at the cell centres that still counts as exact.
    TOLERANCE: ClassVar[float] = 1e-6

    K: int
    n: int
    p: float
    samples: int
    dp_error: float
    dp_quantization: float
    max_memorization_error: float
    n_ids: int
    width_ffn1: int
    width_ffn2: int
    lam: float

    @property
    def ok(self) -> bool:
        """The network reproduces ``f`` at every cell centre within :attr:`TOLERANCE`."""
        return self.max_memorization_error <= self.TOLERANCE

    @property
    def message(self) -> str:
        """One line: the error at the cell centres and the two ``d_p`` distances."""
        rel = "<=" if self.ok else ">"
        return (f"T_2 model with K = {self.K}, n = {self.n}: error at the cell centres "
                f"{self.max_memorization_error:.3g} {rel} {self.TOLERANCE:g}; d_{self.p:g}(f, g) = "
                f"{self.dp_error:.4g}, d_{self.p:g}(f, f_bar) = {self.dp_quantization:.4g} "
                f"({self.samples} samples, {self.n_ids} ids)")


def two_layer_approximation(f, n: int, K: int, rng, *, samples: int = 4000, p: float = 2.0,
                            max_logit: float = 1.0, ramp: float = 1e-3):
    """Approximate a permutation-equivariant ``f : [0,1]^{1 x n} -> R^{1 x n}`` with a T_2 model.

    1. ``F_FF1`` quantises each token to its cell's index ``1..K`` (:func:`quantizer_ffn`).
    2. ``F_SA`` is the rank-1 softmax attention (``v = 1``, ``lam = max_logit / K^2``,
       ``scale = 1 / (4K)``) applied to the quantised sequence.
    3. ``F_FF2`` interpolates the context ids to ``f`` at the cell centres
       (:func:`~sattn.universality.memorize.interpolating_ffn`), over every multiset of cells (sequences with two tokens in
       one cell included; they are consistent because ``f`` is permutation-equivariant).

    Parameters
    ----------
    f : callable
        Maps an array of shape (B, 1, n) to (B, 1, n); must be permutation-equivariant.
    n : int (2 or 3 are practical)
        Sequence length, ``2 <= n <= 1024`` (``MAX_N``).
    K : int
        Cells per coordinate, ``1 <= K <= 10**5`` (``MAX_K``). The grid's ``C(K + n - 1, n)``
        multisets of cells may number at most ``10**5`` (``MAX_CELLS``).
    rng : numpy.random.Generator
        Draws the Monte-Carlo evaluation points.
    samples : int
        Monte-Carlo points, ``1 <= samples <= 10**6`` and ``samples * n <= 10**7``
        (``MAX_POINTS``).
    p : float, default 2
    max_logit : float, default 1
    ramp : float, default 1e-3

    Returns
    -------
    model : TwoLayerModel
    report : UniversalApproximationReport

    Raises
    ------
    ValueError
        If ``f`` returns the wrong shape or is not permutation-equivariant on the grid (naming
        the sequence), or context ids collide in float64.
    SizeTooLargeError
        If ``n``, ``K`` or ``samples`` is above its cap (the message names it and the cap).

    References
    ----------
    Proposition 1 of Kajitsuka & Sato (2024) (construction details derived for the book);
    :ref:`ch-universal-approximation`.
    """
    if not callable(f):
        raise TypeError(f"f must be callable, got {type(f).__name__}")
    n = check_size("n", n, low=2, cap=MAX_N, why="the sequence length; the grid and the "
                                                  "Monte-Carlo points grow with it")
    K = _check_K(K)
    log_cells = math.lgamma(K + n) - math.lgamma(n + 1) - math.lgamma(K)     # ln C(K + n - 1, n)
    if log_cells > math.log(MAX_CELLS) + 1e-9 and math.comb(K + n - 1, n) > MAX_CELLS:
        big = "n" if n > 3 else "K"
        raise SizeTooLargeError(
            f"{big} = {n if big == 'n' else K} is too large (n = {n}, K = {K}): the grid has "
            f"C(K + n - 1, n) = {math.comb(K + n - 1, n) if log_cells < 50 else f'about e^{log_cells:.0f}'} "
            f"multisets of cells, more than the {MAX_CELLS} the second FFN may interpolate")
    rng = check_rng("rng", rng)
    samples = check_size("samples", samples, cap=min(MAX_DRAWS, MAX_POINTS // n),
                         why=f"samples * n Monte-Carlo numbers, at most {MAX_POINTS} (n = {n})")
    p = check_real("p", p, low=1.0)
    max_logit = check_real("max_logit", max_logit)
    ffn1 = quantizer_ffn(K, ramp=ramp)
    lam = max_logit / K**2
    scale = 1.0 / (4 * K)
    head = AttentionHead(W_Q=np.ones((1, 1)), W_K=lam * np.ones((1, 1)), W_V=np.ones((1, 1)),
                         W_O=scale * np.ones((1, 1)))
    cells = np.array(list(itertools.combinations_with_replacement(range(1, K + 1), n)), dtype=float)
    Q = cells[:, None, :]  # (B, 1, n) quantised sequences
    centres = (Q - 0.5) / K
    F = np.asarray(f(centres), dtype=np.float64)
    if F.shape != Q.shape:
        raise ValueError(f"f must map an array of shape (B, 1, n) to the same shape, got {F.shape} for {Q.shape}")
    # permutation equivariance on the grid: equal tokens in a sequence need equal values
    for b in range(Q.shape[0]):
        for k, l in itertools.combinations(range(n), 2):
            if Q[b, 0, k] == Q[b, 0, l] and not np.isclose(F[b, 0, k], F[b, 0, l], rtol=1e-12, atol=1e-12):
                raise ValueError(
                    f"f is not permutation-equivariant: at cell centres {centres[b, 0].tolist()} the equal "
                    f"tokens {k} and {l} get different values {F[b, 0, k]:.6g} and {F[b, 0, l]:.6g}"
                )
    H = multihead_attention_batch(Q, head)  # the context id of every quantised token
    ids, targ, seen = [], [], {}
    for b in range(Q.shape[0]):
        for k in range(n):
            key = (Q[b, 0, k], tuple(Q[b, 0]))
            if key not in seen:
                seen[key] = True
                ids.append([H[b, 0, k]])
                targ.append([F[b, 0, k]])
    ffn2, info = interpolating_ffn(np.array(ids), np.array(targ), rng)
    model = TwoLayerModel(ffn1=ffn1, head=head, ffn2=ffn2, K=K)
    mem_err = float(np.abs(model.batch(centres) - F).max())
    U = rng.random((samples, 1, n))
    fU = np.asarray(f(U), dtype=np.float64)
    G = model.batch(U)
    cell = np.clip(np.floor(U * K), 0, K - 1)
    fbar = np.asarray(f((cell + 0.5) / K), dtype=np.float64)

    def dp(A):
        return float(np.mean(np.sum(np.abs(A) ** p, axis=(1, 2))) ** (1 / p))

    return model, UniversalApproximationReport(
        K=K, n=n, p=p, samples=samples, dp_error=dp(G - fU), dp_quantization=dp(fbar - fU),
        max_memorization_error=mem_err, n_ids=len(ids), width_ffn1=ffn1.width,
        width_ffn2=ffn2.width, lam=lam,
    )


def multihead_attention_batch(Hs, head: AttentionHead) -> np.ndarray:
    """Single-head softmax attention with skip connection on a batch (B, d, n) (vectorised)."""
    WQ, WK, WV, WO = head.W_Q, head.W_K, head.W_V, head.W_O
    S = np.einsum("sd,bdl->bsl", WK, Hs).transpose(0, 2, 1) @ np.einsum("sd,bdk->bsk", WQ, Hs)
    S = S - S.max(axis=1, keepdims=True)
    with np.errstate(under="ignore"):
        P = np.exp(S)
    P /= P.sum(axis=1, keepdims=True)
    return Hs + np.einsum("ds,bsn->bdn", WO @ WV, Hs) @ P

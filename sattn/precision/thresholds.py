"""Per construction: its criterion in a format, the bits it needs, the measured threshold.

Each construction of the book has a check returning a :class:`PrecisionReport` (criterion,
margin) in either mode ("weights" or "forward"), and the book's a-priori estimate of the bits it
needs (``*_bits_needed``), computed from the construction's own margins; :func:`smallest_bits`
and :func:`smallest_format` measure the threshold of any check.

References
----------
Chapter :ref:`ch-finite-precision`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validate import as_float_array, check_callable, check_int, check_real, check_rng
from ..layers import AttentionHead, multihead_attention
from ..patterns.construction import Approximation, exact_product_rows, validate_target
from ..patterns.criteria import check_approximation, check_attention_matrix
from ..results import Result
from ..rounding import product_error_bound
from ..universality.contextual import as_sequences, vocabulary
from ..universality.hardmax import validate_draw_sizes, hardmax_counterexample
from ..universality.memorize import OneLayerTransformer
from ..universality.rank_one import RankOneContextualMapping
from ..universality.universal import TwoLayerModel
from .formats import FORMATS, MODES, float_format, round_to
from .forward import (
    FormatOverflow,
    validate_model,
    model_in_unchecked,
    model_width,
    round_head,
    attention_matrix_in,
    column_attention_in,
    round_model,
)

__flat__ = __all__ = [
    "PrecisionReport", "algorithm1_precision", "algorithm1_bits_needed", "hardmax_precision",
    "hardmax_bits_needed", "contextual_precision", "contextual_bits_needed",
    "memorization_precision", "memorization_bits_needed", "approximation_precision",
    "smallest_bits", "smallest_format",
]


def _check_mode(mode):
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    return mode


def _sequences(name, Xs, model):
    """``Xs`` checked for ``model``: (d, n) sequences of the model's width (and its encoding's n)."""
    E = getattr(model, "E", None)
    return as_sequences(name, Xs, d=model_width(model), n=None if E is None else np.shape(E)[1])


def _outputs(model, Xs, fmt, mode):
    """The model's outputs on checked sequences ``Xs``, in the format and mode."""
    Z = np.stack([np.asarray(X, dtype=np.float64) for X in Xs])
    if mode == "forward":
        return list(model_in_unchecked(model, Z, fmt))
    try:
        rounded = round_model(model, fmt)
    except FormatOverflow:  # the weights do not fit the format: every output is lost
        return [np.full(np.shape(X), np.inf) for X in Z]
    return list(model_in_unchecked(rounded, round_to(Z, fmt), "float64"))


def _min_separation(Xs, outs) -> float:
    """Smallest distance between output columns that a contextual mapping must separate (vectorized).

    A pair must be separated when its input tokens differ, or when they are equal but the two
    sequences have different vocabularies (Definition 2); ``inf`` if there is no such pair.
    """
    cols = np.concatenate([np.asarray(X, dtype=np.float64).T for X in Xs])
    vocab_ids: dict = {}
    vid = np.concatenate([[vocab_ids.setdefault(vocabulary(X), len(vocab_ids))] * X.shape[1] for X in Xs])
    same_token = (cols[:, None, :] == cols[None, :, :]).all(axis=2)
    must = ~same_token | (vid[:, None] != vid[None, :])
    np.fill_diagonal(must, False)
    if not must.any():
        return math.inf
    Y = np.concatenate([np.asarray(o, dtype=np.float64).T for o in outs])
    if not np.isfinite(Y).all():
        return 0.0
    D = np.sqrt(((Y[:, None, :] - Y[None, :, :]) ** 2).sum(axis=2))
    return float(D[must].min())


@dataclass(frozen=True)
class PrecisionReport(Result):
    """Does a construction's criterion hold in a format, and with what margin?

    Attributes
    ----------
    construction : str
    format : str
    mode : str
        "weights" or "forward".
    ok : bool
        The criterion holds.
    margin : float
        How far inside the criterion it is (``>= 0`` iff it holds, for criteria with a threshold;
        ``> 0`` iff it holds for separations); its unit is in ``criterion``.
    criterion : str
        The criterion in words, with the margin's unit.
    value : float
        The measured quantity the criterion bounds (error, separation, log-ratio).
    """

    construction: str
    format: str
    mode: str
    ok: bool
    margin: float
    criterion: str
    value: float

    @property
    def message(self) -> str:
        """One line: verdict, margin, measured value."""
        return (f"{self.construction} in {self.format} ({self.mode}): "
                f"{'holds' if self.ok else 'FAILS'}, margin {self.margin:.3g}; {self.criterion}")


def _check_approx(approx):
    if not isinstance(approx, Approximation):
        raise TypeError(f"approx must be an Approximation (from sattn.approximate), got {type(approx).__name__}")
    return approx


def algorithm1_precision(approx, A, fmt, *, mode: str = "forward") -> PrecisionReport:
    """Criteria (6)-(7) for Algorithm 1's input ``X`` in a format.

    "weights": ``X``, ``W_Q``, ``W_K`` are rounded and the logits computed in float64, then checked
    with :func:`sattn.check_approximation`. "forward": the attention matrix is computed
    in the format (:func:`~sattn.attention_matrix_in`) and the criteria are checked on ``log M`` (an
    entry that underflowed to 0 off the support satisfies (7); on the support it fails (6)).

    Parameters
    ----------
    approx : Approximation
        From :func:`sattn.approximate` (its ``causal`` flag is used).
    A : array_like, shape (L, L)
        The target pattern.
    fmt : str, int or FloatFormat
    mode : {"weights", "forward"}

    Returns
    -------
    PrecisionReport
        ``margin = min(margin6, margin7)`` in nats (log of a ratio of weights).

    References
    ----------
    Criteria (6)-(7) and Algorithm 1 of Likhosherstov et al. (2021); Chapter
    :ref:`ch-finite-precision`.
    """
    _check_mode(mode)
    f = float_format(fmt)
    _check_approx(approx)
    causal = bool(approx.causal)
    A = validate_target(A, causal=causal)
    L = approx.X.shape[0]
    if A.shape != (L, L):
        raise ValueError(f"A must be the approximated pattern, of shape (L, L) = ({L}, {L}) "
                         f"(L = approx.X.shape[0]), got shape {A.shape}")
    if mode == "weights":
        # the rounded input in exact arithmetic: the float64 product is certified against
        # Higham's bound and re-made exactly inside a row's rounding band
        X, WQ, WK = (round_to(a, f) for a in (approx.X, approx.W_Q, approx.W_K))
        XQ, XK = X @ WQ, X @ WK
        G = XQ @ XK.T
        err, exact = product_error_bound(XQ, XK), exact_product_rows(XQ, XK)
        if causal:
            G = np.where(np.tri(G.shape[0], dtype=bool), G, -np.inf)
        rep = check_approximation(G, A, approx.eps1, approx.eps2, causal=causal, logit_error=err,
                                  exact_logits=exact)
        dead = False
    else:
        M = attention_matrix_in(approx.X, approx.W_Q, approx.W_K, f, causal=causal)
        dead = bool(((A > 0) & ~(M > 0)).any()) or not np.isfinite(M).all()
        # decided on ln M, certified against the logarithm's rounding (check_attention_matrix)
        rep = check_attention_matrix(np.where(np.isfinite(M), M, 1.0), A, approx.eps1,
                                     approx.eps2, causal=causal)
    margin = -math.inf if dead else min(rep.margin6, rep.margin7)
    name = "Algorithm 1 input (causal)" if causal else "Algorithm 1 input"
    return PrecisionReport(name, f.name, mode, ok=rep.ok and not dead, margin=margin,
                           criterion="criteria (6)-(7); margin min(margin6, margin7) in nats",
                           value=rep.ratio_spread)


def algorithm1_bits_needed(approx) -> float:
    """The book's estimate of the significand bits Algorithm 1's input needs in a forward pass.

    First-order rounding analysis: the logit ``G_lj`` is a dot product with condition number
    ``K = max_lj sum_i |q_li k_ji|``; rounding ``X`` and accumulating cost at most ``(2K + |G|) u``;
    subtracting the row maximum, ``exp`` and the division add about ``(|G - max| + 3) u`` to
    ``log M``. A criterion compares two log-weights of a row, so it survives when twice that
    error is below the float64 margin ``m = min(margin6, margin7)``:
    ``p >= log2(2 (2K + 2 max|G| + 3) / m)``.

    References
    ----------
    Chapter :ref:`ch-finite-precision` (its estimate for Part I).
    """
    _check_approx(approx)
    Q = approx.X @ approx.W_Q
    K = approx.X @ approx.W_K
    cond = float((np.abs(Q) @ np.abs(K).T).max())
    gmax = float(np.abs(Q @ K.T).max())
    m = min(approx.report.margin6, approx.report.margin7)
    return math.log2(2 * (2 * cond + 2 * gmax + 3) / m)


def _draw_int_heads(rng, d, max_heads, max_s, bound, zero_key):
    h = int(rng.integers(1, max_heads + 1))
    heads = []
    for _ in range(h):
        s = int(rng.integers(1, max_s + 1))
        W = [rng.integers(-bound, bound + 1, size=shape).astype(np.float64)
             for shape in ((s, d), (s, d), (s, d), (d, s))]
        if zero_key:
            W[1] = np.zeros((s, d))
        heads.append(AttentionHead(*W))
    return heads


def _check_draws(rng, trials, d, max_heads, max_s, bound):
    """The arguments of the random integer heads, checked as :func:`sattn.check_hardmax_counterexample` does."""
    return (check_rng("rng", rng), *validate_draw_sizes(trials, d, max_heads, max_s, bound))


def hardmax_precision(rng, fmt, *, trials: int = 200, d: int = 2, max_heads: int = 4,
                      max_s: int = 3, bound: int = 5, mode: str = "forward") -> PrecisionReport:
    """The hardmax counter-example in a format, over random integer heads.

    For each trial, draws heads as :func:`sattn.check_hardmax_counterexample` does
    (integer weights in ``[-bound, bound]``, every fifth trial with ``W_K = 0``) and computes
    hardmax attention on both sequences of :func:`sattn.hardmax_counterexample` in the
    format ("forward"; "weights" only rounds the integers, which every format holds exactly up to
    ``2**p``, and computes in float64 with the fixed-order arithmetic of
    :func:`sattn.column_attention_in`). The impossibility survives when every head returns the same output at both shared
    tokens; rounding can break it by merging scores into ties in one sequence only. The report's
    ``value`` is the fraction of heads for which it survives; ``margin`` is the softmax gap of the
    fixed head ``W_Q = 0.3 e_1`` (softmax still separates the pair) computed in the format.
    ``trials``, ``d``, ``max_heads``, ``max_s`` and ``bound`` have the caps of
    :func:`sattn.check_hardmax_counterexample` (a larger value is a
    :class:`sattn.SizeTooLargeError`).

    References
    ----------
    Theorem 1 of Kajitsuka & Sato (2024); Chapter :ref:`ch-finite-precision`.
    """
    f = float_format(fmt)
    _check_mode(mode)
    rng, trials, d, max_heads, max_s, bound = _check_draws(rng, trials, d, max_heads, max_s, bound)
    X1, X2 = (X.astype(np.float64) for X in hardmax_counterexample(d))
    survive = 0
    for t in range(trials):
        heads = _draw_int_heads(rng, d, max_heads, max_s, bound, t % 5 == 4)
        if mode == "weights":
            # rounded weights, then float64 arithmetic in a fixed order (the equality test below
            # compares outputs bit for bit, so their arithmetic must be defined)
            heads = [round_head(h, f) for h in heads]
            Y1, Y2 = column_attention_in(round_to(np.stack([X1, X2]), f), heads, "float64",
                                         kind="hardmax")
        else:
            Y1, Y2 = column_attention_in(np.stack([X1, X2]), heads, f, kind="hardmax")
        survive += bool(np.array_equal(Y1[:, [0, 3]], Y2[:, [0, 3]]))
    e = np.zeros((1, d))
    e[0, 0] = 1.0
    head = AttentionHead(W_Q=0.3 * e, W_K=e, W_V=e, W_O=e.T)
    if mode == "weights":
        h = round_head(head, f)
        S1, S2 = (column_attention_in(round_to(X, f), [h], "float64") for X in (X1, X2))
    else:
        S1, S2 = (column_attention_in(X, [head], f) for X in (X1, X2))
    gap = float(np.linalg.norm(S1[:, 0] - S2[:, 0]))
    frac = survive / trials
    return PrecisionReport("hardmax counter-example", f.name, mode, ok=frac == 1.0 and gap > 0,
                           margin=gap, value=frac,
                           criterion=(f"hardmax equal at the shared tokens for {survive}/{trials} heads; "
                                      "margin: softmax gap at x(1)"))


def hardmax_bits_needed(rng, *, trials: int = 200, d: int = 2, max_heads: int = 4, max_s: int = 3,
                        bound: int = 5) -> float:
    """The book's estimate of the bits the hardmax counter-example needs.

    Rounding is monotone, so the arg-max of a query can only change by a *new tie*: two distinct
    scores ``s != s'`` of one column rounding to the same value, which needs
    ``|s - s'| / |s| < 2 u``. With ``rho`` the smallest relative gap between distinct scores of a
    column (over the drawn heads, both sequences), ties cannot appear once
    ``p >= log2(2 / rho)``; and all integer intermediates (scores, outputs) are exact once
    ``2**p`` exceeds the largest of them. The estimate is the smaller of the two.

    References
    ----------
    Chapter :ref:`ch-finite-precision`.
    """
    rng, trials, d, max_heads, max_s, bound = _check_draws(rng, trials, d, max_heads, max_s, bound)
    X1, X2 = (X.astype(np.float64) for X in hardmax_counterexample(d))
    rho, big = math.inf, 1.0
    for t in range(trials):
        for h in _draw_int_heads(rng, d, max_heads, max_s, bound, t % 5 == 4):
            for X in (X1, X2):
                S = (h.W_K @ X).T @ (h.W_Q @ X)
                out = h.W_O @ (h.W_V @ X)
                big = max(big, float(np.abs(S).max()), float(np.abs(out).max()) * X.shape[1])
                for k in range(S.shape[1]):
                    col = np.unique(S[:, k])
                    if col.size > 1:
                        rel = np.diff(col) / np.maximum(np.abs(col[1:]), np.abs(col[:-1]))
                        rho = min(rho, float(rel.min()))
    return min(math.log2(2 / rho), math.log2(big + 1))


def _check_cm(cm):
    if not isinstance(cm, RankOneContextualMapping):
        raise TypeError("cm must be a RankOneContextualMapping (from sattn.rank_one_contextual_mapping), "
                        f"got {type(cm).__name__}")
    return cm


def contextual_precision(cm: RankOneContextualMapping, Xs, fmt, *, mode: str = "forward") -> PrecisionReport:
    """The rank-1 contextual mapping in a format: are all context ids still distinct?

    The outputs are computed in the format and checked as
    :func:`sattn.contextual_mapping_report` does (vectorized); the criterion is that every pair of
    output columns that a contextual mapping must separate is still separated (distance > 0),
    so that a token-wise layer can still read the context. ``margin`` is the smallest such
    distance; ``value`` is its ratio to the float64 one (1 = untouched).

    References
    ----------
    Definition 2 and Theorem 2 of Kajitsuka & Sato (2024); Chapter :ref:`ch-finite-precision`.
    """
    _check_mode(mode)
    f = float_format(fmt)
    _check_cm(cm)
    Xs = _sequences("Xs", Xs, cm)
    outs = _outputs(cm, Xs, f, mode)
    dist = _min_separation(Xs, outs)
    ref = _min_separation(Xs, [cm(X) for X in Xs])
    return PrecisionReport("rank-1 contextual mapping", f.name, mode, ok=dist > 0, margin=dist,
                           value=dist / ref,
                           criterion="every pair to separate stays apart; margin: smallest distance")


def contextual_bits_needed(cm: RankOneContextualMapping, Xs) -> float:
    """The book's estimate of the bits the rank-1 contextual mapping needs.

    Output column ``k`` is ``x_k + scale v g_k``: two ids of the same token differ by
    ``delta = scale |v| |g_k(X) - g_k(X')|``, but the skip connection's addition rounds them to
    the grid of spacing about ``2 u |x_k|``, and ``g_k`` itself carries an error of about
    ``u (2 lam max a^2 + 3) max|a|`` through the softmax. The ids stay distinct while twice the
    rounding error is below ``delta``: ``p >= log2(2 (r + scale |v| (2 lam a_max^2 + 3) a_max) / delta)``
    with ``delta`` the measured float64 separation (:meth:`~sattn.RankOneContextualMapping.verify`).

    References
    ----------
    Theorem 2 of Kajitsuka & Sato (2024) (book's version); Chapter :ref:`ch-finite-precision`.
    """
    _check_cm(cm)
    Xs = _sequences("Xs", Xs, cm)
    rep = cm.verify(Xs)
    amax = max(float(np.abs(cm.v @ X).max()) for X in Xs)
    r = max(float(np.abs(X).max()) for X in Xs)
    err = r + cm.scale * float(np.linalg.norm(cm.v)) * (2 * cm.lam * amax**2 + 3) * amax
    delta = rep.min_distance_same_token
    return math.log2(2 * err / delta)


def memorization_precision(model: OneLayerTransformer, Xs, Ys, fmt, *, mode: str = "forward",
                           tol: float = 0.5) -> PrecisionReport:
    """One-layer memorization in a format: is every output still within ``tol`` of its label?

    With integer class labels, ``tol = 1/2`` means that rounding the output recovers every
    label. ``margin = tol - max_error``; ``value`` is the largest error (``inf`` on overflow).

    References
    ----------
    Theorems 3-4 of Kajitsuka & Sato (2024) (book's versions); Chapter :ref:`ch-finite-precision`.
    """
    _check_mode(mode)
    f = float_format(fmt)
    validate_model(model, (OneLayerTransformer,))
    Xs = _sequences("Xs", Xs, model)
    Ys = as_sequences("Ys", Ys, d=Xs[0].shape[0], n=Xs[0].shape[1])
    if len(Ys) != len(Xs):
        raise ValueError(f"Ys must hold one label matrix per sequence: {len(Xs)} sequences, "
                         f"{len(Ys)} label matrices")
    tol = check_real("tol", tol, low=0.0, low_open=True)
    outs = _outputs(model, Xs, f, mode)
    err = max(float(np.abs(o - np.asarray(Y, dtype=np.float64)).max()) if np.isfinite(o).all() else math.inf
              for o, Y in zip(outs, Ys))
    name = "memorization (positions)" if model.E is not None else "memorization"
    return PrecisionReport(name, f.name, mode, ok=err < tol, margin=tol - err, value=err,
                           criterion=f"max |F(X) - Y| < {tol:g}; margin {tol:g} - max error")


def memorization_bits_needed(model, Xs, *, tol: float = 0.5) -> float:
    """The book's estimate of the bits a memorizing layer (or a T_2 model's FFN2) needs.

    The FFN maps an id ``h`` to ``h + W2 relu(W1 h + b1) + b2``; its output can only be trusted to
    ``u C`` with ``C = max_h (S |u|.|h| + sum_m |W2[:, m]| relu_m)``: the first term is the id's own
    rounding error amplified by the largest slope ``S`` (the ids' spacing ``min_gap`` appears
    through ``S ~ label step / min_gap``), the second the cancellation inside the sum of ReLUs.
    The labels survive while ``u C < tol``: ``p >= log2(C / tol)``, with ``C`` evaluated on the
    float64 ids of the training inputs.

    Parameters
    ----------
    model : OneLayerTransformer or TwoLayerModel
    Xs : list of (d, n) arrays
    tol : float

    References
    ----------
    Theorem 3 of Kajitsuka & Sato (2024) (book's version); Chapter :ref:`ch-finite-precision`.
    """
    validate_model(model, (OneLayerTransformer, TwoLayerModel))
    Xs = _sequences("Xs", Xs, model)
    tol = check_real("tol", tol, low=0.0, low_open=True)
    if isinstance(model, OneLayerTransformer):
        ffn, head = model.ffn, model.attention.head
        Hs = [multihead_attention(X if model.E is None else X + model.E, [head]) for X in Xs]
    else:
        ffn = model.ffn2
        Hs = [multihead_attention(_ffn64(X, model.ffn1), [model.head]) for X in Xs]
    W1, b1, W2 = (np.asarray(w, dtype=np.float64) for w in (ffn.W1, ffn.b1, ffn.W2))
    u = W1[0]
    S = float(np.abs(np.cumsum(W2.T, axis=0)).max())  # the slopes of the pieces (W2 holds their jumps)
    C = 0.0
    for H in Hs:
        hid = np.maximum(W1 @ H + b1[:, None], 0.0)
        C = max(C, float((S * (np.abs(u) @ np.abs(H)) + np.abs(W2) @ hid).max()))
    return math.log2(max(C, 1.0) / tol)


def _ffn64(X, ffn):
    return X + ffn.W2 @ np.maximum(ffn.W1 @ X + ffn.b1[:, None], 0.0) + ffn.b2[:, None]


def approximation_precision(model: TwoLayerModel, f, U, fmt, *, mode: str = "forward",
                            reference: float | None = None, slack: float = 1.25,
                            p: float = 2.0) -> PrecisionReport:
    """The universal-approximation model in a format: does its ``d_p`` error stay in budget?

    ``d_p(f, g)`` is estimated on the points ``U`` (B, 1, n) with the network evaluated in the
    format; the criterion is ``d_p(f, g_fmt) <= slack * d_p(f, g_64)`` (with ``slack = 1.25``:
    finite precision costs at most a quarter of the float64 accuracy). ``margin`` is
    ``slack * d_64 - d_fmt``; ``value`` is ``d_fmt``.

    References
    ----------
    Proposition 1 of Kajitsuka & Sato (2024) (book's construction); Chapter
    :ref:`ch-finite-precision`.
    """
    _check_mode(mode)
    fm = float_format(fmt)
    validate_model(model, (TwoLayerModel,))
    check_callable("f", f)
    U = as_float_array("U", U, ndim=3)
    d = model_width(model)
    if U.shape[0] == 0 or U.shape[1] != d or U.shape[2] == 0:
        raise ValueError(f"U must be a non-empty batch of points of shape (B, {d}, n) (d = the model's width), "
                         f"got shape {U.shape}")
    if reference is not None:
        reference = check_real("reference", reference, low=0.0)
    slack = check_real("slack", slack, low=0.0, low_open=True)
    p = check_real("p", p, low=1.0)
    fU = as_float_array("f(U)", f(U))
    if fU.shape != U.shape:
        raise ValueError(f"f must map the points U of shape {U.shape} to values of the same shape, "
                         f"got shape {fU.shape}")

    def dp(G):
        if not np.isfinite(G).all():
            return math.inf
        return float(np.mean(np.sum(np.abs(G - fU) ** p, axis=(1, 2))) ** (1 / p))

    d64 = dp(model.batch(U)) if reference is None else float(reference)
    G = np.stack(_outputs(model, list(U), fm, mode))
    dfmt = dp(G)
    return PrecisionReport("universal approximation", fm.name, mode, ok=dfmt <= slack * d64,
                           margin=slack * d64 - dfmt, value=dfmt,
                           criterion=f"d_{p:g}(f, g) <= {slack:g} x its float64 value {d64:.3g}")


def _holds(check, fmt) -> bool:
    """``check(fmt)``: a :class:`PrecisionReport` (its ``ok``) or a bool; anything else is a
    TypeError (a string or None is not a verdict)."""
    res = check(fmt)
    ok = res.ok if isinstance(res, PrecisionReport) else res
    if not isinstance(ok, (bool, np.bool_)):
        raise TypeError(f"check({fmt!r}) must return a PrecisionReport or a bool, got {res!r} "
                        f"({type(res).__name__})")
    return bool(ok)


def smallest_bits(check, *, low: int = 2, high: int = 53) -> int | None:
    """The measured threshold: the smallest ``p`` such that ``check(p)`` holds for all ``p..high``.

    ``check(p)`` returns a :class:`PrecisionReport` (or a bool) for the p-bit format. Scans
    downwards from ``high`` and stops at the first failure, so a lucky isolated pass below a
    failure is not counted. Returns ``None`` if it fails at ``high``.

    Raises
    ------
    TypeError
        If ``check`` is not callable or returns neither a :class:`PrecisionReport` nor a bool.
    ValueError
        If ``low`` or ``high`` is not in ``[2, 53]`` or ``low > high``.

    References
    ----------
    Chapter :ref:`ch-finite-precision`.
    """
    check_callable("check", check)
    low = check_int("low", low, low=2, high=53)
    high = check_int("high", high, low=2, high=53)
    if low > high:
        raise ValueError(f"low must be at most high, got low = {low} > high = {high}")
    best = None
    for bits in range(high, low - 1, -1):
        if not _holds(check, bits):
            break
        best = bits
    return best


def smallest_format(check) -> str | None:
    """The format with the fewest significand bits among :data:`~sattn.precision.formats.FORMATS` for which ``check`` holds.

    ``check(name)`` returns a :class:`PrecisionReport` or a bool. bfloat16 (8 bits) counts as
    smaller than float16 (11 bits), although its range is wider; ``None`` if none holds.

    Raises
    ------
    TypeError
        If ``check`` is not callable or returns neither a :class:`PrecisionReport` nor a bool.

    References
    ----------
    Chapter :ref:`ch-finite-precision`.
    """
    check_callable("check", check)
    best = None
    for name in FORMATS:
        ok = _holds(check, name)
        if ok and (best is None or float_format(name).bits < float_format(best).bits):
            best = name
    return best

"""The book's forward passes computed in a number format, and models rounded to a format.

Part I's attention matrix (row convention) and Part II's heads, feed-forward layers and models
(column convention), with every operation of the format (:class:`~sattn.FormatArithmetic`):
mode (b), "forward". :func:`round_model` gives mode (a), "weights": the model's weights rounded,
its arithmetic in float64.

References
----------
Chapter :ref:`ch-finite-precision`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._validate import as_float_array, check_bool
from ..attention import validate_weights
from ..layers import AttentionHead, FeedForward, validate_ffn, validate_heads, hardmax
from ..universality.memorize import OneLayerTransformer
from ..universality.rank_one import RankOneContextualMapping
from ..universality.universal import TwoLayerModel
from .formats import FormatArithmetic, float_format, round_to

__flat__ = [
    "FormatOverflow", "attention_matrix_in", "column_attention_in", "feed_forward_in", "model_in",
    "round_model",
]
# Module-only: what the thresholds (:mod:`.thresholds`) build on.
__all__ = [*__flat__, "model_in_unchecked", "model_width", "round_head", "softmax_extremes_in",
           "validate_model"]


def _as_columns(name, value, d=None):
    """A sequence ``(d, n)`` or a batch ``(B, d, n)`` of finite reals, non-empty."""
    a = as_float_array(name, value)
    if a.ndim not in (2, 3):
        raise ValueError(f"{name} must be a (d, n) sequence or a (B, d, n) batch, got shape {a.shape} "
                         f"(ndim={a.ndim})")
    if 0 in a.shape:
        raise ValueError(f"{name} must be non-empty, got shape {a.shape}")
    if d is not None and a.shape[-2] != d:
        raise ValueError(f"{name} must have d = {d} rows (the model's width), got shape {a.shape}")
    return a


def model_width(model) -> int:
    """The width of a model's first layer (the columns of ``W_Q``, or of the first FFN's ``W1``)."""
    if isinstance(model, RankOneContextualMapping):
        return np.shape(model.head.W_Q)[1]
    if isinstance(model, OneLayerTransformer):
        return np.shape(model.attention.head.W_Q)[1]
    return np.shape(model.ffn1.W1)[1]


def validate_model(model, types=(RankOneContextualMapping, OneLayerTransformer, TwoLayerModel)):
    """``model``, if it is an instance of one of ``types`` (TypeError naming them otherwise)."""
    if not isinstance(model, types):
        names = " or ".join(t.__name__ for t in types)
        raise TypeError(f"model must be a {names}, got {type(model).__name__}")
    return model


def attention_matrix_in(X, W_Q, W_K, fmt, *, causal: bool = False) -> np.ndarray:
    """``SAM(X)`` (row convention, Part I) computed in the format: logits, softmax, all rounded.

    ``Q = X W_Q``, ``K = X W_K`` and ``G = Q K^T`` are matrix products of the format; the softmax
    subtracts the row maximum, exponentiates, sums and divides, each step rounded. With
    ``causal`` the entries above the diagonal are masked before the softmax (exactly 0).

    Parameters
    ----------
    X : array_like, shape (L, d_hid)
    W_Q, W_K : array_like, shape (d_hid, d)
    fmt : str, int or FloatFormat
    causal : bool, default False

    Returns
    -------
    numpy.ndarray, shape (L, L)
        The attention matrix, every entry a value of the format.

    References
    ----------
    Eqs. (1)-(2) of Likhosherstov et al. (2021); Chapter :ref:`ch-finite-precision`.
    """
    X, W_Q, W_K = validate_weights(X, W_Q, W_K)
    causal = check_bool("causal", causal)
    ar = FormatArithmetic(fmt)
    X, W_Q, W_K = ar.r(X), ar.r(W_Q), ar.r(W_K)
    G = ar.matmul(ar.matmul(X, W_Q), ar.matmul(X, W_K).T)
    if causal:
        G = np.where(np.tri(G.shape[0], dtype=bool), G, -np.inf)
    return ar.softmax(G, axis=1)


def softmax_extremes_in(G, cols, fmt) -> tuple:
    """The rows of a softmax in the format, each reduced to its extremes on and off a support.

    ``M = softmax(G)`` row by row with the format's operations (``FormatArithmetic.softmax``,
    as in :func:`attention_matrix_in`: maximum subtracted, exp, a sum in index order, divide),
    then per row the smallest and largest weight on the columns ``cols[i]`` and the largest
    weight off them. Rows are independent, so a caller can pass the logits of any block of rows
    and never hold an ``L x L`` array.

    Parameters
    ----------
    G : array_like, shape (n, L)
        Logits, values of the format (``-inf`` for a masked entry).
    cols : array_like of int, shape (n, k)
        The support of each row.
    fmt : str, int or FloatFormat

    Returns
    -------
    tuple of numpy.ndarray, each of shape (n,)
        ``(on_min, on_max, off_max)``; ``off_max`` is 0 where the support is the whole row.

    References
    ----------
    Criteria (6)-(7) (:func:`sattn.patterns.criteria.extremes_meet_criteria` decides them from
    these); Chapters :ref:`ch-finite-precision` and :ref:`ch-width-bits`.
    """
    G = as_float_array("G", G, finite=False)
    cols = np.asarray(cols)
    if G.ndim != 2 or cols.ndim != 2 or cols.shape[0] != G.shape[0]:
        raise ValueError(f"G must have shape (n, L) and cols (n, k), got {G.shape} and {cols.shape}")
    if not np.issubdtype(cols.dtype, np.integer) or (cols < 0).any() or (cols >= G.shape[1]).any():
        raise ValueError(f"cols must hold column indices in [0, {G.shape[1]}), got {cols.dtype} values")
    M = FormatArithmetic(fmt).softmax(G, axis=1)
    on = np.take_along_axis(M, cols, axis=1)
    np.put_along_axis(M, cols, -np.inf, axis=1)
    off = np.maximum(M.max(axis=1), 0.0)
    return on.min(axis=1), on.max(axis=1), off


def column_attention_in(Z, heads, fmt, *, kind: str = "softmax") -> np.ndarray:
    """Multi-head attention with skip connection (column convention, Part II) in the format.

    ``Z + sum_h W_O W_V Z P_h`` with ``P_h`` the column softmax (or hardmax) of
    ``(W_K Z)^T (W_Q Z)``; every product, the softmax and every sum rounded. The hardmax takes
    the arg-max set of the *rounded* scores (rounding can create ties) and splits the weight
    ``1/|M|`` (rounded) equally.

    Parameters
    ----------
    Z : array_like, shape (d, n) or (B, d, n)
        One sequence, or a batch of sequences (evaluated independently).
    heads : list of AttentionHead
    fmt : str, int or FloatFormat
    kind : {"softmax", "hardmax"}

    Returns
    -------
    numpy.ndarray, shape of ``Z``

    References
    ----------
    Eq. (2) of Kajitsuka & Sato (2024); Chapter :ref:`ch-finite-precision`.
    """
    if not isinstance(kind, str) or kind not in ("softmax", "hardmax"):
        raise ValueError(f"kind must be 'softmax' or 'hardmax', got {kind!r}")
    ar = FormatArithmetic(fmt)
    Z = _as_columns("Z", Z)
    return _attention_cols(Z, validate_heads(heads, Z.shape[-2], exact=False), ar, kind)


def _head_weights(h: AttentionHead) -> list:
    return [(h.W_Q, h.W_K, h.W_V, h.W_O)]


def _attention_cols(Z, heads, ar, kind):
    """:func:`column_attention_in` on checked arguments (``heads``: ``(W_Q, W_K, W_V, W_O)`` tuples);
    ``Z`` may hold infinities from an earlier layer's overflow."""
    Z = ar.r(Z)
    out = Z
    for h in heads:
        W_Q, W_K, W_V, W_O = (ar.r(np.asarray(w, dtype=np.float64)) for w in h)
        S = ar.matmul(np.swapaxes(ar.matmul(W_K, Z), -1, -2), ar.matmul(W_Q, Z))  # S[.., l, k]: key l, query k
        if kind == "softmax":
            P = ar.softmax(S, axis=-2)
        elif S.ndim == 2:
            P = ar.r(hardmax(S))
        else:
            P = ar.r(np.stack([hardmax(Sb) for Sb in S]))
        out = ar.add(out, ar.matmul(ar.matmul(W_O, ar.matmul(W_V, Z)), P))
    return out


def feed_forward_in(H, ffn: FeedForward, fmt) -> np.ndarray:
    """``H + W2 relu(W1 H + b1) + b2`` in the format (products, bias adds, skip, all rounded).

    Parameters
    ----------
    H : array_like, shape (d, n) or (B, d, n)
        Finite reals.
    ffn : FeedForward or (W1, b1, W2, b2)
        Shapes as in :func:`sattn.feed_forward`.
    fmt : str, int or FloatFormat

    References
    ----------
    Eq. (3) of Kajitsuka & Sato (2024); Chapter :ref:`ch-finite-precision`.
    """
    ar = FormatArithmetic(fmt)
    H = _as_columns("H", H)
    if isinstance(ffn, FeedForward) and np.ndim(ffn.W1) == 2 and np.shape(ffn.W1)[1] != H.shape[-2]:
        raise ValueError(f"H must have d = ffn.W1.shape[1] = {np.shape(ffn.W1)[1]} rows (the layer's width), "
                         f"got shape {H.shape}")
    return _ffn_cols(H, validate_ffn(ffn, H.shape[-2]), ar)


def _ffn_weights(f: FeedForward) -> tuple:
    return (f.W1, f.b1, f.W2, f.b2)


def _ffn_cols(H, weights, ar):
    """:func:`feed_forward_in` on checked arguments; ``H`` may hold infinities."""
    H = ar.r(H)
    W1, b1, W2, b2 = (ar.r(np.asarray(w, dtype=np.float64)) for w in weights)
    hid = ar.relu(ar.add(ar.matmul(W1, H), b1[:, None]))
    return ar.add(ar.add(H, ar.matmul(W2, hid)), b2[:, None])


def model_in(model, X, fmt) -> np.ndarray:
    """Evaluate a Part II model on a sequence with its whole forward pass in the format.

    Parameters
    ----------
    model : RankOneContextualMapping, OneLayerTransformer or TwoLayerModel
    X : array_like, shape (d, n) or (B, d, n)
        Finite reals, ``d`` the model's width (and ``n`` that of its positional encoding, if any).
    fmt : str, int or FloatFormat

    Raises
    ------
    TypeError
        If ``model`` is none of the three, or ``X`` or ``fmt`` has a wrong type.
    ValueError
        If ``X`` has a wrong shape or a non-finite entry, or ``fmt`` is unknown.

    References
    ----------
    Chapter :ref:`ch-finite-precision`.
    """
    validate_model(model)
    float_format(fmt)
    X = _as_columns("X", X, model_width(model))
    if isinstance(model, OneLayerTransformer) and model.E is not None and X.shape[-1] != np.shape(model.E)[1]:
        raise ValueError(f"X must have n = {np.shape(model.E)[1]} columns (the positional encoding's), "
                         f"got shape {X.shape}")
    return model_in_unchecked(model, X, fmt)


def model_in_unchecked(model, X, fmt):
    """:func:`model_in` on checked arguments; ``X`` may hold infinities (inputs rounded in mode (a))."""
    ar = FormatArithmetic(fmt)
    if isinstance(model, RankOneContextualMapping):
        return _attention_cols(X, _head_weights(model.head), ar, "softmax")
    if isinstance(model, OneLayerTransformer):
        H = ar.r(X) if model.E is None else ar.add(ar.r(X), ar.r(model.E))
        return _ffn_cols(_attention_cols(H, _head_weights(model.attention.head), ar, "softmax"),
                         _ffn_weights(model.ffn), ar)
    H = _ffn_cols(X, _ffn_weights(model.ffn1), ar)
    return _ffn_cols(_attention_cols(H, _head_weights(model.head), ar, "softmax"), _ffn_weights(model.ffn2), ar)


class FormatOverflow(ValueError):
    """A weight of a model does not fit in a number format: rounding it gives an infinity."""


def _rounded(layer, names, fmt):
    out = []
    for nm in names:
        w = np.asarray(getattr(layer, nm), dtype=np.float64)
        r = round_to(w, fmt)
        if not np.isfinite(r).all():
            f = float_format(fmt)
            raise FormatOverflow(f"{type(layer).__name__}.{nm} overflows {f.name}: its largest "
                                 f"|entry| {np.abs(w).max():.4g} exceeds the format's maximum {f.max:.4g}")
        out.append(r)
    return out


def round_head(h: AttentionHead, fmt) -> AttentionHead:
    """The attention head ``h`` with its four weight matrices rounded to the format ``fmt``."""
    return AttentionHead(*_rounded(h, ("W_Q", "W_K", "W_V", "W_O"), fmt))


def _round_ffn(f: FeedForward, fmt) -> FeedForward:
    return FeedForward(*_rounded(f, ("W1", "b1", "W2", "b2"), fmt))


def round_model(model, fmt):
    """A copy of a Part II model with every weight (and the positional encoding) rounded.

    Evaluating the copy with its own ``__call__`` (float64 arithmetic) on a rounded input is
    mode (a), "weights".

    Raises
    ------
    FormatOverflow
        If a weight does not fit in the format (it would round to an infinity, e.g. a feed-forward
        slope above 65504 in float16). The precision checks treat such a model as one whose every
        output is lost.

    References
    ----------
    Chapter :ref:`ch-finite-precision`.
    """
    validate_model(model)
    fmt = float_format(fmt)
    if isinstance(model, RankOneContextualMapping):
        return dataclasses.replace(model, head=round_head(model.head, fmt))
    if isinstance(model, OneLayerTransformer):
        att = dataclasses.replace(model.attention, head=round_head(model.attention.head, fmt))
        E = None if model.E is None else round_to(model.E, fmt)
        return OneLayerTransformer(attention=att, ffn=_round_ffn(model.ffn, fmt), E=E)
    return TwoLayerModel(ffn1=_round_ffn(model.ffn1, fmt), head=round_head(model.head, fmt),
                         ffn2=_round_ffn(model.ffn2, fmt), K=model.K)

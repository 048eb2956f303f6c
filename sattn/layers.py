"""Attention and Transformer layers in the column convention of Kajitsuka & Sato (Part II).

A sequence is a matrix ``Z`` of shape ``(d, n)`` whose *column* ``k`` is token ``k``. Softmax and
hardmax act column by column: column ``k`` of the attention matrix holds the weights that query
``k`` puts on the keys. Multi-head attention (softmax, or hardmax in exact rational arithmetic),
the token-wise feed-forward layer and one Transformer block, each with its skip connection.
The row convention of Part I is in :mod:`sattn.attention`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ._validate import check_bool, as_matrix, as_vector

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = [
    "AttentionHead", "FeedForward", "column_softmax", "hardmax", "multihead_attention",
    "feed_forward", "transformer_block",
]
# The module's public names: the flat ones, then those that stay in this module.
__all__ = [*__flat__, "validate_heads", "validate_ffn"]

_KINDS = ("softmax", "hardmax")


@dataclass(frozen=True)
class AttentionHead:
    """The four weight matrices of one attention head (column convention).

    Attributes
    ----------
    W_Q, W_K, W_V : numpy.ndarray, shape (s, d)
        Query, key and value weights; ``s`` is the head size.
    W_O : numpy.ndarray, shape (d, s)
        Output weights.

    References
    ----------
    Eq. (2) of Kajitsuka & Sato (2024); :ref:`ch-contextual-mappings`.
    """

    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray

    def __post_init__(self):
        for nm in ("W_Q", "W_K", "W_V", "W_O"):  # validated, stored as given (exact heads keep Fractions)
            W = getattr(self, nm)
            try:
                exact = np.asarray(W).dtype == object
            except Exception:  # ragged: as_matrix names the argument
                exact = False
            _to_fraction_matrix(nm, W) if exact else as_matrix(nm, W)


@dataclass(frozen=True)
class FeedForward:
    """Weights of the token-wise feed-forward layer ``H + W2 relu(W1 H + b1) + b2``.

    Attributes
    ----------
    W1 : numpy.ndarray, shape (q, d)
    b1 : numpy.ndarray, shape (q,)
    W2 : numpy.ndarray, shape (d, q)
    b2 : numpy.ndarray, shape (d,)

    References
    ----------
    Eq. (3) of Kajitsuka & Sato (2024); :ref:`ch-memorization`.
    """

    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray

    def __post_init__(self):  # validated, stored as given
        as_vector("b1", self.b1, size=as_matrix("W1", self.W1).shape[0])
        as_vector("b2", self.b2, size=as_matrix("W2", self.W2).shape[0])

    @property
    def width(self) -> int:
        """The hidden width ``q``."""
        return int(np.shape(self.W1)[0])


def column_softmax(A) -> np.ndarray:
    """Softmax of every column of ``A`` (stable: the column maximum is subtracted first).

    Parameters
    ----------
    A : array_like, shape (n, m)
        Logits; column ``k`` is normalised over its ``n`` entries.

    Returns
    -------
    numpy.ndarray, shape (n, m)
        Every column is a probability vector. Entries whose logit lies more than about 745 below
        the column maximum underflow to exactly 0 (:ref:`ch-boltzmann`).

    Raises
    ------
    ValueError, TypeError
        If ``A`` is not a non-empty, finite, real 2-D array.

    References
    ----------
    sigma_S of Section 2.1 of Kajitsuka & Sato (2024).
    """
    A = as_matrix("A", A)
    with np.errstate(under="ignore"):
        E = np.exp(A - A.max(axis=0, keepdims=True))
    return E / E.sum(axis=0, keepdims=True)


def _is_exact(A) -> bool:
    return isinstance(A, np.ndarray) and A.dtype == object


def _to_fraction_matrix(name, value):
    """An object array of Fractions (exact), from ints, Fractions or floats (converted exactly)."""
    a = np.array(value, dtype=object)
    if a.ndim != 2 or 0 in a.shape:
        raise ValueError(f"{name} must be a non-empty 2-D array, got shape {a.shape}")
    out = np.empty(a.shape, dtype=object)
    for idx, x in np.ndenumerate(a):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer, float, np.floating, Fraction)):
            raise TypeError(f"{name}{list(idx)} = {x!r} is not an int, float or Fraction")
        if isinstance(x, (float, np.floating)) and not np.isfinite(x):
            raise ValueError(f"{name}{list(idx)} = {x} is not finite")
        out[idx] = Fraction(x) if not isinstance(x, Fraction) else x
    return out


def hardmax(A) -> np.ndarray:
    """Column-wise hardmax: the maxima of each column share a total weight of one equally.

    Parameters
    ----------
    A : array_like, shape (n, m)
        Scores. An ``object`` array of :class:`fractions.Fraction` is handled exactly (ties are
        then detected exactly); anything else is converted to float64.

    Returns
    -------
    numpy.ndarray, shape (n, m)
        ``1/|M_k|`` on the arg-max set ``M_k`` of column ``k`` and 0 elsewhere (Fractions in the
        exact case).

    Notes
    -----
    The equal split of ties is the only tie rule that keeps attention permutation-equivariant;
    in floating point, near-ties are NOT merged (use exact arithmetic when ties matter).

    Raises
    ------
    ValueError, TypeError
        If ``A`` is not a non-empty, finite 2-D array of real numbers (in the exact case:
        of ints, floats or Fractions).

    References
    ----------
    sigma_H of Section 2.1 of Kajitsuka & Sato (2024); :ref:`ch-hardmax`.
    """
    if _is_exact(A):
        A = _to_fraction_matrix("A", A)
        out = np.empty(A.shape, dtype=object)
        for k in range(A.shape[1]):
            col = list(A[:, k])
            top = max(col)
            winners = [l for l, x in enumerate(col) if x == top]
            for l in range(A.shape[0]):
                out[l, k] = Fraction(1, len(winners)) if l in winners else Fraction(0)
        return out
    A = as_matrix("A", A)
    M = (A == A.max(axis=0, keepdims=True)).astype(np.float64)
    return M / M.sum(axis=0, keepdims=True)


def _four_matrices(obj, cls, fields, must, got):
    """The four fields of a head or a feed-forward block, given as ``cls`` or as a 4-tuple in the
    order of ``fields``; anything else is a TypeError ``"{must} or a (fields) tuple, got {got}"``."""
    if isinstance(obj, cls):
        return tuple(getattr(obj, f) for f in fields)
    if isinstance(obj, (tuple, list)) and len(obj) == 4:
        return tuple(obj)
    raise TypeError(f"{must} or a ({', '.join(fields)}) tuple, got {got}")


def validate_heads(heads, d: int, exact: bool):
    """``heads`` (a head, a tuple or a list of them) as ``(W_Q, W_K, W_V, W_O)`` tuples of width ``d``."""
    if isinstance(heads, AttentionHead) or (
        isinstance(heads, tuple) and len(heads) == 4
        and all(isinstance(W, np.ndarray) and W.ndim == 2 for W in heads)
    ):
        heads = [heads]
    try:
        heads = list(heads)
    except TypeError:
        raise TypeError(
            f"heads must be a list of AttentionHead (or (W_Q, W_K, W_V, W_O) tuples), got {type(heads).__name__}"
        ) from None
    if not heads:
        raise ValueError("heads must contain at least one head, got an empty list")
    conv = _to_fraction_matrix if exact else (lambda name, v: as_matrix(name, v))
    out = []
    for i, h in enumerate(heads):
        W_Q, W_K, W_V, W_O = _four_matrices(h, AttentionHead, ("W_Q", "W_K", "W_V", "W_O"),
                                            f"heads[{i}] must be an AttentionHead", repr(h))
        W_Q, W_K, W_V, W_O = (conv(f"heads[{i}].{nm}", W) for nm, W in
                              zip(("W_Q", "W_K", "W_V", "W_O"), (W_Q, W_K, W_V, W_O)))
        s = W_Q.shape[0]
        for nm, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V)):
            if W.shape != (s, d):
                raise ValueError(
                    f"heads[{i}].{nm} must have shape (s, d) = ({s}, {d}) (s from W_Q, d = Z.shape[0]), got {W.shape}"
                )
        if W_O.shape != (d, s):
            raise ValueError(f"heads[{i}].W_O must have shape (d, s) = ({d}, {s}), got {W_O.shape}")
        out.append((W_Q, W_K, W_V, W_O))
    return out


def multihead_attention(Z, heads, *, kind: str = "softmax", exact: bool = False,
                        return_weights: bool = False):
    """Multi-head self-attention with skip connection, in the column convention.

    ``F(Z) = Z + sum_i W_O^i W_V^i Z sigma[(W_K^i Z)^T (W_Q^i Z)]``, where ``sigma`` (softmax or
    hardmax) acts column by column, so column ``k`` of the attention matrix holds the weights
    that query ``k`` puts on the keys. No ``1/sqrt(s)`` factor and no layer norm.

    Parameters
    ----------
    Z : array_like, shape (d, n)
        The input sequence, one token per column.
    heads : AttentionHead, (W_Q, W_K, W_V, W_O) tuple, or a list of them
        ``W_Q, W_K, W_V`` have shape ``(s, d)``, ``W_O`` has shape ``(d, s)``; ``s`` may differ
        between heads.
    kind : {"softmax", "hardmax"}, default "softmax"
    exact : bool, default False
        Compute in exact rational arithmetic (:class:`fractions.Fraction`; only with
        ``kind="hardmax"``). Entries of ``Z`` and the weights must then be ints, Fractions or
        floats (converted exactly), and the result is an ``object`` array of Fractions.
    return_weights : bool, default False
        Also return the list of the heads' ``(n, n)`` attention matrices.

    Returns
    -------
    numpy.ndarray, shape (d, n)
        ``F(Z)`` (and the list of attention matrices if ``return_weights``).

    Raises
    ------
    ValueError
        If ``kind`` is unknown, shapes do not match (the message names the head and matrix),
        an entry is not finite, or ``exact`` is requested with softmax.
    TypeError
        If ``heads`` is not a head or a list of heads, or an entry is not a real number.

    References
    ----------
    Eq. (2) (softmax) and Section 3.3 (hardmax) of Kajitsuka & Sato (2024); :ref:`ch-contextual-mappings` and :ref:`ch-hardmax`.
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    for nm, flag in (("exact", exact), ("return_weights", return_weights)):
        check_bool(nm, flag)
    if exact and kind != "hardmax":
        raise ValueError("exact=True needs kind='hardmax' (softmax involves exp, which is not rational)")
    Z = _to_fraction_matrix("Z", Z) if exact else as_matrix("Z", Z)
    d = Z.shape[0]
    out = Z.copy()
    weights = []
    for W_Q, W_K, W_V, W_O in validate_heads(heads, d, exact):
        S = (W_K @ Z).T @ (W_Q @ Z)  # S[l, k]: key l, query k
        if kind == "softmax":
            P = column_softmax(S)
        else:
            P = hardmax(S) if exact else hardmax(np.asarray(S, dtype=np.float64))
        out = out + W_O @ (W_V @ Z) @ P
        weights.append(P)
    return (out, weights) if return_weights else out


def feed_forward(H, ffn) -> np.ndarray:
    """Token-wise feed-forward layer with skip connection, ``H + W2 relu(W1 H + b1) + b2``.

    Parameters
    ----------
    H : array_like, shape (d, n)
    ffn : FeedForward or (W1, b1, W2, b2)
        ``W1`` (q, d), ``b1`` (q,), ``W2`` (d, q), ``b2`` (d,).

    Returns
    -------
    numpy.ndarray, shape (d, n)

    Raises
    ------
    ValueError
        If a shape does not match (the message names the parameter).

    References
    ----------
    Eq. (3) of Kajitsuka & Sato (2024); :ref:`ch-memorization`.
    """
    H = as_matrix("H", H)
    W1, b1, W2, b2 = validate_ffn(ffn, H.shape[0])
    return H + W2 @ np.maximum(W1 @ H + b1[:, None], 0.0) + b2[:, None]


def validate_ffn(ffn, d):
    """``ffn`` (a FeedForward or a tuple) as checked ``(W1, b1, W2, b2)`` for width ``d``."""
    W1, b1, W2, b2 = _four_matrices(ffn, FeedForward, ("W1", "b1", "W2", "b2"),
                                    "ffn must be a FeedForward", type(ffn).__name__)
    W1 = as_matrix("ffn.W1", W1, cols=d)
    q = W1.shape[0]
    b1 = as_vector("ffn.b1", b1, size=q)
    W2 = as_matrix("ffn.W2", W2)
    if W2.shape != (d, q):
        raise ValueError(f"ffn.W2 must have shape (d, q) = ({d}, {q}), got {W2.shape}")
    b2 = as_vector("ffn.b2", b2, size=d)
    return W1, b1, W2, b2


def transformer_block(Z, heads, ffn, *, kind: str = "softmax") -> np.ndarray:
    """One Transformer block ``F_FF(F_SA(Z))``: attention, then the token-wise feed-forward layer.

    Parameters
    ----------
    Z : array_like, shape (d, n)
    heads : see :func:`multihead_attention`
    ffn : FeedForward or (W1, b1, W2, b2)
    kind : {"softmax", "hardmax"}

    Returns
    -------
    numpy.ndarray, shape (d, n)

    Raises
    ------
    ValueError, TypeError
        As :func:`multihead_attention` and :func:`feed_forward`.

    References
    ----------
    Eq. (4) of Kajitsuka & Sato (2024); :ref:`ch-memorization`.
    """
    return feed_forward(multihead_attention(Z, heads, kind=kind), ffn)


# The old names of this module's renamed functions warn and resolve for one release
# (sattn/_deprecation.py); imported last so that no line above moves.
from ._deprecation import module_getattr as _old_names  # noqa: E402

__getattr__ = _old_names(__name__)

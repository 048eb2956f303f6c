"""Self-attention matrices in the row convention of Likhosherstov, Choromanski & Weller.

The hidden state is a matrix ``X`` of shape ``(L, d_hid)`` whose row ``l`` is token ``l``; the
query and key weights ``W_Q`` and ``W_K`` have shape ``(d_hid, d)``. With logits
``G = X W_Q W_K^T X^T``:

* ``usam(X) = exp(G)``                     (unnormalised self-attention matrix, eq. 1),
* ``sam(X)  = diag(usam(X) 1)^{-1} usam(X)`` (self-attention matrix, eq. 2),
* ``self_attention(X) = sam(X) X W_V``      (self-attention, eq. 3).

Each function accepts ``causal=True``: entries above the diagonal are then masked to exactly zero
before normalisation (the causal variant of the first paper).

The softmax is computed with the row maximum subtracted, so that logits of any magnitude neither
overflow nor produce NaN. The 1/sqrt(d) temperature of standard attention is not applied: it can be
absorbed into ``W_Q`` (:prf:ref:`rem-temperature` shows this numerically).
"""

from __future__ import annotations


import numpy as np

from ._validate import as_float_array, as_matrix, check_bool, check_dense_size

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = ["attention_logits", "usam", "sam", "self_attention", "causal_mask", "row_softmax"]
# The module's public names: the flat ones, then those that stay in this module.
__all__ = [*__flat__, "validate_weights"]

#: The largest logit whose exponential is a finite float64 (ln of the largest double).
MAX_EXP_ARG = float(np.log(np.finfo(np.float64).max))


def validate_weights(X, W_Q, W_K):
    """``(X, W_Q, W_K)`` as float64 matrices of matching shapes; a ValueError names a wrong one."""
    X = as_matrix("X", X)
    d_hid = X.shape[1]
    W_Q = as_matrix("W_Q", W_Q)
    W_K = as_matrix("W_K", W_K)
    if W_Q.shape[0] != d_hid:
        raise ValueError(
            f"W_Q must have shape (d_hid, d) with d_hid = X.shape[1] = {d_hid}, got {W_Q.shape}"
        )
    if W_K.shape[0] != d_hid:
        raise ValueError(
            f"W_K must have shape (d_hid, d) with d_hid = X.shape[1] = {d_hid}, got {W_K.shape}"
        )
    if W_Q.shape[1] != W_K.shape[1]:
        raise ValueError(
            "W_Q and W_K must have the same number of columns d (the query/key width), "
            f"got W_Q {W_Q.shape} and W_K {W_K.shape}"
        )
    return X, W_Q, W_K


def causal_mask(L: int) -> np.ndarray:
    """Boolean lower-triangular mask ``T`` with ``T[l, j] = (j <= l)``.

    Parameters
    ----------
    L : int
        Sequence length, ``L >= 1``.

    Returns
    -------
    numpy.ndarray of bool, shape (L, L)

    Raises
    ------
    ValueError
        If ``L`` is not a positive integer.
    SizeTooLargeError
        If ``L > 65536`` (the mask would take more than 4 GiB, ``MAX_BYTES``).

    References
    ----------
    Causal variant of eqs. (1)-(2) in Likhosherstov et al.; :ref:`ch-self-attention`.
    """
    if isinstance(L, bool) or not isinstance(L, (int, np.integer)) or L < 1:
        raise ValueError(f"L must be a positive integer, got {L!r}")
    L = check_dense_size("L", L, bytes_per_unit=1, what="an L x L boolean mask")
    return np.tri(L, dtype=bool)


def attention_logits(X, W_Q, W_K, *, causal: bool = False) -> np.ndarray:
    """The logits ``G = X W_Q W_K^T X^T`` (``-inf`` above the diagonal when ``causal``).

    Parameters
    ----------
    X : array_like, shape (L, d_hid)
        Hidden state, one token per row.
    W_Q, W_K : array_like, shape (d_hid, d)
        Query and key weights.
    causal : bool, default False
        Mask the entries above the diagonal with ``-inf``.

    Returns
    -------
    numpy.ndarray, shape (L, L)
        ``log usam(X)``.

    Raises
    ------
    ValueError
        If a matrix has the wrong rank, mismatched dimensions, or a non-finite entry.

    References
    ----------
    Eq. (1) of Likhosherstov et al. (2021); :ref:`ch-self-attention`.
    """
    X, W_Q, W_K = validate_weights(X, W_Q, W_K)
    check_bool('causal', causal)
    G = (X @ W_Q) @ (X @ W_K).T
    if causal:
        G = np.where(causal_mask(X.shape[0]), G, -np.inf)
    return G


def row_softmax(G) -> np.ndarray:
    """Row-wise softmax of a logit matrix, stable for any finite logits.

    ``-inf`` entries (masked positions) receive exactly zero weight. Every row must contain at
    least one finite entry.

    Parameters
    ----------
    G : array_like, shape (L, m)
        Real logits, non-empty; ``-inf`` marks a masked position.

    Returns
    -------
    numpy.ndarray, shape (L, m)
        Every row is a probability vector.

    Raises
    ------
    TypeError
        If ``G`` is not a real numeric array (strings, complex numbers, objects).
    ValueError
        If ``G`` is not a non-empty 2-D array, contains NaN or ``+inf``, or a row is entirely
        ``-inf``.

    References
    ----------
    Eq. (2) of Likhosherstov et al. (2021); :ref:`ch-self-attention`.
    """
    G = as_float_array("G", G, finite=False)
    if G.ndim != 2:
        raise ValueError(f"G must be a 2-D array of logits, got shape {G.shape}")
    if G.size == 0:
        raise ValueError(f"G must be non-empty, got shape {G.shape}")
    if np.isnan(G).any() or np.isposinf(G).any():
        raise ValueError("G must not contain NaN or +inf (use -inf only to mask positions)")
    row_max = G.max(axis=1, keepdims=True)
    if np.isneginf(row_max).any():
        row = int(np.flatnonzero(np.isneginf(row_max[:, 0]))[0])
        raise ValueError(f"row {row} of G is entirely masked (-inf): softmax is undefined")
    with np.errstate(under="ignore"):  # exp of very negative logits is exactly 0: correct
        E = np.exp(G - row_max)
    return E / E.sum(axis=1, keepdims=True)


def usam(X, W_Q, W_K, *, causal: bool = False, log: bool = False) -> np.ndarray:
    """Unnormalised self-attention matrix ``exp(X W_Q W_K^T X^T)`` (eq. 1).

    Parameters
    ----------
    X : array_like, shape (L, d_hid)
    W_Q, W_K : array_like, shape (d_hid, d)
    causal : bool, default False
        Zero the entries above the diagonal.
    log : bool, default False
        Return ``log usam(X)`` (the logits, ``-inf`` where masked) instead. Use this when logits
        are large: ``exp`` of a logit above about 709.78 is not representable in float64.

    Returns
    -------
    numpy.ndarray, shape (L, L)

    Raises
    ------
    ValueError
        On malformed input.
    OverflowError
        If ``log=False`` and a logit exceeds ``MAX_EXP_ARG`` (the result would be infinite); the
        message suggests ``log=True`` or :func:`sam`. Nothing is returned as ``inf``.

    References
    ----------
    Eq. (1) of Likhosherstov et al. (2021); :ref:`ch-self-attention`.
    """
    G = attention_logits(X, W_Q, W_K, causal=causal)
    check_bool('log', log)
    if log:
        return G
    top = float(np.max(G))
    if top > MAX_EXP_ARG:
        l, j = np.unravel_index(int(np.argmax(G)), G.shape)
        raise OverflowError(
            f"usam: logit G[{l}, {j}] = {top:.6g} exceeds {MAX_EXP_ARG:.2f}, so exp overflows "
            "float64; call usam(..., log=True) for the logits or sam(...) for the normalised matrix"
        )
    return np.exp(G)


def sam(X, W_Q, W_K, *, causal: bool = False) -> np.ndarray:
    """Self-attention matrix: the row-normalised USAM (eq. 2).

    Every row is a probability vector (the matrix is right stochastic). With ``causal=True`` the
    matrix is lower triangular with exactly zero weight above the diagonal.

    Parameters
    ----------
    X : array_like, shape (L, d_hid)
    W_Q, W_K : array_like, shape (d_hid, d)
    causal : bool, default False

    Returns
    -------
    numpy.ndarray, shape (L, L)

    Raises
    ------
    ValueError, TypeError
        If a matrix is not real, has the wrong rank, mismatched dimensions, no entries,
        or a non-finite entry (the message names it).

    References
    ----------
    Eq. (2) of Likhosherstov et al. (2021); :ref:`ch-self-attention`.
    """
    return row_softmax(attention_logits(X, W_Q, W_K, causal=causal))


def self_attention(X, W_Q, W_K, W_V, *, causal: bool = False) -> np.ndarray:
    """Self-attention ``SAM(X) X W_V`` (eq. 3).

    Parameters
    ----------
    X : array_like, shape (L, d_hid)
    W_Q, W_K : array_like, shape (d_hid, d)
    W_V : array_like, shape (d_hid, d_v)
    causal : bool, default False

    Returns
    -------
    numpy.ndarray, shape (L, d_v)

    Raises
    ------
    ValueError, TypeError
        As :func:`sam`, and if ``W_V`` is malformed or its row count is not ``d_hid``.

    References
    ----------
    Eq. (3) of Likhosherstov et al. (2021); :ref:`ch-self-attention`.
    """
    M = sam(X, W_Q, W_K, causal=causal)
    X = np.asarray(X, dtype=np.float64)
    W_V = as_matrix("W_V", W_V)
    if W_V.shape[0] != X.shape[1]:
        raise ValueError(
            f"W_V must have shape (d_hid, d_v) with d_hid = X.shape[1] = {X.shape[1]}, "
            f"got {W_V.shape}"
        )
    return M @ (X @ W_V)


# The old names of this module's renamed functions warn and resolve for one release
# (sattn/_deprecation.py); imported last so that no line above moves.
from ._deprecation import module_getattr as _old_names  # noqa: E402

__getattr__ = _old_names(__name__)

"""Bounds on width x bits for the book's weights and for any bilinear attention.

Every entry of the input lies in a set ``V`` of ``2**b`` values. :func:`~sattn.book_weights_bound` (the
book's weights ``W_Q = [I; 0]``, ``W_K = [0; I]``), :func:`~sattn.antichain_length` (the one-bit
two's-complement grid), :func:`~sattn.bilinear_min_bits` and :func:`bilinear_bound` (any ``G = X W X^T``)
and :func:`~sattn.serving_obstruction` (the lemma behind the first bound, executable). Each docstring
holds its proof; :ref:`ch-width-bits` explains them.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sps

from .._validate import as_matrix, check_int
from ..patterns.supports import target_supports, width_bits_lower_bound

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = ["antichain_length", "bilinear_bound", "bilinear_min_bits", "book_weights_bound",
            "serving_obstruction"]
__all__ = [*__flat__, "ceil_log2"]


def ceil_log2(n: int) -> int:
    """``ceil(log2 n)`` for an integer ``n >= 1``, exactly."""
    return (int(n) - 1).bit_length()


def book_weights_bound(L, k=1) -> int:
    """Least ``d_hid b`` with which the book's weights serve every target of ``T(L, k)``.

    Parameters
    ----------
    L : int
        Length, ``2 <= L <= 2**53``.
    k : int, default 1
        Nonzeros per row and column, ``1 <= k < L``.

    Returns
    -------
    int
        ``2 max(ceil(log2 L), ceil(c / 2))`` with ``c`` the certified lower bound on
        ``log2 N(L, k) / L`` (:func:`sattn.width_bits_lower_bound`); ``2 ceil(log2 L)`` for
        ``k = 1``.

    Notes
    -----
    Proof. Let ``V`` hold ``2**b`` values and ``x_l = [q_l, k_l]`` with ``q_l, k_l`` in ``V**d``.
    (i) If rows ``l != l'`` have different supports of the same size and ``q_l = q_l'``, their
    logit rows are equal, so one matrix row meets (7) for two supports: impossible for
    ``eps2 < 1`` (the lemma of :ref:`ch-width-bits`). (ii) If column ``j`` lies in the support of
    row ``l`` and ``j'`` does not, ``k_j = k_j'`` gives ``G[l, j] = G[l, j']`` and (7) fails at
    ``(l, j')``. The class holds a target whose ``L`` rows are pairwise different and whose
    ``L`` columns are separated pairwise (cyclic windows, ``k < L``), so ``2**(b d) >= L`` for the
    queries and the keys alike: ``d b >= ceil(log2 L)`` (``d b`` is an integer). The counting
    bound gives ``2 d b >= c``. :func:`~sattn.serving_obstruction` makes (i) and (ii) executable.

    References
    ----------
    :ref:`ch-width-bits`.
    """
    L = check_int("L", L, low=2, high=2 ** 53)
    k = check_int("k", k, low=1, high=L - 1)
    c = width_bits_lower_bound(L, k)
    return 2 * max(ceil_log2(L), math.ceil(c / 2))


def antichain_length(L) -> int:
    """Least ``m`` with ``C(m, floor(m/2)) >= L``: the key length that the one-bit
    two's-complement grid ``{-R, 0}`` needs for a permutation target (book's weights).

    With values ``{-R, 0}`` the logit is ``R**2 |q ∩ k|`` for the sets of positions holding
    ``-R``; if key ``k_a`` is contained in ``k_b`` no query prefers ``a`` strictly, so the keys form
    an antichain of subsets of ``{1..m}``, at most ``C(m, floor(m/2))`` of them (Sperner).
    :func:`~sattn.constant_weight_input` meets it.

    References
    ----------
    Sperner (1928); :ref:`ch-width-bits`.
    """
    L = check_int("L", L, low=1, high=2 ** 62)
    m = 0
    while math.comb(m, m // 2) < L:
        m += 1
    return m


def bilinear_min_bits(L, k, d_hid):
    """Least bits per entry for *any* bilinear attention with input width ``d_hid`` on ``T(L, k)``.

    Parameters
    ----------
    L, k : int
        As in :func:`~sattn.book_weights_bound`.
    d_hid : int
        Input width, ``>= 1``.

    Returns
    -------
    int or None
        The largest of ``ceil(c / d_hid)`` (counting; ``c`` as in :func:`~sattn.book_weights_bound`) and
        the least ``b`` with ``2 k 2**(b (d_hid - 1)) >= L`` (lines); ``None`` when no ``b``
        serves (``d_hid = 1`` and ``L > 2 k``).

    Notes
    -----
    Proof of the line part. Take a target of the class whose columns are separated pairwise, so the
    inputs ``x_j`` are distinct (else (7) fails as in :func:`~sattn.book_weights_bound`). Under (7) with
    ``eps2 < 1`` row ``l``'s support ``S`` is the set of the ``k`` largest values of
    ``j -> <w_l, x_j>`` (``w_l = W^T x_l``), strictly. On a line ``x + t e_i`` that functional is
    monotone or constant in ``t``, so ``S`` meets the line's points in a prefix or a suffix of
    at most ``k`` of them (or in all of them, at most ``k``). Every column lies in some support, so
    each line holds at most ``2 k`` inputs, and ``V**d_hid`` is covered by ``2**(b (d_hid - 1))``
    lines parallel to one axis.

    References
    ----------
    :ref:`ch-width-bits`.
    """
    L = check_int("L", L, low=2, high=2 ** 53)
    k = check_int("k", k, low=1, high=L - 1)
    d_hid = check_int("d_hid", d_hid, low=1)
    counting = math.ceil(width_bits_lower_bound(L, k) / d_hid)
    b = _line_bits(L, k, d_hid)
    return None if b is None else max(b, counting)


def _line_bits(L, k, d_hid):
    """Least ``b >= 1`` with ``2 k 2**(b (d_hid - 1)) >= L`` (``None`` if none: ``d_hid = 1``
    and ``L > 2 k``)."""
    if d_hid == 1:
        return None if L > 2 * k else 1
    # 2**(b (d_hid - 1)) >= L / (2 k)  <=>  b (d_hid - 1) >= ceil(log2(ceil(L / 2k)))
    need = ceil_log2(-(-L // (2 * k)))
    return max(1, -(-need // (d_hid - 1)))


def bilinear_bound(L, k, *, max_width: int = 4096) -> tuple:
    """``(d_hid b, d_hid)``: the least product of :func:`~sattn.bilinear_min_bits` over widths
    ``1 .. max_width`` (the first width reaching it), for any bilinear attention.

    References
    ----------
    :ref:`ch-width-bits`.
    """
    L = check_int("L", L, low=2, high=2 ** 53)
    k = check_int("k", k, low=1, high=L - 1)
    max_width = check_int("max_width", max_width, low=1, high=10 ** 6)
    c = width_bits_lower_bound(L, k)
    best = None
    for w in range(1, max_width + 1):
        b = _line_bits(L, k, w)
        if b is None:
            continue
        b = max(b, math.ceil(c / w))
        if best is None or w * b < best[0]:
            best = (w * b, w)
    return best


def serving_obstruction(Q, K, A):
    """The row where (7) must fail because two queries or two keys of ``[Q, K]`` coincide.

    Parameters
    ----------
    Q, K : array_like, shape (L, d)
        Queries and keys (the book's weights: logits ``Q K^T``).
    A : array_like or scipy.sparse matrix, shape (L, L)
        The target.

    Returns
    -------
    tuple or None
        ``("query", l, l2, j)``: rows ``l != l2`` with equal queries and different supports, ``j``
        in the support of ``l`` and not of ``l2``, so ``G[l2, j] = G[l, j]`` must be both on top
        and below (7) in one logit row; ``("key", l, j, j2)``: columns with equal keys, ``j`` in
        row ``l``'s support and ``j2`` not, so ``G[l, j2] = G[l, j]`` and (7) fails at
        ``(l, j2)``; ``None`` when neither exists.

    References
    ----------
    :ref:`ch-width-bits` (the proof of :func:`~sattn.book_weights_bound`).
    """
    Q = as_matrix("Q", Q) + 0.0            # + 0.0: -0.0 and 0.0 compare as equal bytes
    K = as_matrix("K", K) + 0.0
    if Q.shape != K.shape:
        raise ValueError(f"Q and K must have the same shape, got Q {Q.shape} and K {K.shape}")
    L, _, cols = target_supports(A)
    if L != Q.shape[0]:
        raise ValueError(f"A must have {Q.shape[0]} rows (one per token of Q), got {L}")
    A = sps.csr_array((np.ones(cols.size), cols.ravel(), np.arange(0, cols.size + 1, cols.shape[1])),
                      shape=(L, L))
    sup = [frozenset(r) for r in cols.tolist()]
    seen = {}
    for l, row in enumerate(map(bytes, np.ascontiguousarray(Q))):
        if row in seen and sup[seen[row]] != sup[l]:
            l0 = seen[row]
            j = min(sup[l0] - sup[l]) if sup[l0] - sup[l] else min(sup[l] - sup[l0])
            return ("query", l0, l, j) if j in sup[l0] else ("query", l, l0, j)
        seen.setdefault(row, l)
    At = A.T.tocsr()
    col = [frozenset(At.indices[At.indptr[j]:At.indptr[j + 1]].tolist()) for j in range(A.shape[1])]
    seen = {}
    for j, key in enumerate(map(bytes, np.ascontiguousarray(K))):
        if key in seen and col[seen[key]] != col[j]:
            j0 = seen[key]
            diff = col[j0] ^ col[j]
            l = min(diff)
            return ("key", l, j0, j) if l in col[j0] else ("key", l, j, j0)
        seen.setdefault(key, j)
    return None

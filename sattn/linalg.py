"""Linear algebra with defined results: a canonical SVD and products in a fixed order.

LAPACK's SVD is unique only up to choices that rounding makes: the sign of each pair of singular
vectors, and, inside a cluster of equal singular values, the whole basis. Wherever the package feeds
a factorization into a random draw, an optimizer's start or a printed value, it uses
:func:`canonical_svd`, which makes those choices by stated rules, so that every machine draws the
same input from the same seed:

* **Clusters.** Singular values within ``rtol * s_max`` of their neighbour form a cluster (exactly
  equal ones always do). The right singular vectors of a cluster are replaced by a basis that
  depends only on the subspace they span: repeatedly take the coordinate vector ``e_i`` whose
  projection onto the part of the subspace not yet covered is longest (the lowest such ``i``
  among those within a relative ``1e-6`` of the longest), and add that projection, normalised.
* **Signs.** In every right singular vector the first entry whose magnitude is within a relative
  ``1e-6`` of the largest is made positive; the left vector follows (``u = B v / s``).

:func:`independent_rows` picks, greedily and in exact arithmetic, the rows of a small matrix that
are independent of the rows before them, so that a basis of their span is a defined choice and not
one that rounding makes.

:func:`ordered_matmul` is a matrix product whose rounding is specified: products rounded to the
accumulator, then added in index order. The number formats of Chapter 15 use it, because there the
rounding *is* the subject and must not depend on the BLAS kernel.

References
----------
The book's appendix :ref:`ch-computation` (section "The same output on every machine").
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ._validate import as_float_array, as_matrix, check_real, check_size

__flat__ = ["canonical_svd", "ordered_matmul"]
__all__ = [*__flat__, "FULL_RANK_RTOL", "independent_rows"]

#: Relative width within which entries (or projections) count as tied for "the largest".
TIE_RTOL = 1e-6


def _first_of_largest(x: np.ndarray) -> int:
    top = x.max()
    return int(np.flatnonzero(x >= top * (1 - TIE_RTOL))[0])


def _subspace_basis(Q: np.ndarray) -> np.ndarray:
    """An orthonormal basis of ``span(Q)`` (``Q``: n x m, orthonormal columns) that depends only
    on the subspace: greedy projections of coordinate vectors (module docstring)."""
    n, m = Q.shape
    out = np.empty((n, m))
    rest = Q.copy()
    for t in range(m):
        norms = np.sqrt(np.sum(rest * rest, axis=1))
        i = _first_of_largest(norms)
        w = rest[i] / norms[i]                       # unit vector in the coordinates of ``rest``
        out[:, t] = rest @ w
        if t == m - 1:
            break
        # an orthonormal basis of the complement of w (Householder reflection mapping w to e_1)
        h = w.copy()
        h[0] += 1.0 if w[0] >= 0 else -1.0
        h /= np.sqrt(np.sum(h * h))
        H = np.eye(w.size) - 2.0 * np.outer(h, h)
        rest = rest @ H[:, 1:]
    return out


def canonical_svd(B, *, rtol: float = 1e-9) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Full SVD ``B = U diag(s) V^T`` with canonical signs and canonical bases inside clusters.

    Parameters
    ----------
    B : array_like, shape (n, n)
        A finite real square matrix.
    rtol : float, default 1e-9
        Singular values closer than ``rtol * s[0]`` to their neighbour form a cluster (far above
        the rounding of LAPACK's SVD, about ``n * 1e-16 * s[0]``).

    Returns
    -------
    U : numpy.ndarray, shape (n, n)
        Left singular vectors: ``U[:, i] = B V[:, i] / s[i]`` where ``s[i]`` is above the cluster
        width, a canonical basis of LAPACK's left null space otherwise.
    s : numpy.ndarray, shape (n,)
        Singular values, non-increasing.
    V : numpy.ndarray, shape (n, n)
        Right singular vectors as *columns* (orthogonal), chosen by the rules of the module.

    Raises
    ------
    ValueError
        If ``B`` is not a finite real square matrix, or ``rtol`` is not in ``(0, 1e-3]``.

    References
    ----------
    Eqs. (11)-(12) of Likhosherstov et al. (2021) use the SVD of the logit target; the rules are
    the book's (appendix :ref:`ch-computation`).
    """
    B = as_matrix("B", B, square=True)
    rtol = check_real("rtol", rtol, low=0.0, high=1e-3, low_open=True)
    U, s, Vt = np.linalg.svd(B)
    V = Vt.T.copy()
    n = s.size
    width = rtol * s[0] if s[0] > 0 else 0.0
    start = 0
    null = np.zeros(n, dtype=bool)
    while start < n:
        stop = start + 1
        while stop < n and s[stop - 1] - s[stop] <= width:
            stop += 1
        if stop - start > 1:
            V[:, start:stop] = _subspace_basis(V[:, start:stop])
            s[start:stop] = s[start:stop].mean()
        if s[start] <= width:
            null[start:stop] = True
        start = stop
    for j in range(n):
        i = _first_of_largest(np.abs(V[:, j]))
        if V[i, j] < 0:
            V[:, j] = -V[:, j]
    Uc = np.empty_like(U)
    live = ~null
    Uc[:, live] = (B @ V[:, live]) / s[live]
    if null.any():
        Uc[:, null] = _subspace_basis(U[:, null])
        for j in np.flatnonzero(null):
            i = _first_of_largest(np.abs(Uc[:, j]))
            if Uc[i, j] < 0:
                Uc[:, j] = -Uc[:, j]
    return Uc, s, V


#: :func:`independent_rows` takes the rows as independent without exact arithmetic when the
#: computed smallest singular value exceeds this fraction of the largest: far above the backward
#: error of LAPACK's SVD (about ``max(r, c) * 2**-53`` of the largest).
FULL_RANK_RTOL = 1e-8


def _exact_echelon_add(basis: list, row: list) -> bool:
    """Reduce ``row`` (Fractions) by the echelon ``basis`` (pairs ``(pivot, row)``); if a nonzero
    remainder is left, add it to the basis and return True (the row is independent)."""
    row = list(row)
    for piv, b in basis:
        f = row[piv]
        if f:
            row = [x - f * y for x, y in zip(row, b)]
    piv = next((j for j, x in enumerate(row) if x), None)
    if piv is None:
        return False
    inv = 1 / row[piv]
    basis.append((piv, [x * inv for x in row]))
    return True


def independent_rows(M) -> np.ndarray:
    """Indices of the rows of ``M`` that are linearly independent of the rows before them.

    Row ``i`` is kept exactly when it is not a linear combination of rows ``0 .. i-1``, in exact
    rational arithmetic on the binary values of the entries. The kept rows are a basis of the row
    space, and the choice depends only on the values of ``M`` and the order of its rows, never on
    rounding. When the computed singular values certify full row rank (the smallest above
    ``FULL_RANK_RTOL`` times the largest; the SVD's backward error is far smaller), every row is
    kept without the exact computation.

    Parameters
    ----------
    M : array_like, shape (r, c)
        A finite real matrix with ``r <= 64`` rows and ``c <= 4096`` columns (the exact path is
        meant for small matrices).

    Returns
    -------
    numpy.ndarray of int
        The kept row indices, increasing. Empty when every row is zero.

    Raises
    ------
    ValueError
        If ``M`` is not a finite real matrix.
    SizeTooLargeError
        If ``M`` has more than 64 rows or 4096 columns.

    References
    ----------
    The book's appendix :ref:`ch-computation` (the fast engine's thin Haar factor takes a basis of
    the span of its candidates' vectors).
    """
    M = as_matrix("M", M)
    r, c = M.shape
    check_size("rows of M", r, cap=64, why="the exact elimination is meant for small matrices")
    check_size("columns of M", c, cap=4096, why="the exact elimination is meant for small matrices")
    if r <= c:
        s = np.linalg.svd(M, compute_uv=False)
        if s[0] > 0 and s[-1] > FULL_RANK_RTOL * s[0]:
            return np.arange(r)
    basis: list = []
    keep = [i for i in range(r)
            if _exact_echelon_add(basis, [Fraction(float(x)) for x in M[i]])]
    return np.asarray(keep, dtype=np.int64)


def ordered_matmul(A, B, dtype=np.float64) -> np.ndarray:
    """``A @ B`` with a specified rounding: each product rounded to ``dtype``, then summed in
    index order ``k = 0, 1, ...``, each sum rounded to ``dtype`` (no fused multiply-add).

    The result is the same on every machine (it uses only IEEE elementwise operations), unlike
    BLAS, whose summation order and fusing depend on the CPU's kernel set. Leading dimensions
    broadcast as in ``numpy.matmul``.

    Parameters
    ----------
    A : array_like, shape (..., m, K)
    B : array_like, shape (..., K, n)
    dtype : {numpy.float64, numpy.float32}
        The accumulator.

    Returns
    -------
    numpy.ndarray of ``dtype``, shape (..., m, n)

    References
    ----------
    The accumulation model of :mod:`sattn.precision.formats` (Chapter :ref:`ch-finite-precision`).
    """
    a = as_float_array("A", A, finite=False)
    b = as_float_array("B", B, finite=False)
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"A and B must have at least 2 dimensions, got shapes {a.shape} and {b.shape}")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"A and B must be compatible for A @ B, got shapes {a.shape} and {b.shape}")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be numpy.float64 or numpy.float32, got {dtype!r}") from None
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"dtype must be float64 or float32, got {dt}")
    a, b = a.astype(dt), b.astype(dt)
    lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out = np.zeros((*lead, a.shape[-2], b.shape[-1]), dtype=dt)
    for k in range(a.shape[-1]):
        out += a[..., :, k, None] * b[..., None, k, :]
    return out

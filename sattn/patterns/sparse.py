"""Sparse, bounded-variation attention patterns: the matrix classes, the sampler, structured patterns.

Likhosherstov, Choromanski & Weller (2021) approximate target matrices ``A`` (of shape ``(L, L)``)
from three classes:

* **right stochastic**: ``A >= 0`` and every row sums to one;
* **k-nonzero-bounded**: every row *and* every column has at most ``k`` nonzero entries;
* **gamma-variation-bounded**: within each row, two nonzero entries differ by at most a factor
  ``gamma`` (``A[l, j1] <= gamma * A[l, j2]`` whenever both are nonzero);

and, for the causal variant, **lower triangular** (``A[l, j] = 0`` for ``j > l``).

Each class has a validator ``check_*`` that returns a :class:`PatternReport` naming the first
violation (which row or column, the count or the values) and a raising variant ``validate_*``.
The validators accept dense arrays and ``scipy.sparse`` matrices (useful at large ``L``).

:func:`sample_sparse` is the paper's two-pass random sampler (Section 4 of the paper, spec Section
8.1), implemented with one Python loop over rows and one over columns instead of a loop over all
``L**2`` positions. Structured patterns (:func:`band_pattern`, :func:`strided_pattern`,
:func:`block_pattern`, :func:`permutation_pattern`) give the shapes seen in practice.

The book explains all of this in :ref:`ch-sparse-patterns`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sps

from ..errors import SizeTooLargeError
from .._validate import (
    MAX_BYTES,
    MAX_L,
    as_matrix,
    check_bool,
    check_dense_size,
    check_int,
    check_real,
    check_rng,
    check_size,
    gib,
)
from ..results import Result

#: The largest L for which numpy can address a dense L x L float64 array.

__flat__ = [
    "PatternError",
    "PatternReport",
    "band_pattern",
    "block_pattern",
    "check_gamma_variation_bounded",
    "check_k_nonzero_bounded",
    "check_lower_triangular",
    "check_right_stochastic",
    "pattern_parameters",
    "permutation_pattern",
    "validate_gamma_variation_bounded",
    "validate_k_nonzero_bounded",
    "validate_lower_triangular",
    "validate_right_stochastic",
    "sample_sparse",
    "strided_pattern",
]
# Module-only: the last step of every pattern builder (also :mod:`.supports`'s).
__all__ = [*__flat__, "pattern_from_entries"]


class PatternError(ValueError):
    """A matrix is not in the class a function requires (raised by the ``validate_*`` functions)."""


@dataclass(frozen=True)
class PatternReport(Result):
    """Outcome of a class validator.

    Attributes
    ----------
    ok : bool
        Whether the matrix belongs to the class.
    property : str
        The class checked, e.g. ``"4-nonzero-bounded"``.
    message : str
        One sentence: either that the matrix is in the class, or the first violation found.
    row, col : int or None
        Row / column of the first violation (``None`` when not applicable).
    count : int or None
        Number of nonzeros of the offending row or column (k-nonzero-bounded only).
    values : tuple of float
        The offending values (e.g. the largest and smallest nonzero of a row, or a row sum).
    details : dict
        Measured quantities of the whole matrix (e.g. the largest row count).
    """

    ok: bool
    property: str
    message: str
    row: int | None = None
    col: int | None = None
    count: int | None = None
    values: tuple = ()
    details: dict = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.ok

    def raise_if_failed(self) -> "PatternReport":
        """Raise :class:`PatternError` with :attr:`message` if the check failed; else return self."""
        if not self.ok:
            raise PatternError(self.message)
        return self


# --------------------------------------------------------------------------- entry extraction
def _entries(name: str, A, *, square: bool = True):
    """Return ``(shape, rows, cols, vals)`` of the nonzero entries of a dense or sparse matrix.

    Entries are sorted by row, then column. NaN and infinite values are rejected.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str (used in messages), got {name!r} ({type(name).__name__})")
    if sps.issparse(A):
        if not (np.issubdtype(A.dtype, np.number) or A.dtype == bool) or np.issubdtype(
                A.dtype, np.complexfloating):
            raise TypeError(f"{name} must be a real numeric matrix, got dtype {A.dtype}")
        coo = sps.coo_array(A)
        coo.sum_duplicates()
        if coo.ndim != 2:
            raise ValueError(f"{name} must be a 2-D matrix, got ndim={coo.ndim}")
        shape = coo.shape
        vals = np.asarray(coo.data, dtype=np.float64)
        if vals.size and not np.all(np.isfinite(vals)):
            i = int(np.flatnonzero(~np.isfinite(vals))[0])
            raise ValueError(
                f"{name} must contain only finite numbers, but "
                f"{name}[{int(coo.coords[0][i])}, {int(coo.coords[1][i])}] = {vals[i]}"
            )
        keep = vals != 0
        rows = np.asarray(coo.coords[0], dtype=np.int64)[keep]
        cols = np.asarray(coo.coords[1], dtype=np.int64)[keep]
        vals = vals[keep]
        order = np.lexsort((cols, rows))
        rows, cols, vals = rows[order], cols[order], vals[order]
        if shape[0] == 0 or shape[1] == 0:
            raise ValueError(f"{name} must be non-empty, got shape {shape}")
    else:
        A = as_matrix(name, A)
        shape = A.shape
        rows, cols = np.nonzero(A)
        vals = A[rows, cols]
    if square and shape[0] != shape[1]:
        raise ValueError(f"{name} must be square (L x L), got shape {tuple(shape)}")
    return tuple(int(s) for s in shape), rows.astype(np.int64), cols.astype(np.int64), vals


def _first_negative(name, rows, cols, vals, prop):
    neg = np.flatnonzero(vals < 0)
    if neg.size:
        i = int(neg[0])
        r, c, v = int(rows[i]), int(cols[i]), float(vals[i])
        return PatternReport(
            False, prop,
            f"{name}[{r}, {c}] = {v:.6g} is negative; {prop} matrices have nonnegative entries",
            row=r, col=c, values=(v,),
        )
    return None


# --------------------------------------------------------------------------- validators
def check_k_nonzero_bounded(A, k, *, name: str = "A") -> PatternReport:
    """Check that every row and every column of ``A`` has at most ``k`` nonzero entries.

    Parameters
    ----------
    A : array_like or scipy.sparse matrix, shape (L, L)
        The matrix to check (finite entries).
    k : int
        The bound, ``1 <= k``.
    name : str, default "A"
        Name used in the report's message.

    Returns
    -------
    PatternReport
        ``ok`` is True iff the bound holds. Otherwise ``row`` (or ``col``) and ``count`` name the
        first row (or, if all rows are fine, the first column) with more than ``k`` nonzeros.
        ``details`` holds ``max_row_count``, ``max_col_count``, ``min_row_count``.

    Raises
    ------
    ValueError, TypeError
        If ``A`` is not a finite square matrix or ``k`` is not a positive integer.

    References
    ----------
    The k-nonzero-bounded class of Likhosherstov et al. (2021), Section 3 (Theorem 1's hypothesis);
    :ref:`ch-sparse-patterns`.
    """
    k = check_int("k", k, low=1)
    (L, _), rows, cols, _ = _entries(name, A)
    rc = np.bincount(rows, minlength=L)
    cc = np.bincount(cols, minlength=L)
    details = {"max_row_count": int(rc.max()), "max_col_count": int(cc.max()),
               "min_row_count": int(rc.min())}
    prop = f"{k}-nonzero-bounded"
    bad_r = np.flatnonzero(rc > k)
    if bad_r.size:
        r = int(bad_r[0])
        return PatternReport(False, prop, f"row {r} of {name} has {int(rc[r])} nonzeros, more than k = {k}",
                             row=r, count=int(rc[r]), details=details)
    bad_c = np.flatnonzero(cc > k)
    if bad_c.size:
        c = int(bad_c[0])
        return PatternReport(False, prop, f"column {c} of {name} has {int(cc[c])} nonzeros, more than k = {k}",
                             col=c, count=int(cc[c]), details=details)
    return PatternReport(True, prop,
                         f"{name} is {prop}: at most {details['max_row_count']} nonzeros per row and "
                         f"{details['max_col_count']} per column",
                         details=details)


def _row_extremes(L, rows, vals):
    """Per-row max and min of ``vals`` (rows without entries give -inf / +inf)."""
    vmax = np.full(L, -np.inf)
    vmin = np.full(L, np.inf)
    np.maximum.at(vmax, rows, vals)
    np.minimum.at(vmin, rows, vals)
    return vmax, vmin


def check_gamma_variation_bounded(A, gamma, *, name: str = "A", rtol: float = 1e-12) -> PatternReport:
    """Check that within each row of ``A`` the nonzero entries differ by at most a factor ``gamma``.

    Parameters
    ----------
    A : array_like or scipy.sparse matrix, shape (L, L)
        Nonnegative matrix (a negative entry is reported as a violation).
    gamma : float
        The bound, ``gamma >= 1``.
    name : str, default "A"
    rtol : float, default 1e-12
        Relative tolerance on the ratio (so that a row normalised in floating point still passes),
        finite and ``>= 0``.

    Returns
    -------
    PatternReport
        On failure ``row`` is the first row whose largest nonzero exceeds ``gamma`` times its
        smallest, and ``values == (largest, smallest)``. ``details["max_ratio"]`` is the largest
        within-row ratio of the whole matrix.

    Raises
    ------
    ValueError, TypeError
        If ``A`` is not a finite square matrix, ``gamma`` is not a finite number ``>= 1`` or
        ``rtol`` is not a finite number ``>= 0``.

    References
    ----------
    The gamma-variation-bounded class of Likhosherstov et al. (2021), Section 3 (Theorem 1's
    hypothesis; the formula is reconstructed in the book); :ref:`ch-sparse-patterns`.
    """
    gamma = check_real("gamma", gamma, low=1.0)
    rtol = check_real("rtol", rtol, low=0.0)
    (L, _), rows, cols, vals = _entries(name, A)
    prop = f"{gamma:g}-variation-bounded"
    neg = _first_negative(name, rows, cols, vals, prop)
    if neg is not None:
        return neg
    vmax, vmin = _row_extremes(L, rows, vals)
    has = np.isfinite(vmax)
    ratio = np.ones(L)
    ratio[has] = vmax[has] / vmin[has]
    details = {"max_ratio": float(ratio.max())}
    bad = np.flatnonzero(ratio > gamma * (1.0 + rtol))
    if bad.size:
        r = int(bad[0])
        return PatternReport(
            False, prop,
            f"row {r} of {name} has nonzeros {vmax[r]:.6g} and {vmin[r]:.6g}, a ratio of "
            f"{ratio[r]:.6g} > gamma = {gamma:g}",
            row=r, values=(float(vmax[r]), float(vmin[r])), details=details,
        )
    return PatternReport(True, prop,
                         f"{name} is {prop}: largest within-row ratio of nonzeros {details['max_ratio']:.6g}",
                         details=details)


def check_right_stochastic(A, *, atol: float = 1e-10, name: str = "A") -> PatternReport:
    """Check that ``A`` is nonnegative and each row sums to one (within ``atol``).

    Parameters
    ----------
    A : array_like or scipy.sparse matrix, shape (L, L)
    atol : float, default 1e-10
        Absolute tolerance on each row sum.
    name : str, default "A"

    Returns
    -------
    PatternReport
        On failure names the first negative entry, or the first row whose sum is off
        (``values == (row_sum,)``). ``details["max_sum_error"]`` is the largest ``|sum - 1|``.

    Raises
    ------
    ValueError, TypeError
        If ``A`` is not a finite, real, square matrix or ``atol`` is not a finite number
        ``>= 0``.

    References
    ----------
    Right-stochastic matrices, Section 2 of Likhosherstov et al. (2021) (every SAM is one);
    :ref:`ch-sparse-patterns`.
    """
    atol = check_real("atol", atol, low=0.0)
    (L, _), rows, cols, vals = _entries(name, A)
    prop = "right stochastic"
    neg = _first_negative(name, rows, cols, vals, prop)
    if neg is not None:
        return neg
    sums = np.bincount(rows, weights=vals, minlength=L)
    err = np.abs(sums - 1.0)
    details = {"max_sum_error": float(err.max())}
    bad = np.flatnonzero(err > atol)
    if bad.size:
        r = int(bad[0])
        return PatternReport(False, prop,
                             f"row {r} of {name} sums to {sums[r]:.12g}, not 1 (atol = {atol:g})",
                             row=r, values=(float(sums[r]),), details=details)
    return PatternReport(True, prop,
                         f"{name} is right stochastic: nonnegative, every row sums to 1 within {atol:g}",
                         details=details)


def check_lower_triangular(A, *, name: str = "A") -> PatternReport:
    """Check that ``A[l, j] == 0`` whenever ``j > l`` (the support of a causal attention matrix).

    Parameters
    ----------
    A : array_like or scipy.sparse matrix, shape (L, L)
    name : str, default "A"

    Returns
    -------
    PatternReport
        On failure ``row``, ``col`` and ``values`` name the first nonzero above the diagonal
        (in row-major order).

    Raises
    ------
    ValueError, TypeError
        If ``A`` is not a finite, real, square matrix.

    References
    ----------
    Causal self-attention matrices (spec Section 6; :ref:`ch-causal`).
    """
    _, rows, cols, vals = _entries(name, A)
    above = np.flatnonzero(cols > rows)
    prop = "lower triangular"
    if above.size:
        i = int(above[0])
        r, c = int(rows[i]), int(cols[i])
        return PatternReport(False, prop,
                             f"{name}[{r}, {c}] = {vals[i]:.6g} is nonzero above the diagonal "
                             f"(column {c} > row {r}), so {name} is not lower triangular",
                             row=r, col=c, values=(float(vals[i]),))
    return PatternReport(True, prop, f"{name} is lower triangular")


def _raising(check):
    """The ``validate_*`` partner of a ``check_*`` validator: the same arguments, and the report
    returned only when ``A`` is in the class (:class:`PatternError` with its message otherwise)."""
    @functools.wraps(check)
    def validate(*args, **kwargs) -> PatternReport:
        return check(*args, **kwargs).raise_if_failed()

    validate.__name__ = validate.__qualname__ = check.__name__.replace("check_", "validate_", 1)
    validate.__doc__ = f"""Like :func:`{check.__name__}`, but raise :class:`PatternError` on a violation.

    Raises
    ------
    PatternError
        With the report's message, if ``A`` is not in the class.
    ValueError, TypeError
        On malformed input, as :func:`{check.__name__}`.
    """
    return validate


validate_k_nonzero_bounded = _raising(check_k_nonzero_bounded)
validate_gamma_variation_bounded = _raising(check_gamma_variation_bounded)
validate_right_stochastic = _raising(check_right_stochastic)
validate_lower_triangular = _raising(check_lower_triangular)


def pattern_parameters(A, *, name: str = "A") -> tuple[int, float]:
    """The smallest ``(k, gamma)`` for which ``A`` is k-nonzero-bounded and gamma-variation-bounded.

    Parameters
    ----------
    A : array_like or scipy.sparse matrix, shape (L, L)
        Nonnegative matrix.

    Returns
    -------
    k : int
        Largest number of nonzeros in a row or a column.
    gamma : float
        Largest ratio between two nonzeros of the same row (1.0 if every row is constant).

    Raises
    ------
    ValueError, TypeError
        If ``A`` is not a finite, real, square matrix, or has a negative entry.

    References
    ----------
    :ref:`ch-sparse-patterns`.
    """
    (L, _), rows, cols, vals = _entries(name, A)
    if vals.size and vals.min() < 0:
        raise ValueError(f"{name} must be nonnegative, got a minimum entry {vals.min():.6g}")
    if vals.size == 0:
        return 0, 1.0
    k = int(max(np.bincount(rows, minlength=L).max(), np.bincount(cols, minlength=L).max()))
    vmax, vmin = _row_extremes(L, rows, vals)
    has = np.isfinite(vmax)
    return k, float(np.max(vmax[has] / vmin[has]))


# --------------------------------------------------------------------------- the sampler
def _check_sampler_args(L, k, gamma):
    L = check_int("L", L, low=1)
    k = _check_nnz("k", check_int("k", k, low=1, high=L), L, check_int("k", k, low=1, high=L))
    gamma = check_real("gamma", gamma, low=1.0)
    return L, k, gamma


def _check_dense_L(L, as_csr):
    """``L`` of a pattern: a dense float64 result of at most ``MAX_BYTES``
    (``L <= MAX_DENSE_L = 23170``), a CSR one of ``L <= MAX_L = 131072``."""
    if as_csr is True:
        return check_size("L", L, cap=MAX_L, why="the largest sequence length of a CSR pattern; "
                                                 "the book's experiments stop at 65536")
    return check_dense_size("L", L, bytes_per_unit=8, what="a dense L x L float64 pattern "
                                                          "(as_csr=True stores only the nonzeros)")


# The sections that the pattern constructors' docstrings share, written once and put in place of
# their markers by @_shared_sections (what help() and the API page show is the whole text).
_SIZE_ERROR = """\
    SizeTooLargeError
        If the result would be too large: a dense ``L x L`` float64 array above 4 GiB
        (``L > 23170``), a CSR pattern with ``L > 131072``, or more than about ``1.8e8`` nonzeros
        (``MAX_NNZ``).
"""
_PATTERN_RETURNS_AND_RAISES = """\
    Returns
    -------
    numpy.ndarray or scipy.sparse.csr_array, shape (L, L)

    Raises
    ------
    ValueError, TypeError
        If a size or ``gamma`` is out of the range stated above (the message names it), or
        ``rng`` is given and is not a :class:`numpy.random.Generator`.
""" + _SIZE_ERROR


def _shared_sections(func):
    """Fill the markers ``[pattern returns and raises]`` and ``[size error]`` of a docstring."""
    func.__doc__ = (func.__doc__.replace("    [pattern returns and raises]\n", _PATTERN_RETURNS_AND_RAISES)
                    .replace("    [size error]\n", _SIZE_ERROR))
    return func


#: The most nonzeros a pattern may have: their row and column indices (int64) and values (float64)
#: take 24 bytes each, at most MAX_BYTES in all (about 1.8e8 nonzeros).
MAX_NNZ = MAX_BYTES // 24


def _check_nnz(name, value, L, per_row):
    """Refuse a pattern parameter (``k``, ``width``, ``count``, ``block``) for which the pattern
    would hold more than ``MAX_NNZ`` nonzeros (``L * per_row``)."""
    if L * per_row > MAX_NNZ:
        raise SizeTooLargeError(
            f"{name} = {value} is too large at L = {L}: the pattern would hold up to "
            f"{L * per_row} nonzeros ({gib(24.0 * L * per_row)} of indices and values), more than the "
            f"{MAX_NNZ} allowed (use a smaller {name} or L)")
    return value


def pattern_from_entries(L, rows, cols, vals, normalize, as_csr):
    """The ``L x L`` pattern with entries ``vals`` at ``(rows, cols)``, rows normalized to sum 1 if
    ``normalize``, as a CSR array if ``as_csr`` (else dense): the last step of every pattern
    builder."""
    for nm, flag in (("normalize", normalize), ("as_csr", as_csr)):
        check_bool(nm, flag)
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    vals = np.asarray(vals, dtype=np.float64)
    if normalize:
        sums = np.bincount(rows, weights=vals, minlength=L)
        vals = vals / sums[rows]
    if as_csr:
        return sps.csr_array((vals, (rows, cols)), shape=(L, L))
    A = np.zeros((L, L))
    A[rows, cols] = vals
    return A


@_shared_sections
def sample_sparse(L, k, gamma, rng, *, normalize: bool = True, as_csr: bool = False):
    """Random k-nonzero-bounded, gamma-variation-bounded pattern by the paper's two-pass sampler.

    Pass 1 visits the rows in random order; in each row it visits the columns in a fresh random
    order and places a nonzero wherever the row and the column both still have fewer than ``k``
    nonzeros. Pass 2 does the same with the roles of rows and columns exchanged (and skips
    positions that are already nonzero). Each nonzero is 1 or ``gamma`` with probability 1/2.

    Visiting columns in a uniformly random order and taking every admissible one until the row is
    full selects a uniformly random subset of the admissible columns; this function draws that
    subset directly (Floyd's algorithm inside ``Generator.choice``), so it loops over rows and
    columns once each, never over all ``L**2`` positions. The result has the same distribution as
    the literal double loop (the test-suite compares the two).

    Parameters
    ----------
    L : int
        Size of the matrix, ``L >= 1``.
    k : int
        Nonzeros allowed per row and per column, ``1 <= k <= L``.
    gamma : float
        The larger of the two values, ``gamma >= 1``.
    rng : numpy.random.Generator
        Source of randomness.
    normalize : bool, default True
        Divide each row by its sum (the result is then right stochastic). With ``False`` the
        nonzeros are exactly 1 or ``gamma``.
    as_csr : bool, default False
        Return a :class:`scipy.sparse.csr_array` instead of a dense array (for large ``L``: a dense
        float64 matrix at ``L = 32768`` takes 8.6 GB).

    Returns
    -------
    numpy.ndarray or scipy.sparse.csr_array, shape (L, L)
        Every row has between 1 and ``k`` nonzeros, every column at most ``k``.

    Raises
    ------
    ValueError, TypeError
        If ``L``, ``k`` or ``gamma`` is out of range, or ``rng`` is not a Generator.
    [size error]

    References
    ----------
    The sampler of the experiments of Likhosherstov et al. (2021), Section 4 (spec Section 8.1);
    :ref:`ch-sparse-patterns`.
    """
    L, k, gamma = _check_sampler_args(_check_dense_L(L, as_csr), k, gamma)
    rng = check_rng("rng", rng)
    rc = np.zeros(L, dtype=np.int64)
    cc = np.zeros(L, dtype=np.int64)
    rows_out: list[np.ndarray] = []
    cols_out: list[np.ndarray] = []
    col_rows: list[list[int]] = [[] for _ in range(L)]  # rows holding a nonzero of each column

    # Pool of columns that still accept a nonzero (cc < k); removal by swapping with the last.
    pool = np.arange(L, dtype=np.int64)
    pos = np.arange(L, dtype=np.int64)
    n_pool = L

    def remove(pool, pos, n, x):
        i = pos[x]
        last = pool[n - 1]
        pool[i], pool[n - 1] = last, x
        pos[last], pos[x] = i, n - 1
        return n - 1

    # Pass 1: rows in random order; row i is empty, so every column of the pool is admissible.
    for i in rng.permutation(L):
        m = min(k, n_pool)
        if m == 0:
            continue
        chosen = pool[rng.choice(n_pool, size=m, replace=False)]
        rc[i] += m
        cc[chosen] += 1
        rows_out.append(np.full(m, i, dtype=np.int64))
        cols_out.append(chosen)
        for j in chosen.tolist():
            col_rows[j].append(int(i))
            if cc[j] == k:
                n_pool = remove(pool, pos, n_pool, j)

    # Pass 2: columns in random order; rows with rc < k and no nonzero in this column.
    rpool = np.arange(L, dtype=np.int64)
    rpos = np.arange(L, dtype=np.int64)
    n_rpool = L
    for i in np.flatnonzero(rc >= k).tolist():
        n_rpool = remove(rpool, rpos, n_rpool, i)
    for j in rng.permutation(L):
        need = k - int(cc[j])
        if need <= 0 or n_rpool == 0:
            continue
        excluded = {i for i in col_rows[j] if rc[i] < k}
        draw = min(n_rpool, need + len(excluded))
        # A uniformly ordered sample of rows; dropping the excluded ones leaves a uniformly ordered
        # sample of the admissible rows, whose first `need` form a uniformly random subset.
        cand = rpool[rng.choice(n_rpool, size=draw, replace=False)]
        if excluded:
            cand = np.array([i for i in cand.tolist() if i not in excluded], dtype=np.int64)
        chosen = cand[:need]
        m = chosen.size
        if m == 0:
            continue
        cc[j] += m
        rc[chosen] += 1
        rows_out.append(chosen)
        cols_out.append(np.full(m, j, dtype=np.int64))
        for i in chosen.tolist():
            if rc[i] == k:
                n_rpool = remove(rpool, rpos, n_rpool, i)

    rows = np.concatenate(rows_out)
    cols = np.concatenate(cols_out)
    vals = np.where(rng.random(rows.size) < 0.5, 1.0, gamma)
    return pattern_from_entries(L, rows, cols, vals, normalize, as_csr)


# --------------------------------------------------------------------------- structured patterns
def _values(rows, cols, gamma, rng):
    """Values in {1, gamma}: random with ``rng``, else gamma where ``row + col`` is even."""
    if rng is not None:
        rng = check_rng("rng", rng)
        return np.where(rng.random(rows.size) < 0.5, 1.0, gamma)
    return np.where((rows + cols) % 2 == 0, gamma, 1.0)


@_shared_sections
def band_pattern(L, width, *, gamma: float = 1.0, causal: bool = False, rng=None,
                 normalize: bool = True, as_csr: bool = False):
    """Local-window (band) pattern: token ``l`` attends to tokens ``j`` with ``|l - j| <= width``.

    Parameters
    ----------
    L : int
        Size, ``L >= 1``.
    width : int
        Half-width of the window, ``0 <= width < L``. The pattern is ``(2 width + 1)``-nonzero-
        bounded (``(width + 1)`` when ``causal``).
    gamma : float, default 1.0
        Values are in ``{1, gamma}``: random when ``rng`` is given, otherwise ``gamma`` where
        ``l + j`` is even and 1 elsewhere. The pattern is gamma-variation-bounded.
    causal : bool, default False
        Keep only ``j <= l`` (a lower-triangular sliding window).
    rng : numpy.random.Generator, optional
    normalize : bool, default True
        Row-normalise (right stochastic).
    as_csr : bool, default False
        Return a scipy CSR array.

    [pattern returns and raises]

    References
    ----------
    Local attention, one of the sparse patterns motivating Likhosherstov et al. (2021);
    :ref:`ch-sparse-patterns`.
    """
    L = _check_dense_L(L, as_csr)
    width = check_int("width", width, low=0, high=L - 1)
    _check_nnz("width", width, L, 2 * width + 1)
    gamma = check_real("gamma", gamma, low=1.0)
    check_bool('causal', causal)
    offsets = np.arange(-width, 1 if causal else width + 1)
    rows = np.repeat(np.arange(L), offsets.size)
    cols = rows + np.tile(offsets, L)
    keep = (cols >= 0) & (cols < L)
    rows, cols = rows[keep], cols[keep]
    return pattern_from_entries(L, rows, cols, _values(rows, cols, gamma, rng), normalize, as_csr)


@_shared_sections
def strided_pattern(L, stride, count, *, gamma: float = 1.0, causal: bool = False, rng=None,
                    normalize: bool = True, as_csr: bool = False):
    """Strided (dilated) pattern: token ``l`` attends to ``l, l + s, ..., l + (count - 1) s``.

    Without ``causal`` the offsets wrap around modulo ``L`` (a circulant pattern), so every row and
    every column has exactly ``count`` nonzeros. With ``causal`` the offsets are ``0, -s, ...,
    -(count - 1) s`` and positions before 0 are dropped (lower triangular).

    Parameters
    ----------
    L : int
    stride : int
        ``1 <= stride``; the non-causal form needs ``count * stride <= L`` so that the wrapped
        offsets are distinct.
    count : int
        Number of attended tokens per row, ``1 <= count <= L``: the pattern is
        ``count``-nonzero-bounded.
    gamma, causal, rng, normalize, as_csr
        As in :func:`band_pattern`.

    [pattern returns and raises]

    References
    ----------
    Strided attention (Child et al., Sparse Transformers), a sparse pattern of the kind covered by
    Theorem 1 of Likhosherstov et al. (2021); :ref:`ch-sparse-patterns`.
    """
    L = _check_dense_L(L, as_csr)
    stride = check_int("stride", stride, low=1)
    count = _check_nnz("count", check_int("count", count, low=1, high=L), L, count)
    gamma = check_real("gamma", gamma, low=1.0)
    check_bool('causal', causal)
    if not causal and count * stride > L:
        raise ValueError(
            f"strided_pattern needs count * stride <= L without causal (distinct wrapped offsets), "
            f"got count = {count}, stride = {stride}, L = {L}"
        )
    sign = -1 if causal else 1
    offsets = sign * stride * np.arange(count)
    rows = np.repeat(np.arange(L), count)
    cols = rows + np.tile(offsets, L)
    if causal:
        keep = cols >= 0
        rows, cols = rows[keep], cols[keep]
    else:
        cols = cols % L
    return pattern_from_entries(L, rows, cols, _values(rows, cols, gamma, rng), normalize, as_csr)


@_shared_sections
def block_pattern(L, block, *, gamma: float = 1.0, causal: bool = False, rng=None,
                  normalize: bool = True, as_csr: bool = False):
    """Block-diagonal pattern: tokens attend within consecutive blocks of ``block`` tokens.

    The last block is shorter when ``block`` does not divide ``L``. The pattern is
    ``block``-nonzero-bounded. With ``causal`` each block is lower triangular.

    Parameters
    ----------
    L : int
    block : int
        Block size, ``1 <= block <= L``.
    gamma, causal, rng, normalize, as_csr
        As in :func:`band_pattern`.

    [pattern returns and raises]

    References
    ----------
    Block-local attention; :ref:`ch-sparse-patterns`.
    """
    L = _check_dense_L(L, as_csr)
    block = _check_nnz("block", check_int("block", block, low=1, high=L), L, block)
    gamma = check_real("gamma", gamma, low=1.0)
    check_bool('causal', causal)
    start = (np.arange(L) // block) * block
    offsets = np.arange(block)
    rows = np.repeat(np.arange(L), block)
    cols = np.repeat(start, block) + np.tile(offsets, L)
    keep = cols < L
    if causal:
        keep &= cols <= rows
    rows, cols = rows[keep], cols[keep]
    return pattern_from_entries(L, rows, cols, _values(rows, cols, gamma, rng), normalize, as_csr)


@_shared_sections
def permutation_pattern(L, rng, *, normalize: bool = True, as_csr: bool = False):
    """A uniformly random permutation matrix: each token attends to exactly one token (maybe itself).

    It is 1-nonzero-bounded and 1-variation-bounded, the sparsest right-stochastic pattern; only
    criterion (7) has content for it.

    Parameters
    ----------
    L : int
    rng : numpy.random.Generator
    normalize, as_csr
        As in :func:`band_pattern` (the rows already sum to one).

    Returns
    -------
    numpy.ndarray or scipy.sparse.csr_array, shape (L, L)
        One nonzero, 1, in each row and each column.

    Raises
    ------
    ValueError, TypeError
        If ``L`` is not an integer ``>= 1`` or ``rng`` is not a :class:`numpy.random.Generator`.
    [size error]

    References
    ----------
    :ref:`ch-sparse-patterns`.
    """
    L = _check_dense_L(L, as_csr)
    rng = check_rng("rng", rng)
    rows = np.arange(L)
    cols = rng.permutation(L)
    return pattern_from_entries(L, rows, cols, np.ones(L), normalize, as_csr)


# The old names of this module's renamed functions warn and resolve for one release
# (sattn/_deprecation.py); imported last so that no line above moves.
from .._deprecation import module_getattr as _old_names  # noqa: E402

__getattr__ = _old_names(__name__)

"""How many supports a width-``d``, ``b``-bit input must tell apart: the book's width x bits bound.

If one attention matrix ``M`` (positive entries) met criterion (7) for two targets whose row
``l`` has supports ``S != S'`` of the *same size*, there would be ``j in S \\ S'`` and
``j' in S' \\ S`` with ``M[l, j'] <= eps2 M[l, j]`` and ``M[l, j] <= eps2 M[l, j']``, so
``M[l, j] <= eps2**2 M[l, j] < M[l, j]``: impossible for ``0 < eps2 < 1``. Hence, with the weights
fixed, targets with distinct supports need distinct inputs, and an input of ``L x d_in`` entries of
``b`` bits (at most ``2**(b L d_in)`` values) can serve at most that many supports:

    d_in * b >= log2 N / L.

This module counts ``N`` and bounds it:

* :func:`support_count` -- ``N(L, k)`` exactly (small ``L``): the number of supports of
  ``L x L`` targets with exactly ``k`` nonzeros in every row and at most ``k`` in every column (the
  k-nonzero-bounded class of the paper with full rows; then every column has exactly ``k`` too,
  and ``N(L, 1) = L!``), or, with ``causal``, of lower-triangular targets with exactly
  ``min(k, l + 1)`` nonzeros in row ``l`` (the class of the causal Theorem 2', which bounds rows
  only; ``N = prod_m C(m, min(k, m))``, again ``L!`` for ``k = 1``);
* :func:`width_bits_lower_bound` -- a certified lower bound on ``log2 N / L`` for any size;
* :func:`regular_pattern` -- a target of the class (row ``l`` attends to
  ``sigma(l), ..., sigma(l + k - 1)`` for a random permutation ``sigma``);
* :func:`nested_supports_example` -- why the rows must be full: with a row of fewer than ``k``
  nonzeros and ``eps1 >= 1/eps2 - 1``, one matrix meets (6)-(7) for two different supports.

The book explains all of this in :ref:`ch-width-bits`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sps

from .._validate import MAX_DENSE_L, as_matrix, check_bool, check_rng
from ..errors import SizeTooLargeError
from ..results import Result
from ..rounding import log_below
from .criteria import ApproximationReport, check_approximation, validate_tolerances
from .sparse import pattern_from_entries

__flat__ = [
    "NestedSupports", "enumerate_supports", "nested_supports_example", "regular_pattern",
    "support_count", "width_bits_lower_bound",
]
__all__ = [*__flat__, "target_supports"]

#: Largest ``L`` for :func:`support_count` (non-causal: the dynamic programme over column
#: capacities has ``C(L + k, k)`` states; causal: an integer with ``~ k L log2 L`` bits).
MAX_COUNT_L = 40
MAX_CAUSAL_COUNT_L = 4096
#: Largest ``L`` for :func:`width_bits_lower_bound` (every integer below it is a float64).
MAX_BOUND_L = 2 ** 53
#: Largest ``L`` (and ``L * k``) for :func:`regular_pattern`, which holds its ``L k`` nonzeros.
MAX_PATTERN_L = 2 ** 31
#: Largest ``k`` for :func:`width_bits_lower_bound` (its sums have ``k`` terms).
MAX_BOUND_K = 10 ** 6
#: Relative and absolute slack subtracted from the floating-point value of the bound, far above
#: the rounding error of its few dozen float64 operations (each off by at most 2**-53 relative).
_SLACK_REL, _SLACK_ABS = 1e-10, 1e-10


def _check_Lk(L, k, high):
    if isinstance(L, bool) or not isinstance(L, (int, np.integer)):
        raise TypeError(f"L must be an integer, got {L!r} ({type(L).__name__})")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an integer, got {k!r} ({type(k).__name__})")
    L, k = int(L), int(k)
    if L < 2:
        raise ValueError(f"L must be at least 2 (a support needs a choice of columns), got L = {L}")
    if L > high:
        raise SizeTooLargeError(f"L = {L} is too large for this computation: at most {high} (use "
                         "width_bits_lower_bound for large L)" if high < MAX_BOUND_L else
                         f"L = {L} is too large: at most 2**53 = {high}, where every length "
                         "is still exact in float64")
    if not 1 <= k <= L:
        raise ValueError(f"k must lie in [1, L] = [1, {L}] (nonzeros per row), got k = {k}")
    return L, k


def _compositions(total, parts):
    """Tuples of ``parts`` nonnegative integers summing to ``total``."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first,) + rest


def support_count(L, k, *, causal: bool = False) -> int:
    """The exact number ``N(L, k)`` of supports of the targets of the width x bits bound.

    Parameters
    ----------
    L : int
        Length, ``2 <= L <= 40`` (``causal``: ``<= 4096``).
    k : int
        Nonzeros per row, ``1 <= k <= L``.
    causal : bool, default False
        Count lower-triangular supports with exactly ``min(k, l + 1)`` nonzeros in row ``l``
        (no column condition) instead of ``L x L`` supports with exactly ``k`` nonzeros in every
        row and at most ``k`` in every column.

    Returns
    -------
    int
        ``N(L, k)``: ``L!`` for ``k = 1`` (both classes), 1 for ``k = L`` (non-causal).

    Raises
    ------
    TypeError
        ``L`` or ``k`` not an integer (bools are refused).
    ValueError
        ``L < 2``, ``k`` outside ``[1, L]``, or ``L`` above the limit (the message names it).

    Notes
    -----
    Non-causal: a dynamic programme over the rows whose state is how many columns have each
    remaining capacity ``0..k``; a row taking ``a_r`` columns of capacity ``r`` has
    ``prod_r C(h_r, a_r)`` choices. Causal: ``prod_{m=1}^{L} C(m, min(k, m))``.

    References
    ----------
    The k-nonzero-bounded class of Likhosherstov et al. (2021); the bound is the book's
    (:ref:`ch-width-bits`).
    """
    check_bool("causal", causal)
    L, k = _check_Lk(L, k, MAX_CAUSAL_COUNT_L if causal else MAX_COUNT_L)
    if causal:
        return math.prod(math.comb(m, min(k, m)) for m in range(1, L + 1))
    states = {(0,) * k + (L,): 1}          # h[r] = number of columns with remaining capacity r
    moves = list(_compositions(k, k))      # a[r - 1] columns taken from capacity r = 1..k
    for _ in range(L):
        nxt: dict = {}
        for h, ways in states.items():
            for a in moves:
                if any(a[r - 1] > h[r] for r in range(1, k + 1)):
                    continue
                mult = ways
                new = list(h)
                for r in range(1, k + 1):
                    if a[r - 1]:
                        mult *= math.comb(h[r], a[r - 1])
                        new[r] -= a[r - 1]
                        new[r - 1] += a[r - 1]
                key = tuple(new)
                nxt[key] = nxt.get(key, 0) + mult
        states = nxt
    return sum(states.values())


def target_supports(A):
    """``(L, k, cols)`` of a target of the width x bits class: ``cols[l]`` the support of row
    ``l`` (sorted), every row of the same size ``k`` with equal positive values.

    ``A`` is a square array or scipy.sparse matrix (explicit zeros are not on the support).
    Raises ``TypeError``/``ValueError`` naming ``A`` otherwise.
    """
    if sps.issparse(A):
        A = sps.csr_array(A, dtype=np.float64)
        if A.shape[0] != A.shape[1] or 0 in A.shape:
            raise ValueError(f"A must be a non-empty square matrix, got shape {A.shape}")
        if not np.isfinite(A.data).all():
            raise ValueError("A must contain only finite numbers")
    else:
        A = sps.csr_array(as_matrix("A", A, square=True))
    A.eliminate_zeros()
    A.sort_indices()
    L = A.shape[0]
    sizes = np.diff(A.indptr)
    if L < 2 or sizes.min() != sizes.max() or sizes[0] < 1:
        raise ValueError("A must have the same number k >= 1 of nonzeros in every row "
                         f"(L >= 2), got L = {L} and row sizes {sizes.min()}..{sizes.max()}")
    k = int(sizes[0])
    vals = A.data.reshape(L, k)
    if (vals <= 0).any() or (vals != vals[:, :1]).any():
        raise ValueError("A must have positive nonzeros, equal within each row (the class of the "
                         "width x bits bound)")
    return L, k, A.indices.reshape(L, k).astype(np.int64)


def _log2_factorial(n: int, upper: bool = False) -> float:
    """``log2 n!`` (exact below 64), else Robbins' lower (``upper``: upper) bound
    ``n ln n - n + ln(2 pi n)/2 + 1/(12 n + 1)`` (``1/(12 n)``), before the final slack."""
    if n < 64:
        return math.log2(math.factorial(n))
    ln = n * math.log(n) - n + 0.5 * math.log(2 * math.pi * n) + 1.0 / (12 * n + (0 if upper else 1))
    return ln / math.log(2)


def width_bits_lower_bound(L, k, *, causal: bool = False) -> float:
    """A certified lower bound on ``log2 N(L, k) / L``: the least ``d_in * b`` (bits per row).

    Parameters
    ----------
    L : int
        Length, ``2 <= L <= 2**53``.
    k : int
        Nonzeros per row, ``1 <= k <= min(L, 10**6)``.
    causal : bool, default False
        The causal class of :func:`support_count`.

    Returns
    -------
    float
        A number ``<= log2 N(L, k) / L`` (and ``>= 0``). For ``k = 1`` it is ``log2(L!) / L`` up
        to a relative ``1e-10`` (Stirling with Robbins' remainder), i.e.
        ``log2 L - log2 e + O(log L / L)``.

    Raises
    ------
    TypeError, ValueError
        As :func:`support_count` (the upper limit is ``2**53``).

    Notes
    -----
    Non-causal, ``k >= 2``: every support is a union of ``k`` disjoint permutation matrices. There
    are ``L!`` choices for the first; after ``i`` of them the complement is ``(L - i)``-regular, so
    by van der Waerden's bound (Egorychev, Falikman) it holds at least
    ``(L - i)**L L! / L**L`` permutations. One support arises from at most
    ``prod_{r=1}^{k} (r!)**(L/r)`` ordered tuples (Bregman's bound on the permanent of an
    ``r``-regular 0/1 matrix, applied after each removal). Hence

    ``log2 N / L >= k log2(L!)/L + sum_{i<k} log2(1 - i/L) - sum_{r<=k} log2(r!)/r``.

    Causal: ``C(m, k) >= (m/k)**k`` gives ``log2 N >= log2 L! - log2 (k-1)! - ...`` summed as
    ``sum_{m<k} log2 C(m, m) + sum_{m>=k} k log2(m / k)``, exact for ``k = 1``. The float value
    is lowered by a relative and absolute ``1e-10`` to cover rounding.

    References
    ----------
    Van der Waerden's permanent bound (Egorychev 1981, Falikman 1981); Bregman (1973); the
    theorem is the book's (:ref:`ch-width-bits`).
    """
    check_bool("causal", causal)
    L, k = _check_Lk(L, k, MAX_BOUND_L)
    if k > MAX_BOUND_K:
        raise ValueError(f"k = {k} is too large for the bound's sums: at most {MAX_BOUND_K}")
    if causal:
        # sum_{m=k}^{L} k log2(m / k) = k (log2 L! - log2 (k-1)!) - k (L - k + 1) log2 k
        total = k * (_log2_factorial(L) - _log2_factorial(k - 1, upper=True))
        value = (total - k * (L - k + 1) * math.log2(k)) / L
    else:
        value = k * _log2_factorial(L) / L
        value += sum(math.log2(1.0 - i / L) for i in range(1, k))
        value -= sum(_log2_factorial(r, upper=True) / r for r in range(1, k + 1))
    value -= _SLACK_REL * abs(value) + _SLACK_ABS
    return max(0.0, value)


def _disjoint_permutations(L, k, rng):
    """``k`` random permutations of ``range(L)`` (rows of the result) that differ at every
    position: each is uniform before its few collisions with the earlier ones are repaired by
    random transpositions (about ``i`` collisions for the ``i``-th)."""
    P = np.empty((k, L), dtype=np.int64)
    for i in range(k):
        p = rng.permutation(L)
        if i:
            taken = P[:i]

            def clash(l):
                return bool((taken[:, l] == p[l]).any())
            for l in np.flatnonzero((taken == p).any(axis=0)):
                tries = 0
                while clash(l):
                    tries += 1
                    if tries > 100 * L:      # never happens for k <= L / 2; a guard, not a path
                        raise RuntimeError(f"could not draw {k} disjoint permutations of {L}")
                    m = int(rng.integers(L))
                    p[l], p[m] = p[m], p[l]
                    if clash(l) or clash(m):
                        p[l], p[m] = p[m], p[l]
        P[i] = p
    return P


def regular_pattern(L, k, rng, *, normalize: bool = True, as_csr: bool = False,
                    structure: str = "windows"):
    """A target of the bound's class: every row and every column has exactly ``k`` nonzeros.

    ``structure="windows"``: row ``l`` attends to ``sigma(l), sigma(l + 1), ..., sigma(l + k - 1)``
    (indices mod ``L``) for a uniformly random permutation ``sigma`` (a cyclic window, a special
    member of the class for ``k >= 2``: windows on a circle are separated by width 3).
    ``structure="random"``: the union of ``k`` random permutations that differ at every row (a
    generic member). For ``k = 1`` both give the same uniformly random permutation from the same
    ``rng``. All nonzeros are equal.

    Parameters
    ----------
    L : int
        Length, ``2 <= L <= 2**31`` (dense: at most what numpy can address).
    k : int
        ``1 <= k <= L``, ``L k <= 2**31``; ``structure="random"`` needs ``k <= L / 2`` (or
        ``k = L``) and ``L k <= 2**24``.
    rng : numpy.random.Generator
    normalize : bool, default True
        Rows sum to one (values ``1/k``); else the nonzeros are 1.
    as_csr : bool, default False
        Return a :class:`scipy.sparse.csr_array`.
    structure : {"windows", "random"}, default "windows"
        Which supports (see above).

    Returns
    -------
    numpy.ndarray or scipy.sparse.csr_array, shape (L, L)

    References
    ----------
    :ref:`ch-width-bits`.
    """
    L, k = _check_Lk(L, k, MAX_PATTERN_L)
    rng = check_rng("rng", rng)
    check_bool("normalize", normalize)
    check_bool("as_csr", as_csr)
    if not as_csr and L > MAX_DENSE_L:
        raise SizeTooLargeError(f"L = {L} is too large for a dense L x L float64 array (at most "
                                f"{MAX_DENSE_L}, 4 GiB); pass as_csr=True")
    if L * k > MAX_PATTERN_L:
        raise SizeTooLargeError(f"L * k = {L * k} nonzeros is too many to hold (at most {MAX_PATTERN_L}); "
                         "sattn.stream_regular_blocks streams such a target in row blocks")
    if not isinstance(structure, str):
        raise TypeError(f"structure must be the string 'windows' or 'random', got "
                        f"{type(structure).__name__}")
    if structure not in ("windows", "random"):
        raise ValueError(f"structure must be 'windows' or 'random', got {structure!r}")
    rows = np.repeat(np.arange(L), k)
    if structure == "random" and k not in (1, L):
        if 2 * k > L:
            raise ValueError(f"structure='random' needs k <= L / 2 (or k = L), "
                             f"got k = {k}, L = {L}")
        if L * k > 2 ** 24:
            raise SizeTooLargeError(f"structure='random' draws L * k = {L * k} entries one "
                                    f"collision at a time: at most {2 ** 24}")
        cols = _disjoint_permutations(L, k, rng).T.ravel()
        return pattern_from_entries(L, rows, cols, np.ones(rows.size), normalize, as_csr)
    sigma = rng.permutation(L)
    cols = sigma[(rows + np.tile(np.arange(k), L)) % L]
    return pattern_from_entries(L, rows, cols, np.ones(rows.size), normalize, as_csr)


@dataclass(frozen=True)
class NestedSupports(Result):
    """Result of :func:`nested_supports_example`: one set of logits checked against two targets.

    ``A_small`` has one nonzero in row 0, ``A_full`` two (equal) ones; row 1 is the same.
    ``ok`` is true when the logits ``G`` meet (6)-(7) for *both* targets, i.e. when the
    distinct-support lemma fails for rows with fewer than ``k`` nonzeros.
    """

    ok: bool
    eps1: float
    eps2: float
    G: np.ndarray
    A_small: np.ndarray
    A_full: np.ndarray
    report_small: ApproximationReport
    report_full: ApproximationReport

    @property
    def message(self) -> str:
        verdict = ("one matrix meets (6)-(7) for both supports" if self.ok else
                   "no matrix meets both: the supports are told apart")
        return (f"eps1 = {self.eps1:g}, eps2 = {self.eps2:g} (1/eps2 - 1 = "
                f"{1 / self.eps2 - 1:.4g}): {verdict}")


def nested_supports_example(eps1, eps2) -> NestedSupports:
    """Two targets with different supports, both met by one attention matrix when allowed.

    With ``k = 2``, row 0 of ``A_small`` has the support ``{0}`` and row 0 of ``A_full`` the
    support ``{0, 1}`` with equal values. The logits of row 0 are ``(0, ln eps2)``: the smallest
    suppression (7) allows for ``A_small``. For ``A_full`` criterion (6) then asks
    ``1/eps2 <= 1 + eps1``. So one matrix serves both supports exactly when
    ``eps1 >= 1/eps2 - 1`` (and, for the targets of the bound, whose rows are full, never).

    Parameters
    ----------
    eps1, eps2 : float
        The tolerances, ``eps1 > 0`` and ``0 < eps2 < 1``.

    Returns
    -------
    NestedSupports

    References
    ----------
    Criteria (6)-(7) of Likhosherstov et al. (2021); :ref:`ch-width-bits`.
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    # ln(eps2) rounded down: the gap of (7) is then ln(eps2) up to one unit in the last place and
    # never above it, so the tie that the example is built on passes in exact arithmetic too
    low = float(log_below(eps2))
    G = np.array([[0.0, low], [low, 0.0]])
    A_small = np.array([[1.0, 0.0], [0.0, 1.0]])
    A_full = np.array([[0.5, 0.5], [0.0, 1.0]])
    r1 = check_approximation(G, A_small, eps1, eps2)
    r2 = check_approximation(G, A_full, eps1, eps2)
    return NestedSupports(ok=bool(r1.ok and r2.ok), eps1=eps1, eps2=eps2, G=G, A_small=A_small,
                          A_full=A_full, report_small=r1, report_full=r2)


def enumerate_supports(L, k, *, causal: bool = False):
    """Every support of the class of :func:`support_count`, as tuples of row supports, by
    brute force: a depth-first search over the rows' column choices that only prunes columns
    already full (tests and exercises; ``L <= 8``).

    Yields
    ------
    tuple of tuple of int
        Row ``l``'s support columns, for ``l = 0..L-1``.

    References
    ----------
    :ref:`ch-width-bits`.
    """
    check_bool("causal", causal)
    L, k = _check_Lk(L, k, 8)
    return _enumerate(L, k, causal)


def _enumerate(L, k, causal):
    choices = [list(itertools.combinations(range(l + 1 if causal else L),
                                           min(k, l + 1) if causal else k)) for l in range(L)]
    counts = [0] * L
    stack: list = []

    def visit(l):
        if l == L:
            yield tuple(stack)
            return
        for s in choices[l]:
            if not causal and any(counts[c] >= k for c in s):
                continue
            for c in s:
                counts[c] += 1
            stack.append(s)
            yield from visit(l + 1)
            stack.pop()
            for c in s:
                counts[c] -= 1
    yield from visit(0)

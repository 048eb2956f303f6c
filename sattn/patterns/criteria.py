"""The approximation criteria (6)-(7) of Likhosherstov, Choromanski & Weller, in the log domain.

A self-attention matrix ``M = SAM(X)`` approximates a target pattern ``A`` (both ``L x L``) when,
in every row ``l``,

* (6) the ratio of two weights on the support ``S_l = {j : A[l, j] > 0}`` matches the ratio of the
  targets within a factor ``1 +- eps1``, and
* (7) a weight off the support is at most ``eps2`` times any weight on the support.

Because ``M[l, j]`` is proportional to ``exp(G[l, j])`` with ``G = X W_Q W_K^T X^T``, the row
normaliser cancels in every ratio. With ``r[l, j] = G[l, j] - ln A[l, j]`` on ``S_l``:

* (6)  <=>  ``max_{S_l} r - min_{S_l} r <= ln(1 + eps1)``,
* (7)  <=>  ``max_{j not in S_l} G[l, j] - min_{j in S_l} G[l, j] <= ln(eps2)``.

This module checks both from the logits ``G`` without forming ``M``, so nothing underflows even
when ``eps2`` is tiny and ``L`` is large. It works in row blocks (:func:`check_rows`) so that a
caller can check an ``L x L`` logit matrix without holding it in memory. An explicit-ratio
reference, :func:`check_approximation_explicit`, implements (6)-(7) literally for tests.

The book explains all of this in :ref:`ch-approximation`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np
import scipy.sparse as sps

from .._validate import check_bool, check_callable, as_float_array, as_matrix, check_int, check_real
from ..results import Result
from ..rounding import UNIT_ROUNDOFF, first_of_largest

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = [
    "ApproximationReport", "check_approximation", "check_approximation_explicit",
    "check_attention_matrix", "check_rows", "merge_reports",
]
# The module's public names: the flat ones, then those that stay in this module.
__all__ = [*__flat__, "extremes_meet_criteria", "validate_tolerances"]


@dataclass(frozen=True)
class ApproximationReport(Result):
    """Result of checking criteria (6)-(7).

    Margins are in the log domain and are ``>= 0`` exactly when the criterion holds.

    Attributes
    ----------
    ok, ok6, ok7 : bool
        Both criteria / criterion (6) / criterion (7) hold in every checked row.
    eps1, eps2 : float
        The tolerances.
    ratio_spread : float
        Worst (over rows) ``max - min`` of ``r = G - ln A`` on the support; (6) holds iff it is
        ``<= ln(1 + eps1)``. ``exp(ratio_spread) - 1`` is the worst relative ratio error.
    margin6 : float
        ``ln(1 + eps1) - ratio_spread``.
    log_gap7 : float
        Worst (over rows) ``max_{off} G - min_{on} G``, the log of the largest ratio "weight off the
        support / weight on the support"; ``-inf`` when no row has a position off its support.
    margin7 : float
        ``ln(eps2) - log_gap7`` (``+inf`` when there is nothing to check).
    worst_row6, worst_pair6 : int, (int, int)
        Row attaining ``ratio_spread`` and its columns ``(j_max, j_min)`` of ``r``.
    worst_row7, worst_pair7 : int, (int, int)
        Row attaining ``log_gap7`` and its columns ``(j_off, j_on)``; ``None`` if nothing to check.
    rows_checked : int
        Number of rows examined.
    causal : bool
        Whether positions above the diagonal were ignored in (7).
    bound6, bound7 : float
        Largest rounding bound of a row's margin of (6) / (7) (the logits' own error, given as
        ``logit_error``, plus the rounding of the margin's evaluation). A row whose margin lies
        outside its band is decided the same on every machine; see ``sattn.rounding``.
    exact_rows : int
        Rows whose margin fell inside its band and whose decision was re-made in 200-bit
        arithmetic (from the exact logits, or from ``G`` itself when it carries no error).
    """

    ok: bool
    ok6: bool
    ok7: bool
    eps1: float
    eps2: float
    ratio_spread: float
    margin6: float
    log_gap7: float
    margin7: float
    worst_row6: int | None
    worst_pair6: tuple | None
    worst_row7: int | None
    worst_pair7: tuple | None
    rows_checked: int
    causal: bool = False
    bound6: float = 0.0
    bound7: float = 0.0
    exact_rows: int = 0

    @property
    def ratio_error(self) -> float:
        """Worst relative error of a ratio in (6), ``exp(ratio_spread) - 1``, to compare with eps1."""
        return math.expm1(self.ratio_spread) if self.ratio_spread < 700 else math.inf

    @property
    def ratio_error_text(self) -> str:
        """The worst ratio error as printed: ``"0"`` when the spread lies within its rounding
        bound (or below ``1e-9``), so that no printed digit is one that rounding decides."""
        if self.ratio_spread >= 700:
            return f"exp({self.ratio_spread:.4g}) - 1"
        if self.ratio_spread <= self.bound6 or self.ratio_error < 1e-9:
            return "0"
        return f"{self.ratio_error:.3g}"

    @property
    def worst_zero_ratio(self) -> float:
        """Largest ``M[l, j_off] / M[l, j_on]``, to compare with eps2 (may underflow to 0.0, and is
        ``inf`` where the ratio exceeds the float range, ``log_gap7 > 709``)."""
        if self.log_gap7 == -np.inf:
            return 0.0
        return math.exp(self.log_gap7) if self.log_gap7 < 709 else math.inf

    @property
    def message(self) -> str:
        """One line: pass/fail with the margins of both criteria."""
        s6 = (f"(6) {'ok' if self.ok6 else 'FAILS'}: worst ratio error {self.ratio_error_text} "
              f"{'<=' if self.ok6 else '>'} eps1 = {self.eps1:g} (row {self.worst_row6}, "
              f"columns {self.worst_pair6})")
        if self.worst_row7 is None:
            s7 = "(7) ok: no position off the support"
        else:
            ratio = (f"{self.worst_zero_ratio:.3g}" if -700 < self.log_gap7 < 700
                     else f"exp({self.log_gap7:.4g})")
            s7 = (f"(7) {'ok' if self.ok7 else 'FAILS'}: worst zero/support ratio "
                  f"{ratio} {'<=' if self.ok7 else '>'} eps2 = {self.eps2:g} "
                  f"(row {self.worst_row7}, columns {self.worst_pair7})")
        return f"{'PASS' if self.ok else 'FAIL'}; {s6}; {s7}"

    def __str__(self) -> str:
        return self.message


def validate_tolerances(eps1, eps2) -> tuple[float, float]:
    """Validate the tolerances of criteria (6)-(7): ``eps1 > 0`` and ``0 < eps2 < 1``.

    Returns them as floats; raises ``ValueError`` naming the tolerance and its range otherwise.
    Shared by every function of Part I that takes tolerances.
    """
    eps1 = check_real("eps1", eps1, low=0.0, low_open=True)
    eps2 = check_real("eps2", eps2, low=0.0, high=1.0, low_open=True, high_open=True)
    return eps1, eps2


def _make_report(eps1, eps2, spread, row6, pair6, gap7, row7, pair7, rows_checked, causal, *,
                 ok6=None, ok7=None, bound6=0.0, bound7=0.0, exact_rows=0):
    margin6 = math.log1p(eps1) - spread
    margin7 = math.log(eps2) - gap7 if gap7 > -np.inf else np.inf
    ok6 = margin6 >= 0 if ok6 is None else ok6
    ok7 = margin7 >= 0 if ok7 is None else ok7
    return ApproximationReport(
        ok=bool(ok6 and ok7), ok6=bool(ok6), ok7=bool(ok7), eps1=eps1, eps2=eps2,
        ratio_spread=float(spread), margin6=float(margin6), log_gap7=float(gap7),
        margin7=float(margin7), worst_row6=row6, worst_pair6=pair6, worst_row7=row7,
        worst_pair7=pair7, rows_checked=int(rows_checked), causal=bool(causal),
        bound6=float(bound6), bound7=float(bound7), exact_rows=int(exact_rows),
    )


#: Working precision (bits) of the re-made decisions inside the rounding band.
EXACT_BITS = 200
#: A worst row whose rounding band is wider than this is recomputed exactly before it is reported.
PRINTED_BAND = 1e-6


def _mp(x):
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    return mpmath.mpf(x)


def _exact_row(values, a_row, allowed_row):
    """Spread of (6) and gap of (7) of one row, with their columns, in 200-bit arithmetic from
    logits given exactly (floats, Fractions or mpmath numbers): ``(spread, jmax, jmin, gap, joff,
    jon)``, the spread and gap rounded to float64 (``gap = -inf`` with ``None`` columns when no
    position is off the support)."""
    with mpmath.workprec(EXACT_BITS):
        sup = [int(j) for j in np.flatnonzero(a_row > 0)]
        off = [int(j) for j in np.flatnonzero((a_row == 0) & allowed_row)]
        g = {j: _mp(values[j]) for j in (*sup, *off)}
        r = {j: g[j] - mpmath.log(mpmath.mpf(float(a_row[j]))) for j in sup}
        jmax = max(sup, key=lambda j: (r[j], -j))
        jmin = min(sup, key=lambda j: (r[j], j))
        spread = float(r[jmax] - r[jmin])
        if not off:
            return spread, jmax, jmin, -np.inf, None, None
        joff = max(off, key=lambda j: (g[j], -j))
        jon = min(sup, key=lambda j: (g[j], j))
        return spread, jmax, jmin, float(g[joff] - g[jon]), joff, jon


def _exact_sign(values, a_row, allowed_row, eps1, eps2, which) -> bool:
    """Whether the margin of (6) (``which = 6``) or (7) of a row is ``>= 0``, in 200-bit
    arithmetic from its exact logits (a margin within ``2**-190`` of 0 counts as a tie, and a tie
    passes: the criteria are ``<=``)."""
    with mpmath.workprec(EXACT_BITS):
        sup = [int(j) for j in np.flatnonzero(a_row > 0)]
        off = [int(j) for j in np.flatnonzero((a_row == 0) & allowed_row)]
        g = {j: _mp(values[j]) for j in (*sup, *off)}
        if which == 6:
            r = [g[j] - mpmath.log(mpmath.mpf(float(a_row[j]))) for j in sup]
            m = mpmath.log1p(mpmath.mpf(eps1)) - (max(r) - min(r))
        else:
            m = mpmath.log(mpmath.mpf(eps2)) - (max(g[j] for j in off) - min(g[j] for j in sup))
        return bool(m >= -mpmath.mpf(2) ** -190)


def _logit_error(logit_error, shape) -> np.ndarray:
    """``logit_error`` validated (finite, ``>= 0``) and broadcast to ``shape``."""
    err = as_float_array("logit_error", logit_error)
    if (err < 0).any():
        raise ValueError(f"logit_error must be >= 0, got a value {err[err < 0].flat[0]:g}")
    try:
        return np.broadcast_to(err, shape)
    except ValueError:
        raise ValueError(f"logit_error must be a scalar or broadcast to the logits' shape {shape}, "
                         f"got shape {err.shape}") from None


def _target_rows(A, rows, L):
    """Dense rows ``A[rows]`` of a dense or sparse ``A``, validated."""
    if sps.issparse(A):
        if A.shape != (L, L):
            raise ValueError(f"A must have shape ({L}, {L}) to match G (G_block), got {A.shape}")
        block = np.asarray(sps.csr_array(A)[rows].toarray(), dtype=np.float64)
        if not np.all(np.isfinite(block)):
            raise ValueError("A must contain only finite numbers")
        return block
    A = as_matrix("A", A, square=True)
    if A.shape[0] != L:
        raise ValueError(f"A must have shape ({L}, {L}) to match G (G_block), got {A.shape}")
    return A[rows]


def check_rows(G_block, rows, A, eps1, eps2, *, causal: bool = False, logit_error=0.0,
               exact_logits=None) -> ApproximationReport:
    """Check criteria (6)-(7) on a block of rows, from the logits of those rows only.

    Parameters
    ----------
    G_block : array_like, shape (b, L)
        Logits ``G[rows]`` (any additive constant per row is irrelevant). With ``causal`` the
        entries above the diagonal are ignored and may be ``-inf``.
    rows : array_like of int, shape (b,), or slice
        Indices of the rows of ``G_block`` in the full matrix.
    A : array_like or scipy.sparse matrix, shape (L, L)
        The target pattern (nonnegative; only its support and the ratios within rows matter).
    eps1 : float
        Tolerance of (6), ``eps1 > 0``.
    eps2 : float
        Tolerance of (7), ``0 < eps2 < 1``.
    causal : bool, default False
        Causal criteria: ``A`` must be lower triangular and (7) only concerns ``j <= l``.
    logit_error : float or array_like broadcastable to (b, L), default 0
        A bound on ``|G_block - exact logits|`` entrywise (e.g. from
        ``sattn.product_error_bound``); 0 when ``G_block`` is itself the object checked.
    exact_logits : callable, optional
        ``exact_logits(rows)`` returns the exact logits of those rows (shape (len(rows), L);
        Fractions, mpmath numbers or floats). Needed only when ``logit_error`` is nonzero and a
        row's margin falls inside its rounding band.

    Returns
    -------
    ApproximationReport
        Worst margins over the block; combine blocks with :func:`merge_reports`. Each row's
        decision is certified: outside its rounding band by the float margin, inside it in
        200-bit arithmetic (a margin exactly zero passes, as the criteria are ``<=``).

    Raises
    ------
    TypeError
        If ``G_block`` is not a real numeric array or ``rows`` holds non-integers.
    ValueError
        Malformed input, a negative entry of ``A``, a row of ``A`` without a nonzero, eps out of
        range, or (``causal``) a nonzero of ``A`` above the diagonal.

    References
    ----------
    Criteria (6)-(7) of Likhosherstov et al. (2021), in the log-domain form derived in :ref:`ch-approximation` (:prf:ref:`apx-prop-log`).
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    check_bool('causal', causal)
    G = as_float_array("G_block", G_block, finite=False)
    if G.ndim != 2:
        raise ValueError(f"G_block must be a 2-D array (rows x L), got shape {G.shape}")
    b, L = G.shape
    if L == 0 or b == 0:
        raise ValueError(f"G_block must be non-empty, got shape {G.shape}")
    if isinstance(rows, slice):
        rows = np.arange(L)[rows]
    else:
        rows_in = np.asarray(rows)
        if rows_in.dtype == bool or not np.issubdtype(rows_in.dtype, np.integer):
            raise TypeError(f"rows must be integer row indices or a slice, got dtype {rows_in.dtype}")
        if rows_in.ndim > 1:
            raise ValueError(f"rows must be a 1-D array of row indices, got shape {rows_in.shape}")
        rows = rows_in.astype(np.int64).reshape(-1)
    if rows.shape != (b,):
        raise ValueError(f"rows must list {b} row indices (one per row of G_block), got {rows.shape[0]}")
    if rows.size and (rows.min() < 0 or rows.max() >= L):
        raise ValueError(f"rows must lie in [0, {L - 1}], got values in [{rows.min()}, {rows.max()}]")
    Ab = _target_rows(A, rows, L)
    if (Ab < 0).any():
        r, c = np.argwhere(Ab < 0)[0]
        raise ValueError(f"A must be nonnegative, but A[{rows[r]}, {c}] = {Ab[r, c]:.6g}")
    S = Ab > 0
    empty = ~S.any(axis=1)
    if empty.any():
        r = int(rows[np.flatnonzero(empty)[0]])
        raise ValueError(f"row {r} of A has no nonzero entry: criteria (6)-(7) need a nonempty support")
    allowed = np.ones_like(S)
    if causal:
        allowed = np.arange(L)[None, :] <= rows[:, None]
        above = S & ~allowed
        if above.any():
            r, c = np.argwhere(above)[0]
            raise ValueError(
                f"causal=True needs a lower-triangular A, but A[{rows[r]}, {c}] = {Ab[r, c]:.6g} "
                f"is nonzero above the diagonal"
            )
    bad = ~np.isfinite(G) & allowed
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise ValueError(
            f"G must be finite{' on and below the diagonal' if causal else ''}, but "
            f"G[{rows[r]}, {c}] = {G[r, c]} (row {r} of G_block)"
        )
    logA = np.log(np.where(S, Ab, 1.0))
    R = G - logA
    rmax = np.where(S, R, -np.inf)
    rmin = np.where(S, R, np.inf)
    jmax = rmax.argmax(axis=1)
    jmin = rmin.argmin(axis=1)
    idx = np.arange(b)
    spread = rmax[idx, jmax] - rmin[idx, jmin]
    gon = np.where(S, G, np.inf)
    goff = np.where(~S & allowed, G, -np.inf)
    jon = gon.argmin(axis=1)
    joff = goff.argmax(axis=1)
    gap = goff[idx, joff] - gon[idx, jon]  # -inf for rows with nothing off the support
    # Rounding bands (Higham's model, 4u per rounded operation, generous): the logits' own error
    # plus the rounding of ln A, of G - ln A, of the differences and of the margins.
    u = UNIT_ROUNDOFF
    err = _logit_error(logit_error, G.shape)
    if exact_logits is not None:
        check_callable("exact_logits", exact_logits)
    # (6): r = G - ln A rounds once per entry and ln A carries NumPy's error (a few ulp);
    # (7): max and min of floats are exact, so only the logits' own error and the last
    # subtraction count.
    e_sup = np.where(S, err + 4 * u * (np.abs(np.where(S, G, 0.0)) + np.abs(logA)), 0.0).max(axis=1)
    e_all = np.where(allowed, err, 0.0).max(axis=1)
    l6, l7 = math.log1p(eps1), math.log(eps2)
    m6 = l6 - spread
    b6 = 2 * e_sup + 4 * u * (np.abs(spread) + l6)
    finite = gap > -np.inf
    m7 = np.where(finite, l7 - gap, np.inf)
    b7 = np.where(finite, 2 * e_all + 4 * u * (np.abs(np.where(finite, gap, 0.0)) - l7), 0.0)
    ok6_row, ok7_row = m6 >= 0, m7 >= 0
    unsure = (np.abs(m6) <= b6) | (finite & (np.abs(m7) <= b7))
    exact_rows = int(unsure.sum())
    if exact_rows:
        ui = np.flatnonzero(unsure)
        if exact_logits is not None:
            values = exact_logits(rows[ui])
        elif not err.any():
            values = G[ui]
        else:
            raise ValueError(
                f"row {int(rows[ui[0]])}: a margin lies within its rounding band, so floating point "
                "cannot decide it; pass exact_logits= (the exact logits of the rows) or "
                "logit_error=0 if G_block is exact")
        for pos, i in enumerate(ui):
            # the row's spread and gap, computed exactly and rounded once: its margins are then
            # exact up to one rounding, and their signs are decided in 200-bit arithmetic
            spread[i], jmax[i], jmin[i], gap[i], jo, jn = _exact_row(values[pos], Ab[i], allowed[i])
            if jo is not None:
                joff[i], jon[i] = jo, jn
            ok6_row[i] = _exact_sign(values[pos], Ab[i], allowed[i], eps1, eps2, 6)
            ok7_row[i] = gap[i] == -np.inf or _exact_sign(values[pos], Ab[i], allowed[i], eps1,
                                                          eps2, 7)
            b6[i] = 4 * u * (abs(spread[i]) + l6)
            b7[i] = 4 * u * (abs(gap[i]) - l7) if gap[i] > -np.inf else 0.0
    # the worst row: the largest value, rows within rounding of it tied; among tied rows one that
    # fails comes first (its decision is certified), then the lowest index
    w6 = first_of_largest(spread, 2 * float(b6.max()), prefer=~ok6_row)
    w7 = first_of_largest(gap, 2 * float(b7.max()), prefer=~ok7_row)
    # The worst rows' spread and gap are printed; where their band is wide enough to reach printed
    # digits (> PRINTED_BAND), they are recomputed exactly, so the printed margins are defined.
    wide = sorted({int(w) for w, band in ((w6, b6[w6]), (w7, b7[w7])) if band > PRINTED_BAND})
    if wide and (exact_logits is not None or not err.any()):
        values = exact_logits(rows[wide]) if exact_logits is not None else G[wide]
        for pos, i in enumerate(wide):
            spread[i], jmax[i], jmin[i], gap[i], jo, jn = _exact_row(values[pos], Ab[i], allowed[i])
            if jo is not None:
                joff[i], jon[i] = jo, jn
            b6[i] = 4 * u * (abs(spread[i]) + l6)
            b7[i] = 4 * u * (abs(gap[i]) - l7) if gap[i] > -np.inf else 0.0
    if gap[w7] == -np.inf:
        gap7, row7, pair7 = -np.inf, None, None
    else:
        gap7, row7, pair7 = float(gap[w7]), int(rows[w7]), (int(joff[w7]), int(jon[w7]))
    return _make_report(eps1, eps2, float(spread[w6]), int(rows[w6]), (int(jmax[w6]), int(jmin[w6])),
                        gap7, row7, pair7, b, causal, ok6=bool(ok6_row.all()),
                        ok7=bool(ok7_row.all()), bound6=float(b6.max()), bound7=float(b7.max()),
                        exact_rows=exact_rows)


def merge_reports(reports) -> ApproximationReport:
    """Combine reports of disjoint row blocks (same eps1, eps2, causal) into one.

    Parameters
    ----------
    reports : iterable of ApproximationReport
        At least one report, e.g. from :func:`check_rows` on consecutive row blocks.

    Returns
    -------
    ApproximationReport
        The worst margins over all blocks; ``rows_checked`` is the total.

    Raises
    ------
    TypeError
        If an item is not an :class:`ApproximationReport`.
    ValueError
        If there is no report, or the reports differ in ``eps1``, ``eps2`` or ``causal``.

    References
    ----------
    :ref:`ch-approximation`.
    """
    try:
        reports = list(reports)
    except TypeError:
        raise TypeError(f"reports must be an iterable of ApproximationReport, got {type(reports).__name__}") from None
    if not reports:
        raise ValueError("reports must hold at least one report, got none")
    for i, r in enumerate(reports):
        if not isinstance(r, ApproximationReport):
            raise TypeError(f"reports[{i}] must be an ApproximationReport, got {type(r).__name__}")
    first = reports[0]
    for r in reports[1:]:
        if (r.eps1, r.eps2, r.causal) != (first.eps1, first.eps2, first.causal):
            raise ValueError(
                "merge_reports: all reports must share eps1, eps2 and causal, got "
                f"{(first.eps1, first.eps2, first.causal)} and {(r.eps1, r.eps2, r.causal)}"
            )
    bound6 = max(r.bound6 for r in reports)
    bound7 = max(r.bound7 for r in reports)
    w6 = reports[first_of_largest([r.ratio_spread for r in reports], 2 * bound6,
                                  prefer=np.array([not r.ok6 for r in reports]))]
    w7 = reports[first_of_largest([r.log_gap7 for r in reports], 2 * bound7,
                                  prefer=np.array([not r.ok7 for r in reports]))]
    return _make_report(first.eps1, first.eps2, w6.ratio_spread, w6.worst_row6, w6.worst_pair6,
                        w7.log_gap7, w7.worst_row7, w7.worst_pair7,
                        sum(r.rows_checked for r in reports), first.causal,
                        ok6=all(r.ok6 for r in reports), ok7=all(r.ok7 for r in reports),
                        bound6=bound6, bound7=bound7, exact_rows=sum(r.exact_rows for r in reports))


def check_approximation(G, A, eps1, eps2, *, causal: bool = False, block_rows: int = 512,
                        logit_error=0.0, exact_logits=None) -> ApproximationReport:
    """Check criteria (6)-(7) for ``M = SAM`` with logits ``G``, without forming ``M``.

    Parameters
    ----------
    G : array_like, shape (L, L)
        Logits ``X W_Q W_K^T X^T`` (row shifts do not matter). With ``causal`` the entries above
        the diagonal are ignored and may be ``-inf`` (as returned by
        ``attention_logits(..., causal=True)``).
    A : array_like or scipy.sparse matrix, shape (L, L)
        Target pattern: nonnegative, at least one nonzero per row.
    eps1 : float
        Ratio tolerance of (6), ``eps1 > 0``.
    eps2 : float
        Suppression tolerance of (7), ``0 < eps2 < 1``.
    causal : bool, default False
        Check against the causal model ``SAM^c``: ``A`` must be lower triangular, and (7) is only
        required for positions ``j <= l``.
    block_rows : int, default 512
        Rows processed at a time (bounds the temporary memory to a few ``block_rows x L`` arrays).
    logit_error, exact_logits
        As in :func:`check_rows` (``logit_error`` a scalar or an ``L x L`` array).

    Returns
    -------
    ApproximationReport
        ``ok``, the worst margins of (6) and (7) and the offending rows and column pairs.

    Raises
    ------
    ValueError
        If ``G`` or ``A`` is malformed (shape, NaN), ``A`` has a negative entry or an empty row,
        ``eps1``/``eps2`` is out of range, or ``causal`` and ``A`` is not lower triangular.

    References
    ----------
    Criteria (6)-(7) of Likhosherstov et al. (2021) (equation numbers of arXiv:2106.03764; exact
    form reconstructed in the book); log-domain form: :prf:ref:`apx-prop-log`.
    """
    G = as_matrix("G", G, square=True, finite=False)
    block_rows = check_int("block_rows", block_rows, low=1)
    L = G.shape[0]
    if np.isnan(G).any():
        r, c = np.argwhere(np.isnan(G))[0]
        raise ValueError(f"G must not contain NaN, but G[{r}, {c}] = nan")
    err = _logit_error(logit_error, G.shape) if np.ndim(logit_error) == 2 else logit_error
    reports = [
        check_rows(G[s:s + block_rows], np.arange(s, min(s + block_rows, L)), A, eps1, eps2,
                   causal=causal, logit_error=err[s:s + block_rows] if np.ndim(err) == 2 else err,
                   exact_logits=exact_logits)
        for s in range(0, L, block_rows)
    ]
    return merge_reports(reports)


def check_attention_matrix(M, A, eps1, eps2, *, causal: bool = False) -> ApproximationReport:
    """Check criteria (6)-(7) for a given attention matrix ``M`` (computed by any means).

    For a matrix that did not come from logits the package holds: a pass in a low-precision
    format, another library's kernel. The criteria are decided on ``ln M``: NumPy's logarithm
    (whose last bits depend on the CPU) is certified against a band of 4 units in the last place,
    and a row whose margin falls inside that band is decided again from the exact logarithms of
    ``M``'s entries (200-bit arithmetic). The verdict is therefore a function of ``M``'s values
    alone, the same on every machine. A zero entry counts as ``ln 0``, below every other logit,
    so a zero on the support of ``A`` fails (6).

    Parameters
    ----------
    M : array_like, shape (L, L)
        Nonnegative and finite; with ``causal`` the entries above the diagonal are ignored.
    A, eps1, eps2, causal
        As in :func:`check_approximation`.

    Returns
    -------
    ApproximationReport

    Raises
    ------
    ValueError
        If ``M`` is not a finite square matrix, has a negative entry, or its shape is not that of
        ``A``; the errors of :func:`check_approximation` otherwise.

    References
    ----------
    Criteria (6)-(7) of Likhosherstov et al. (2021); Chapter :ref:`ch-finite-precision`.
    """
    M = as_matrix("M", M, square=True)
    if (M < 0).any():
        r, c = np.argwhere(M < 0)[0]
        raise ValueError(f"M must be nonnegative, but M[{r}, {c}] = {M[r, c]:.6g}")
    if not sps.issparse(A):
        A = as_matrix("A", A, square=True)
    if A.shape != M.shape:
        raise ValueError(f"A must have the shape of M, {M.shape}, got {A.shape}")
    with np.errstate(divide="ignore"):
        G = np.log(np.where(M > 0, M, 1.0))
    G = np.where(M > 0, G, ZERO_LOGIT)
    err = np.where(M > 0, 4 * UNIT_ROUNDOFF * np.abs(G), 0.0)
    return check_approximation(G, A, eps1, eps2, causal=causal, logit_error=err,
                               exact_logits=_exact_log_rows(M))


def extremes_meet_criteria(on_min, on_max, off_max, eps1, eps2) -> np.ndarray:
    """Criteria (6)-(7) per row from the extremes of computed weights, for targets whose nonzeros
    in a row are equal; decided exactly.

    For such a target (6) reads ``max_S M <= (1 + eps1) min_S M`` and (7)
    ``max_{not S} M <= eps2 min_S M`` in each row (``S`` its support), so a row is settled by three
    numbers. The weights are floats, hence exact dyadic rationals: each inequality is decided in
    float64 where the two sides differ by more than ``1e-12`` of their size (the product's rounding
    is below ``2**-52`` of it) and otherwise in exact rational arithmetic. A zero (or non-finite)
    weight on the support fails the row.

    Parameters
    ----------
    on_min, on_max : array_like, shape (n,)
        Smallest and largest weight on each row's support.
    off_max : array_like, shape (n,)
        Largest weight off the support (0 for a row whose support is the whole row).
    eps1, eps2 : float
        Tolerances (:func:`validate_tolerances`).

    Returns
    -------
    numpy.ndarray of bool, shape (n,)

    References
    ----------
    Criteria (6)-(7) of Likhosherstov et al. (2021); Chapters :ref:`ch-finite-precision` and
    :ref:`ch-width-bits`.
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    lo, hi, off = (np.asarray(v, dtype=np.float64).ravel() for v in (on_min, on_max, off_max))
    if not lo.shape == hi.shape == off.shape:
        raise ValueError(f"on_min, on_max and off_max must have one length, got {lo.shape}, "
                         f"{hi.shape} and {off.shape}")
    alive = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(off) & (lo > 0)
    ok = alive.copy()
    for big, exact in ((hi, 1 + Fraction(eps1)), (off, Fraction(eps2))):
        with np.errstate(invalid="ignore", over="ignore"):
            rhs = np.where(alive, float(exact) * lo, 0.0)
        close = alive & (np.abs(big - rhs) <= 1e-12 * np.abs(rhs))
        ok &= close | (big <= rhs)
        for i in np.flatnonzero(close):
            ok[i] &= Fraction(float(big[i])) <= exact * Fraction(float(lo[i]))
    return ok


#: The logit that stands for ``ln 0`` in :func:`check_attention_matrix` (finite, below every
#: logarithm of a float64).
ZERO_LOGIT = -1e300


def _exact_log_rows(M):
    """``rows -> ln M[rows]`` in 200-bit arithmetic (``ZERO_LOGIT`` where ``M`` is 0)."""
    def rows_of(rows):
        with mpmath.workprec(EXACT_BITS):
            return [[mpmath.log(mpmath.mpf(float(v))) if v > 0 else ZERO_LOGIT
                     for v in M[int(r)]] for r in rows]
    return rows_of


def check_approximation_explicit(M, A, eps1, eps2, *, causal: bool = False) -> ApproximationReport:
    """Reference implementation of (6)-(7) by explicit ratios of entries of ``M`` (small L only).

    Loops over every row and every ordered pair of columns and tests the inequalities literally:
    ``(1 - eps1) A1/A2 <= M1/M2 <= (1 + eps1) A1/A2`` on the support and ``M_off / M_on <= eps2``.
    Use it only to cross-check :func:`check_approximation` on small, well-scaled cases; it divides
    entries of ``M`` and so fails when entries underflow.

    Parameters
    ----------
    M : array_like, shape (L, L)
        Self-attention matrix (positive entries; zero above the diagonal when ``causal``).
    A : array_like, shape (L, L)
        Target pattern: nonnegative, same shape as ``M``, at least one nonzero per row.
    eps1, eps2, causal
        As in :func:`check_approximation`.

    Returns
    -------
    ApproximationReport
        ``ok6``/``ok7`` from the literal inequalities; ``ratio_spread`` and ``log_gap7`` are the
        logs of the worst explicit ratios, so they agree with :func:`check_approximation` up to
        rounding.

    Raises
    ------
    ValueError
        If ``M`` or ``A`` is malformed, their shapes differ, ``A`` has a negative entry or an
        empty row, ``M`` has a negative entry or a zero (e.g. underflowed) entry on the support
        of ``A``, or eps is out of range.

    References
    ----------
    Criteria (6)-(7) of Likhosherstov et al. (2021); :ref:`ch-approximation`.
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    check_bool('causal', causal)
    M = as_matrix("M", M, square=True)
    A = as_matrix("A", A, square=True)
    if A.shape != M.shape:
        raise ValueError(f"A must have the shape of M, {M.shape}, got {A.shape}")
    for name, X in (("A", A), ("M", M)):
        if (X < 0).any():
            r, c = np.argwhere(X < 0)[0]
            raise ValueError(f"{name} must be nonnegative, but {name}[{r}, {c}] = {X[r, c]:.6g}")
    if ((A > 0) & (M == 0)).any():
        r, c = np.argwhere((A > 0) & (M == 0))[0]
        raise ValueError(
            f"M[{r}, {c}] = 0 on the support of A (A[{r}, {c}] = {A[r, c]:.6g}): the explicit "
            "ratios are undefined (underflow?); use check_approximation on the logits"
        )
    L = M.shape[0]
    ok6 = ok7 = True
    spread, row6, pair6 = -np.inf, None, None
    gap7, row7, pair7 = -np.inf, None, None
    for l in range(L):
        support = [j for j in range(L) if A[l, j] > 0]
        if not support:
            raise ValueError(f"row {l} of A has no nonzero entry")
        zeros = [j for j in range(L) if A[l, j] == 0 and (not causal or j <= l)]
        for j1 in support:
            for j2 in support:
                ratio = (M[l, j1] / M[l, j2]) / (A[l, j1] / A[l, j2])
                if not ((1 - eps1) <= ratio <= (1 + eps1)):
                    ok6 = False
                if math.log(ratio) > spread:
                    spread, row6, pair6 = math.log(ratio), l, (j1, j2)
            for j0 in zeros:
                ratio = M[l, j0] / M[l, j1]
                if ratio > eps2:
                    ok7 = False
                lg = math.log(ratio) if ratio > 0 else -np.inf
                if lg > gap7:
                    gap7, row7, pair7 = lg, l, (j0, j1)
    rep = _make_report(eps1, eps2, spread, row6, pair6, gap7, row7, pair7, L, causal)
    # The pass/fail flags are those of the literal inequalities, not of the margins.
    return ApproximationReport(**{**rep.__dict__, "ok6": ok6, "ok7": ok7, "ok": ok6 and ok7})


# The old names of this module's renamed functions warn and resolve for one release
# (sattn/_deprecation.py); imported last so that no line above moves.
from .._deprecation import module_getattr as _old_names  # noqa: E402

__getattr__ = _old_names(__name__)

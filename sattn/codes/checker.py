"""One checker for code inputs: criteria (6)-(7) exactly, in a fixed grid and a float format.

:func:`~sattn.check_code_input` decides (6)-(7) from the integer logits, never forming an ``L x L``
array: by enumerating the keys nearest each query, or from exact products in row blocks. The same
per-row extremes decide the whole pass in a ``p``-bit float format. :ref:`ch-width-bits`.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import mpmath
import numpy as np

from .._validate import check_bool
from ..results import Result
from ..patterns.criteria import extremes_meet_criteria, validate_tolerances
from ..precision.formats import FormatArithmetic, exponent_bits
from ..precision.forward import softmax_extremes_in
from ..patterns.supports import target_supports
from .inputs import CodeInput

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = ["CodeReport", "check_code_input"]
__all__ = [*__flat__, "MAX_CANDIDATE_P", "MAX_CANDIDATES", "MAX_ENUM_BITS", "MAX_FREE",
           "MAX_SUM_ENTRIES"]

#: Largest key length (bits) of the enumerating checker (keys are held as 64-bit integers).
MAX_ENUM_BITS = 62
#: Largest number of free positions (where a query is 0) whose fillings the checker enumerates.
MAX_FREE = 6
#: Largest number of candidate keys per query (all radii) that the enumerating checker tries;
#: beyond it ``"auto"`` checks in row blocks.
MAX_CANDIDATES = 50_000


@dataclass(frozen=True)
class CodeReport(Result):
    """Criteria (6)-(7) for a :class:`CodeInput`, decided exactly, in a fixed grid and a float format.

    Attributes
    ----------
    ok : bool
        The fixed-grid input (exact logits) meets (6) and (7).
    spread, gap : int
        Worst ``max - min`` of the integer logits on a support, and worst ``max off - min on``
        (``gap < 0`` is a pass of (7) when ``-gap * unit**2 >= ln(1/eps2)``).
    margin6, margin7 : float
        ``ln(1 + eps1) - unit**2 spread`` and ``ln(eps2) - unit**2 gap``.
    float_p : int or None
        Least significand ``p`` (2..24) with which the whole pass in a ``p``-bit format meets
        (6)-(7), decided from the same extremes, and a row they leave open from its whole softmax
        in the format (``None`` if not asked or none passes).
    float_open : tuple of int
        Significands below ``float_p`` that stayed undecided (the open rows held more than
        ``MAX_SUM_ENTRIES`` logits) and were counted as failing; empty when every one was decided.
    float_bits, exponent_bits : int or None
        ``1 + e + (p - 1)``, and ``e``.
    method : str
        ``"enumerate"`` (keys nearest each query) or ``"blocks"`` (exact products in row blocks).
    rows_checked : int
    seconds : float
    """

    ok: bool
    eps1: float
    eps2: float
    spread: int
    gap: int
    margin6: float
    margin7: float
    float_p: int | None
    float_open: tuple
    float_bits: int | None
    exponent_bits: int | None
    method: str
    rows_checked: int
    seconds: float

    @property
    def message(self) -> str:
        fl = ("" if self.float_p is None else
              f"; float format: p = {self.float_p}, {self.float_bits} bits")
        gap = f"{self.gap}"
        return (f"{'PASS' if self.ok else 'FAIL'} ({self.method}, {self.rows_checked} rows): "
                f"spread on supports {self.spread}, off-support gap {gap} (margins "
                f"{self.margin6:.4g} (6), {self.margin7:.4g} (7)){fl}")


def _popcount(x):
    return np.bitwise_count(x.astype(np.uint64)).astype(np.int64)


def _pack(M: np.ndarray) -> np.ndarray:
    """Rows of a 0/1 matrix (``m <= 62`` columns) as integers (column ``i`` -> bit ``i``)."""
    return (M.astype(np.int64) << np.arange(M.shape[1], dtype=np.int64)).sum(axis=1)


def _extremes_enumerate(code: CodeInput, cols, r_max=2):
    """Per row: ``(on_min, on_max, off_max, off_is_bound)`` of the integer logits, by enumerating
    the keys nearest each query.

    Keys must take two values ``lo < hi`` (a key is the set of its ``hi`` positions) and each
    query's nonzero entries one size ``c``. The logit of key ``x`` is
    ``lo sum(q) + (hi - lo) sum_i q_i x_i``: largest (``top``) for the pattern that holds ``hi``
    exactly where ``q_i (hi - lo) > 0`` on the query's nonzero positions, and ``c (hi - lo) r``
    lower for a key that differs from it in ``r`` of those positions, whatever it holds where
    ``q`` is 0. For ``r = 0, 1, ..., r_max`` the candidates (``r`` flips, every filling of the
    zero positions; only fillings of the keys' common weight when all keys have one) are looked up
    in the sorted keys; the first ``r`` with a key off the support gives the row's off-support
    maximum, and beyond ``r_max`` it is bounded by ``top - c (hi - lo) (r_max + 1)``."""
    Kv = np.unique(code.K)
    if Kv.size > 2 or code.d > MAX_ENUM_BITS:
        raise ValueError("enumeration needs keys with two values and at most "
                         f"{MAX_ENUM_BITS} entries")
    lo, hi = (int(Kv[0]), int(Kv[-1])) if Kv.size == 2 else (int(Kv[0]) - 1, int(Kv[0]))
    D = hi - lo
    L, d = code.L, code.d
    Q = code.Q.astype(np.int64)
    mag = np.abs(Q).max(axis=1)
    if ((Q != 0) & (np.abs(Q) != mag[:, None])).any():
        raise ValueError("enumeration needs each query's nonzero entries of equal size")
    keys = _pack(code.K == hi)
    order = np.argsort(keys, kind="stable")
    skeys = keys[order]
    if np.unique(skeys).size != L:
        raise ValueError("repeated keys: enumeration needs distinct keys")
    weights = np.unique(_popcount(keys))
    const_w = int(weights[0]) if weights.size == 1 else None
    K64 = code.K.astype(np.int64)
    on = np.einsum("li,lki->lk", Q, K64[cols])
    on_min, on_max = on.min(axis=1), on.max(axis=1)
    Zm = _pack(Q != 0)
    ideal = _pack(Q * D > 0)
    free = ((1 << d) - 1) & ~Zm
    nfree = _popcount(free)
    f = int(nfree.max())
    if const_w is None and f > MAX_FREE:
        raise ValueError(f"enumeration fills at most {MAX_FREE} zero positions per query")
    top = lo * Q.sum(axis=1) + abs(D) * mag * _popcount(ideal)
    freebits = np.zeros((L, f), dtype=np.int64)
    rest = free.copy()
    for i in range(f):                   # the i-th zero position of each row (0 if none)
        low = rest & -rest
        freebits[:, i] = low
        rest &= ~low
    if const_w is None:
        wanted = range(f + 1)
    else:                                # sizes of the fillings that radius <= r_max can need
        base_w = np.unique(const_w - _popcount(ideal))
        wanted = sorted({int(v) for w in base_w.tolist() for v in range(w - r_max, w + r_max + 1)
                         if 0 <= v <= f})
    n_fills = sum(math.comb(f, s) for s in wanted)
    if n_fills > 4096 or n_fills * sum(math.comb(d, r) for r in range(r_max + 1)) > MAX_CANDIDATES:
        raise ValueError("too many candidates per query to enumerate")
    combos_of = {s: (np.array(list(itertools.combinations(range(f), s)), dtype=np.int64)
                     if s else np.zeros((1, 0), dtype=np.int64)) for s in wanted}
    off_max = np.full(L, np.iinfo(np.int64).min)
    found = np.zeros(L, dtype=bool)
    bitpos = 1 << np.arange(d, dtype=np.int64)
    for r in range(r_max + 1):
        todo = np.flatnonzero(~found)
        flips = (np.array(list(itertools.combinations(range(d), r)), dtype=np.int64) if r
                 else np.zeros((1, 0), dtype=np.int64))
        fl = np.bitwise_or.reduce(bitpos[flips], axis=1) if r else np.zeros(1, dtype=np.int64)
        chunk = max(1, (1 << 21) // (fl.size * max(c.shape[0] for c in combos_of.values())))
        for s0 in range(0, todo.size, chunk):
            rows = todo[s0:s0 + chunk]
            okf = (((Zm[rows, None] & bitpos[None, :]) != 0)[:, flips].all(axis=2) if r
                   else np.ones((rows.size, 1), dtype=bool))
            base = ideal[rows, None] ^ fl[None, :]
            if const_w is None:
                sizes = range(f + 1)
            else:                        # a key of weight const_w: the filling's size is fixed
                need = const_w - _popcount(base)
                sizes = [int(v) for v in np.unique(need[okf]) if int(v) in combos_of]
            hit_any = np.zeros(rows.size, dtype=bool)
            for sz in sizes:
                cmb = combos_of[sz]
                fills = (np.bitwise_or.reduce(freebits[rows][:, cmb], axis=2) if sz
                         else np.zeros((rows.size, 1), dtype=np.int64))
                valid = okf if const_w is None else okf & (need == sz)
                if not valid.any():
                    continue
                cand = (base[:, :, None] | fills[:, None, :]).reshape(rows.size, -1)
                valid = np.broadcast_to(valid[:, :, None],
                                        (rows.size, fl.size, fills.shape[1])).reshape(rows.size, -1)
                pos = np.minimum(np.searchsorted(skeys, cand), L - 1)
                hit = valid & (skeys[pos] == cand)
                hit &= ~(order[pos][:, :, None] == cols[rows][:, None, :]).any(axis=2)
                hit_any |= hit.any(axis=1)
            rr = rows[hit_any]
            off_max[rr] = top[rr] - abs(D) * mag[rr] * r
            found[rr] = True
    bound = ~found
    off_max[bound] = top[bound] - abs(D) * mag[bound] * (r_max + 1)
    return on_min, on_max, off_max, bound


def _extremes_blocks(code: CodeInput, cols, block_rows=None, rows=None):
    """Per row (or for ``rows`` only): ``(on_min, on_max, off_max, False)`` from exact products in
    row blocks (float32 products of small integers are exact: every partial sum stays below
    2**24)."""
    L, d = code.L, code.d
    which = np.arange(L) if rows is None else np.asarray(rows)
    amax = int(np.abs(code.Q).max(initial=0)) * int(np.abs(code.K).max(initial=0))
    if amax * d >= 2 ** 24:
        raise ValueError("the products could exceed 2**24: not exact in float32")
    block_rows = block_rows or max(1, min(L, (32 << 20) // (4 * L)))
    Kt = np.ascontiguousarray(code.K.T.astype(np.float32))
    Qf = code.Q.astype(np.float32)
    on_min = np.empty(which.size, dtype=np.int64)
    on_max = np.empty(which.size, dtype=np.int64)
    off_max = np.empty(which.size, dtype=np.int64)
    for s in range(0, which.size, block_rows):
        out = np.arange(s, min(s + block_rows, which.size))
        rows = which[out]
        G = Qf[rows] @ Kt
        on = np.take_along_axis(G, cols[rows], axis=1)
        on_min[out], on_max[out] = on.min(axis=1), on.max(axis=1)
        np.put_along_axis(G, cols[rows], -np.inf, axis=1)
        off_max[out] = G.max(axis=1) if L > cols.shape[1] else np.iinfo(np.int64).min
    return on_min, on_max, off_max, np.zeros(which.size, dtype=bool)


def _row_logits(code: CodeInput, rows) -> np.ndarray:
    """The integer logits ``Q[rows] K^T`` of ``code``, exactly (float32 products of small integers
    when every partial sum stays below 2**24, int64 otherwise), as float64."""
    amax = int(np.abs(code.Q).max(initial=0)) * int(np.abs(code.K).max(initial=0))
    if amax * code.d < 2 ** 24:
        return (code.Q[rows].astype(np.float32) @ code.K.T.astype(np.float32)).astype(np.float64)
    return (code.Q[rows].astype(np.int64) @ code.K.T.astype(np.int64)).astype(np.float64)


#: Most logits (rows x L) that the float check of :func:`check_code_input` computes to settle the
#: rows its extremes leave open.
MAX_SUM_ENTRIES = 1 << 31
#: Largest significand for which the float check of :func:`check_code_input` tries every possible
#: row sum (``2**(p-1)`` of them) before it sums a row.
MAX_CANDIDATE_P = 12


def _float_pass(on_min, on_max, off_max, unit, p, eps1, eps2, *, code=None, cols=None):
    """Whether the whole pass in a ``p``-bit format meets (6)-(7) in every row, from the rows'
    extreme logits: rounding is monotone, so the extremes of ``M`` sit at the extreme logits;
    the row sum ``S`` enters only through ``r(E / S)``, within a factor ``(1 +- 2**-p)``, and a row
    is accepted only if it passes for every such factor. A row this leaves open is tried with
    every possible sum (``S`` is a value of the format, and a power of two cancels, so its
    ``2**(p-1)`` significands are all the cases): it passes if it passes for each and fails if it
    fails for each. A row still open is settled
    exactly when ``code`` and ``cols`` are given: its whole softmax is computed in the format
    (:func:`~sattn.precision.forward.softmax_extremes_in`, the row sum in index order) and decided
    from its extreme weights (:func:`~sattn.patterns.criteria.extremes_meet_criteria`). Returns
    ``None`` (undecided) only without them, or when the open rows hold more than
    ``MAX_SUM_ENTRIES`` logits."""
    ar = FormatArithmetic(p)
    u = 2.0 ** -p
    G = ar.r(np.stack([on_min, on_max, off_max]).astype(np.float64) * unit ** 2)
    has_off = off_max > np.iinfo(np.int64).min // 2
    Gmax = np.where(has_off, np.maximum(G[1], G[2]), G[1])
    E = ar.exp(ar.sub(G, Gmax[None, :]))
    lo_f, hi_f = math.log((1 - u) / (1 + u)), math.log((1 + u) / (1 - u))
    with np.errstate(divide="ignore"):
        lE = np.log(E)
    spread = lE[1] - lE[0]
    gap = np.where(has_off, lE[2] - lE[0], -np.inf)
    l6, l7 = math.log1p(eps1), math.log(eps2)
    sure = (spread + hi_f < l6 - 1e-12) & (gap + hi_f < l7 - 1e-12) & (E[0] > 0)
    fail = (spread + lo_f > l6 + 1e-12) | (gap + lo_f > l7 + 1e-12) | (E[0] == 0)
    if sure.all():
        return True
    if fail.any():
        return False
    open_rows = np.flatnonzero(~sure)
    if p <= MAX_CANDIDATE_P:
        # S itself is a value of the format, and only its significand matters: a power of two
        # scales both r(E/S) alike. Try every p-bit significand in [1, 2) for the open rows.
        ext = np.stack([E[0, open_rows], E[1, open_rows],
                        np.where(has_off[open_rows], E[2, open_rows], 0.0)])
        passes = np.stack([extremes_meet_criteria(*ar.div(ext, 1.0 + i * 2.0 ** (1 - p)), eps1, eps2)
                           for i in range(2 ** (p - 1))], axis=1)
        if not passes.any(axis=1).all():         # a row that fails whatever its sum
            return False
        open_rows = open_rows[~passes.all(axis=1)]
        if open_rows.size == 0:
            return True
    L = on_min.size
    if code is None or cols is None or open_rows.size * L > MAX_SUM_ENTRIES:
        return None
    block = max(1, (1 << 22) // L)
    for s in range(0, open_rows.size, block):
        rows = open_rows[s:s + block]
        logits = ar.r(_row_logits(code, rows) * unit ** 2)
        if not extremes_meet_criteria(*softmax_extremes_in(logits, cols[rows], p), eps1, eps2).all():
            return False
    return True


def check_code_input(code: CodeInput, A, eps1, eps2, *, method: str = "auto",
                     float_format: bool = True) -> CodeReport:
    """Criteria (6)-(7) for ``code`` against ``A``, exactly, without an ``L x L`` array.

    Parameters
    ----------
    code : CodeInput
    A : target with ``k`` equal nonzeros in every row (scipy.sparse or dense).
    eps1, eps2 : float
        Tolerances, ``eps1 > 0``, ``0 < eps2 < 1``.
    method : {"auto", "enumerate", "blocks"}
        ``"enumerate"``: for each query, the keys within Hamming radius 2 of its best pattern are
        looked up in the sorted keys (keys of two values, at most 62 entries, queries with at most
        6 zeros or keys of one weight, at most ``MAX_CANDIDATES`` candidates per query); beyond
        radius 2 the rows left are computed from exact products. ``"blocks"``:
        exact products in row blocks (``O(L**2 d)`` time, ``O(L)`` memory per row). ``"auto"``:
        enumerate where it applies.
    float_format : bool, default True
        Also find the least significand ``p`` (2..24) for the whole pass in a ``p``-bit format.

    Returns
    -------
    CodeReport

    References
    ----------
    Criteria (6)-(7) (:ref:`ch-approximation`); :ref:`ch-width-bits`.
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    check_bool("float_format", float_format)
    if not isinstance(code, CodeInput):
        raise TypeError(f"code must be a CodeInput, got {type(code).__name__}")
    if not isinstance(method, str) or method not in ("auto", "enumerate", "blocks"):
        raise ValueError(f"method must be 'auto', 'enumerate' or 'blocks', got {method!r}")
    if not code.ok:
        raise ValueError(f"{code.name}: an entry lies off its {code.bits}-bit {code.grid} grid")
    L, k, cols = target_supports(A)
    if L != code.L:
        raise ValueError(f"A must have as many rows as the code ({code.L}), got {L}")
    t0 = time.perf_counter()
    ext = None
    used = method
    if method in ("auto", "enumerate"):
        try:
            ext = _extremes_enumerate(code, cols)
            used = "enumerate"
        except ValueError:
            if method == "enumerate":
                raise
    if ext is None:
        ext = _extremes_blocks(code, cols)
        used = "blocks"
    on_min, on_max, off_max, bound = ext
    if bound.any():                      # rows whose nearest off-support key lies beyond the
        rows = np.flatnonzero(bound)     # searched radius: exact products for those rows
        off_max = off_max.copy()
        off_max[rows] = _extremes_blocks(code, cols, rows=rows)[2]
    has_off = off_max > np.iinfo(np.int64).min // 2
    spread = int((on_max - on_min).max())
    gap = int(np.where(has_off, off_max - on_min, -(2 ** 62)).max())
    u2 = code.unit ** 2
    with mpmath.workprec(200):           # exact decisions: the logits are dyadic integers
        m6 = mpmath.log(1 + mpmath.mpf(eps1)) - u2 * spread
        m7 = mpmath.log(mpmath.mpf(eps2)) - u2 * gap
        ok = bool(m6 >= 0 and m7 >= 0)
    p = fb = e = None
    undecided = []
    if float_format and ok:
        for pp in range(2, 25):
            verdict = _float_pass(on_min, on_max, off_max, code.unit, pp, eps1, eps2, code=code,
                                  cols=cols)
            if verdict:
                p = pp
                break
            if verdict is None:
                undecided.append(pp)
        if p is not None:
            e = exponent_bits(np.concatenate([np.unique(code.Q), np.unique(code.K)]) * code.unit)
            fb = 1 + e + (p - 1)
    return CodeReport(ok=ok, eps1=eps1, eps2=eps2, spread=spread, gap=gap, margin6=float(m6),
                      margin7=float(m7), float_p=p, float_open=tuple(undecided),
                      float_bits=fb, exponent_bits=e, method=used, rows_checked=L,
                      seconds=round(time.perf_counter() - t0, 3))

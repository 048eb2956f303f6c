"""Codes that serve a target: inputs ``[Q, K]`` for the book's weights on a grid of ``b`` bits.

:class:`CodeInput` holds integer queries and keys and the grid; the constructions are
:func:`~sattn.sign_code_input` and :func:`~sattn.constant_weight_input` (``k = 1``), :func:`~sattn.cycle_code_input`
(``k = 2``) and :func:`~sattn.hash_code_input` (any ``k``). :ref:`ch-width-bits` explains them.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from .._validate import check_int
from ..results import Result
from ..patterns.supports import target_supports
from .bounds import antichain_length, ceil_log2

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = ["CodeInput", "column_cycles", "constant_weight_input", "cycle_code_input",
            "hash_code_input", "sign_code_input"]
__all__ = [*__flat__, "MAX_BLOCKS", "MAX_SYMBOLS", "grid_levels"]

#: Largest number of symbols per block of the hash code (its keys have ``T q`` entries).
MAX_SYMBOLS = 1024
#: Largest number of blocks of the hash code.
MAX_BLOCKS = 10_000


@dataclass(frozen=True)
class CodeInput(Result):
    """An input ``X = unit * [Q, K]`` for the book's weights, with integer ``Q``, ``K``.

    Attributes
    ----------
    name : str
        The construction.
    Q, K : numpy.ndarray of int8, shape (L, d)
        Integer queries and keys.
    unit : float
        The grid's step: ``X`` holds ``unit * Q`` and ``unit * K`` (a power of two).
    grid : str
        ``"symmetric"``: ``b`` bits hold the odd multiples ``(2 i + 1) unit``,
        ``-2**(b-1) <= i < 2**(b-1)`` (``R = 2**b unit``, the grid offset by half a step);
        ``"twos"``: two's complement, ``i unit`` with ``-2**(b-1) <= i < 2**(b-1)``
        (``R = 2**(b-1) unit``).
    bits : int
        Bits per entry ``b``.
    info : dict
        Construction details (lengths, blocks, seeds).
    """

    name: str
    Q: np.ndarray = field(repr=False)
    K: np.ndarray = field(repr=False)
    unit: float
    grid: str
    bits: int
    info: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Every entry lies on the grid."""
        lv = grid_levels(self.grid, self.bits)
        return bool(np.isin(self.Q, lv).all() and np.isin(self.K, lv).all())

    @property
    def L(self) -> int:
        return int(self.K.shape[0])

    @property
    def d(self) -> int:
        return int(self.K.shape[1])

    @property
    def d_hid(self) -> int:
        return 2 * self.d

    @property
    def product(self) -> int:
        """``d_hid b``: bits per token."""
        return self.d_hid * self.bits

    @property
    def X(self) -> np.ndarray:
        """``unit [Q, K]`` as float64 (``L x 2 d``)."""
        return self.unit * np.hstack([self.Q, self.K]).astype(np.float64)

    @property
    def message(self) -> str:
        return (f"{self.name}: L = {self.L}, d = {self.d}, d_hid = {self.d_hid}, {self.bits} "
                f"bit(s) per entry ({self.grid} grid), d_hid b = {self.product}")


def grid_levels(grid: str, bits: int) -> np.ndarray:
    """The integers (multiples of the step) that a ``bits``-bit ``grid`` holds."""
    bits = check_int("bits", bits, low=1, high=7)
    h = 2 ** (bits - 1)
    if grid == "symmetric":
        return np.arange(-h, h) * 2 + 1
    if grid == "twos":
        return np.arange(-h, h)
    raise ValueError(f"grid must be 'symmetric' or 'twos', got {grid!r}")


def _bits_to_signs(codes: np.ndarray, m: int) -> np.ndarray:
    """``codes`` (integers) as ``+1`` (bit set) / ``-1`` rows of length ``m`` (bit 0 first)."""
    bits = (codes[:, None] >> np.arange(m, dtype=np.int64)) & 1
    return (2 * bits - 1).astype(np.int8)


def _permutation_target(A) -> tuple:
    """``(L, cols)`` of a permutation target (one nonzero per row and column); else ValueError."""
    L, k, cols = target_supports(A)
    if k != 1 or np.unique(cols[:, 0]).size != L:
        raise ValueError("A must be a permutation target (one nonzero per row and column)")
    return L, cols


def sign_code_input(A) -> CodeInput:
    """``k = 1``: keys the signs of the column's index, each query the key of its target.

    ``m = ceil(log2 L)`` (at least 1); key ``j`` has ``+1`` where bit ``i`` of ``j`` is set and
    ``-1`` elsewhere; query ``l`` is the key of row ``l``'s column. The logit is
    ``m - 2 dist`` (Hamming distance), ``m`` on the support and at most ``m - 2`` off it, a gap of
    2 (``>= ln(1/eps2)`` for ``eps2 >= e**-2``). One bit per entry: the symmetric grid
    ``{-1, +1}`` (``R = 2``); ``d_hid b = 2 ceil(log2 L)``, equal to :func:`~sattn.book_weights_bound`.

    Parameters
    ----------
    A : array_like or scipy.sparse matrix
        A permutation target (one nonzero per row and column).

    Returns
    -------
    CodeInput

    References
    ----------
    :ref:`ch-width-bits`.
    """
    L, cols = _permutation_target(A)
    m = max(1, ceil_log2(L))
    K = _bits_to_signs(np.arange(L, dtype=np.int64), m)
    return CodeInput("sign code", K[cols[:, 0]], K, 1.0, "symmetric", 1, {"m": m})


def constant_weight_input(A) -> CodeInput:
    """``k = 1`` on the one-bit two's-complement grid ``{-1, 0}``: constant-weight keys.

    ``m = antichain_length(L)``, ``w = floor(m/2)``; key ``j`` is ``-1`` on the ``j``-th
    ``w``-subset of ``{0..m-1}`` (lexicographic order) and 0 elsewhere; query ``l`` is the key of
    its target. The logit ``|q ∩ k|`` is ``w`` on the support and at most ``w - 1`` off it
    (distinct sets of equal size), a gap of 1 (``>= ln(1/eps2)`` for ``eps2 >= 1/e``).

    References
    ----------
    :ref:`ch-width-bits`.
    """
    L, cols = _permutation_target(A)
    m = antichain_length(L)
    w = m // 2
    sets = np.fromiter(itertools.chain.from_iterable(
        itertools.islice(itertools.combinations(range(m), w), L)), dtype=np.int64, count=L * w)
    K = np.zeros((L, m), dtype=np.int8)
    if w:
        K[np.repeat(np.arange(L), w), sets] = -1
    return CodeInput("constant weight", K[cols[:, 0]], K, 1.0, "twos", 1, {"m": m, "w": w})


def column_cycles(A) -> list:
    """The cycles of a ``k = 2`` target's column graph (an edge per row, between its two columns).

    Returns
    -------
    list of (list, list)
        ``(columns, rows)`` per cycle: ``columns[t]`` and ``columns[t + 1]`` (cyclically) are the
        support of ``rows[t]``; a cycle of length 2 is two rows with the same support.
    """
    L, k, cols = target_supports(A)
    if k != 2:
        raise ValueError(f"A must have k = 2 nonzeros per row, got k = {k}")
    inc = [[] for _ in range(L)]
    for l, (a, b) in enumerate(cols.tolist()):
        inc[a].append(l)
        inc[b].append(l)
    if any(len(r) != 2 for r in inc):
        raise ValueError("A must have 2 nonzeros in every column (a k = 2 target)")
    used = np.zeros(L, dtype=bool)
    out = []
    for start in range(L):
        if used[start]:
            continue
        cyc_c, cyc_r = [start], []
        used[start] = True
        c, prev_row = start, None
        while True:
            r = inc[c][0] if inc[c][0] != prev_row else inc[c][1]
            if prev_row is not None and inc[c][0] == inc[c][1] == prev_row:
                r = prev_row
            a, b = cols[r]
            nxt = int(b if a == c else a)
            cyc_r.append(int(r))
            if nxt == start:
                break
            cyc_c.append(nxt)
            used[nxt] = True
            c, prev_row = nxt, r
        out.append((cyc_c, cyc_r))
    return out


def _gray(i: int) -> int:
    return i ^ (i >> 1)


def _cycle_in_cube(n: int) -> tuple:
    """``(vertices, r)``: ``n`` distinct vertices of the cube ``{0,1}**r`` in cyclic order, each
    consecutive pair at distance 1, or at distance 2 with both middle vertices unused (so the
    subcube spanned by a consecutive pair holds no other vertex of the list)."""
    if n < 2:
        raise ValueError(f"a cycle of the column graph has length >= 2, got {n}")
    if n % 2 == 0:                       # a ladder: a Gray path and its mirror one layer up
        p = n // 2
        s = ceil_log2(p)
        top = 1 << s
        return [_gray(i) for i in range(p)] + [_gray(i) | top for i in reversed(range(p))], s + 1
    if n == 3:
        return [0b000, 0b011, 0b101], 3
    if n == 5:
        return [0b000, 0b001, 0b011, 0b111, 0b110], 3
    p = (n - 3) // 2                     # n = 2 p + 3, p >= 2: layers 00, 11 and two vertices of 01
    s = ceil_log2(p + 1)
    L00, L01, L11 = 0, 1 << s, 3 << s
    verts = [_gray(i) | L00 for i in range(p + 1)]
    verts += [_gray(i) | L11 for i in range(p, 0, -1)]
    verts += [_gray(1) | L01, _gray(0) | L01]
    return verts, s + 2


def cycle_code_input(A) -> CodeInput:
    """``k = 2``: a code on the cycles of the target's column graph; two bits per entry.

    Each cycle of :func:`column_cycles` is laid into its own aligned subcube (of dimension about
    ``log2`` of its length plus 1 or 2, traversed as a cycle; subcubes packed largest first, so
    their addresses are prefixes), and column ``j``'s key is the sign vector of its vertex. The
    query of a row with support ``{a, b}`` is ``(k_a + k_b) / 2``: ``+-1`` where the two keys
    agree, 0 where they differ. Its logit is ``z - 2 (disagreements on the agreeing positions)``
    with ``z`` those positions: equal (``z``) on ``a`` and ``b``, and at most ``z - 2`` on every
    other key, because the subcube that ``a`` and ``b`` span holds no other key. Values
    ``-1, 0, 1`` lie on the two-bit two's-complement grid (``R = 2``).

    References
    ----------
    :ref:`ch-width-bits`.
    """
    L, k, cols = target_supports(A)
    cycles = column_cycles(A)
    placed = [(_cycle_in_cube(len(c)), c) for c, _ in cycles]
    placed.sort(key=lambda t: -t[0][1])
    offset, addr = 0, np.empty(L, dtype=np.int64)
    for (verts, r), cyc in placed:
        size = 1 << r
        offset = -(-offset // size) * size          # aligned (a no-op when sizes decrease)
        addr[np.asarray(cyc)] = offset + np.asarray(verts, dtype=np.int64)
        offset += size
    m = max(1, ceil_log2(offset))
    K = _bits_to_signs(addr, m)
    Q = ((K[cols[:, 0]].astype(np.int16) + K[cols[:, 1]]) // 2).astype(np.int8)
    lengths = np.bincount([len(c) for c, _ in cycles])
    return CodeInput("cycle code", Q, K, 1.0, "twos", 2,
                     {"m": m, "cycles": len(cycles), "volume": int(offset),
                      "longest_cycle": int(lengths.size - 1)})


def _cover_pairs(H, cols, q, rows=None):
    """For rows ``rows`` (default all): a boolean ``(len(rows), L)`` array of columns whose hash
    lies in the row's hashes in every block of ``H`` (``T x L``), the support included."""
    T, L = H.shape
    rows = np.arange(cols.shape[0]) if rows is None else rows
    cov = np.ones((rows.size, L), dtype=bool)
    for t in range(T):
        member = np.zeros((rows.size, q), dtype=bool)
        member[np.arange(rows.size)[:, None], H[t][cols[rows]]] = True
        cov &= member[:, H[t]]
    return cov


def _separating_colouring(pairs_l, pairs_j, cols, q, L, rng):
    """A block (``L`` symbols in ``[q]``) with ``h(j) != h(a)`` for every pair ``(l, j)`` and
    every ``a`` in row ``l``'s support, by greedy colouring in smallest-last order; ``None`` if
    the greedy colouring needs more than ``q`` colours. Columns without a constraint get random
    symbols."""
    k = cols.shape[1]
    a = cols[pairs_l].ravel()
    j = np.repeat(pairs_j, k)
    u, v = np.concatenate([a, j]), np.concatenate([j, a])
    keep = u != v
    u, v = u[keep], v[keep]
    order = np.argsort(u, kind="stable")
    u, v = u[order], v[order]
    starts = np.searchsorted(u, np.arange(L + 1))
    nbrs = [v[starts[x]:starts[x + 1]] for x in range(L)]
    deg = np.diff(starts).astype(np.int64)
    # smallest-last order: repeatedly remove a vertex of least remaining degree
    heap = [(int(deg[x]), x) for x in range(L) if deg[x]]
    heapq.heapify(heap)
    removed = np.zeros(L, dtype=bool)
    cur = deg.copy()
    seq = []
    while heap:
        dg, x = heapq.heappop(heap)
        if removed[x] or dg != cur[x]:
            continue
        removed[x] = True
        seq.append(x)
        for y in nbrs[x]:
            if not removed[y]:
                cur[y] -= 1
                heapq.heappush(heap, (int(cur[y]), int(y)))
    colour = rng.integers(q, size=L)
    done = np.zeros(L, dtype=bool)
    for x in reversed(seq):
        used = set(colour[nbrs[x][done[nbrs[x]]]].tolist())
        free = [c for c in range(q) if c not in used]
        if not free:
            return None
        colour[x] = free[int(rng.integers(len(free)))]
        done[x] = True
    return colour


def hash_code_input(A, *, q=None, seed: int = 0, max_blocks: int = 200,
                    block_rows: int = 256) -> CodeInput:
    """Any ``k``: ``T`` one-hot blocks of ``q`` positions, queries the union of the support's keys.

    Block ``t`` gives every column one of ``q`` symbols; key ``j`` is ``-1`` at position
    ``(t, h_t(j))`` for every block and 0 elsewhere, and query ``l`` is ``-1`` on the union of its
    support's keys. The logit counts the blocks where ``h_t(j)`` is among the row's symbols:
    ``T`` on the support, and less than ``T`` off it exactly when some block separates ``j`` from
    the row. The first blocks are random (seeded), as many as leave about ``L`` pairs unseparated;
    then a block is *coloured* for the pairs left: a proper colouring (greedy, smallest-last
    order) of the graph that joins each such column to its row's support separates them all; where
    the colouring needs more than ``q`` colours a random block is drawn instead. Every pair is
    checked in row blocks (``O(L**2 T)``). A gap of 1, one bit on the two's-complement grid
    ``{-1, 0}``.

    Parameters
    ----------
    A : target of the class (every row ``k`` equal nonzeros).
    q : int, optional
        Symbols per block, ``k + 1 <= q <= MAX_SYMBOLS`` (default ``k + 2``; for ``k = 4`` at
        ``L = 1024 ... 16384``, ``q = 7`` and ``8`` give codes within a few positions of it).
    seed : int
        Seed of the hashes.
    max_blocks : int
        Give up (``RuntimeError``) beyond this many blocks (at most ``MAX_BLOCKS``).
    block_rows : int
        Rows per block of the separation check.

    References
    ----------
    Kautz & Singleton (1964) and D'yachkov & Rykov (1982) for cover-free codes; the target-specific
    form is the book's (:ref:`ch-width-bits`).
    """
    L, k, cols = target_supports(A)
    q = k + 2 if q is None else check_int("q", q, low=k + 1, high=MAX_SYMBOLS)
    seed = check_int("seed", seed, low=0)
    max_blocks = check_int("max_blocks", max_blocks, low=1, high=MAX_BLOCKS)
    block_rows = check_int("block_rows", block_rows, low=1)
    rng = np.random.default_rng([20261, seed, L, k, q])
    # a random block leaves a pair unseparated with probability about r = k'/q (k' the expected
    # number of distinct symbols among k): draw T0 blocks, about L pairs left, then colour a
    # block for the pairs left (a proper colouring of the graph joining each such column to the
    # row's support separates all of them); a random block where the colouring fails
    r = 1.0 - (1.0 - 1.0 / q) ** k
    T0 = max(1, int(math.log(L) / -math.log(r)))
    H = rng.integers(q, size=(T0, L))
    bad_rows = np.arange(L)
    while True:
        pairs_l, pairs_j = [], []
        for s in range(0, bad_rows.size, block_rows):
            rows = bad_rows[s:s + block_rows]
            cov = _cover_pairs(H, cols, q, rows)
            cov[np.arange(rows.size)[:, None], cols[rows]] = False
            i, j = np.nonzero(cov)
            pairs_l.append(rows[i])
            pairs_j.append(j)
        pairs_l, pairs_j = np.concatenate(pairs_l), np.concatenate(pairs_j)
        if pairs_l.size == 0:
            break
        if H.shape[0] >= max_blocks:
            raise RuntimeError(f"no separating code with {max_blocks} blocks at L = {L}")
        bad_rows = np.unique(pairs_l)
        block = _separating_colouring(pairs_l, pairs_j, cols, q, L, rng) \
            if pairs_l.size <= 4 * L else None
        H = np.vstack([H, rng.integers(q, size=(1, L)) if block is None else block[None, :]])
    T = H.shape[0]
    m = T * q
    K = np.zeros((L, m), dtype=np.int8)
    K[np.arange(L)[:, None], np.arange(T) * q + H.T] = -1
    Qm = np.zeros((L, m), dtype=np.int8)
    for i in range(k):
        Qm[K[cols[:, i]] == -1] = -1
    return CodeInput("hash code", Qm, K, 1.0, "twos", 1, {"m": m, "q": q, "T": T, "seed": seed})

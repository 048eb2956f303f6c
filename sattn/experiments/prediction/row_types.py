"""A target as the model sees it: a histogram of row types, at any length (even streamed).

References
----------
The model is the book's own (:ref:`ch-experiments`); the model itself is described in
:mod:`sattn.experiments.prediction`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sps

from ..._validate import check_int, check_real, check_rng
from ...patterns.criteria import validate_tolerances

__flat__ = __all__ = ["RowTypes", "regular_row_types", "stream_regular_blocks", "row_types_from_blocks"]


@dataclass(frozen=True)
class RowTypes:
    """A target as the model sees it: its length and a histogram of row types.

    The model of this module uses a target only through the sorted support logits ``b`` of each
    row and the number of rows sharing them, so this replaces the ``L x L`` matrix (or its
    CSR form) at any length. Accepted by :func:`~sattn.draw_success_probability` and
    :func:`~sattn.predict_dmin` wherever a target is.

    Attributes
    ----------
    L : int
    k_max : int
        Largest support size.
    eps1, eps2 : float
        The tolerances the logits ``b`` were computed with (eq. 8).
    types : tuple of (tuple of float, int)
        ``(b sorted descending, number of rows)``; the counts sum to ``L``.
    """

    L: int
    k_max: int
    eps1: float
    eps2: float
    types: tuple


def _type_logits(n_gamma, k, gamma, delta):
    """Sorted logits of a row with ``k`` nonzeros, ``n_gamma`` of them ``gamma`` (eq. 8)."""
    if n_gamma in (0, k) or gamma == 1.0:
        return (delta,) * k
    return (delta + math.log(gamma),) * n_gamma + (delta,) * (k - n_gamma)


def regular_row_types(L, k, gamma, eps1, eps2, rng) -> RowTypes:
    """Row types of a random target with exactly ``k`` nonzeros in every row, each 1 or ``gamma``
    with probability 1/2 (the values of the experiments' sampler), at any ``L``.

    How many rows hold ``j`` values ``gamma`` is multinomial with the Binomial(k, 1/2)
    probabilities, so the histogram costs ``O(k)`` whatever ``L``; it has the law of
    :func:`row_types_from_blocks` applied to :func:`stream_regular_blocks`.

    Parameters
    ----------
    L : int
        ``4 <= L <= 2**53`` (and ``L >= k + 2``).
    k : int
        ``1 <= k <= 64``.
    gamma : float
        ``gamma >= 1``.
    eps1, eps2 : float
        Tolerances of (6)-(7).
    rng : numpy.random.Generator

    Returns
    -------
    RowTypes

    References
    ----------
    Eq. (8) of Likhosherstov et al. (2021); the model is the book's (:ref:`ch-width-bits`).
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    k = check_int("k", k, low=1, high=64)
    L = check_int("L", L, low=max(4, k + 2), high=2 ** 53)
    gamma = check_real("gamma", gamma, low=1.0)
    rng = check_rng("rng", rng)
    delta = math.log((1.0 + eps1) / eps2)
    pmf = [math.comb(k, j) / 2.0 ** k for j in range(k + 1)]
    counts = rng.multinomial(L, pmf)
    hist: dict = {}
    for j, c in enumerate(counts.tolist()):
        if c:
            key = _type_logits(j, k, gamma, delta)
            hist[key] = hist.get(key, 0) + int(c)
    return RowTypes(L=L, k_max=k, eps1=eps1, eps2=eps2, types=tuple(sorted(hist.items())))


def stream_regular_blocks(L, k, gamma, rng, *, block_rows: int = 1 << 16):
    """A target with exactly ``k`` nonzeros in every row and column, as CSR row blocks.

    Row ``l`` attends to ``sigma(l + i)``, ``i < k`` (mod ``L``), for the affine permutation
    ``sigma(m) = (a m + c) mod L`` with a random ``a`` coprime to ``L``; values are 1 or
    ``gamma`` with probability 1/2. Memory is ``O(block_rows k)`` whatever ``L``.

    Parameters
    ----------
    L : int
        ``2 <= L <= 2**53``.
    k : int
        ``1 <= k <= min(64, L)``.
    gamma : float
        ``gamma >= 1``.
    rng : numpy.random.Generator
    block_rows : int, default 65536
        Rows per block, ``1 <= block_rows <= 2**24``.

    Yields
    ------
    (int, scipy.sparse.csr_array)
        The first row of the block and the block (``rows x L``, values not normalised).

    References
    ----------
    :ref:`ch-width-bits`.
    """
    L = check_int("L", L, low=2, high=2 ** 53)
    k = check_int("k", k, low=1, high=min(64, L))
    gamma = check_real("gamma", gamma, low=1.0)
    rng = check_rng("rng", rng)
    block_rows = check_int("block_rows", block_rows, low=1, high=1 << 24)
    return _stream_regular(L, k, gamma, rng, block_rows)


def _stream_regular(L, k, gamma, rng, block_rows):
    while True:
        a = int(rng.integers(1, L)) if L > 2 else 1
        if math.gcd(a, L) == 1:
            break
    c = int(rng.integers(0, L))
    offs = np.arange(k, dtype=np.int64)
    for start in range(0, L, block_rows):
        n = min(block_rows, L - start)
        m = (np.arange(start, start + n, dtype=np.int64)[:, None] + offs[None, :]) % L
        cols = ((m.astype(object) * a + c) % L).astype(np.int64) if L > 2 ** 31 else (a * m + c) % L
        vals = np.where(rng.random((n, k)) < 0.5, 1.0, gamma)
        order = np.argsort(cols, axis=1)
        cols = np.take_along_axis(cols, order, axis=1)
        vals = np.take_along_axis(vals, order, axis=1)
        yield start, sps.csr_array((vals.ravel(), cols.ravel(), np.arange(0, n * k + 1, k)),
                                   shape=(n, L))


def row_types_from_blocks(blocks, L, eps1, eps2) -> RowTypes:
    """The :class:`RowTypes` of a target given as CSR row blocks (e.g. from
    :func:`stream_regular_blocks`), one block in memory at a time.

    Parameters
    ----------
    blocks : iterable of (int, scipy.sparse matrix)
        ``(first row, block)``, blocks of ``L`` columns covering rows ``0..L-1`` once.
    L : int
    eps1, eps2 : float

    Returns
    -------
    RowTypes
        The same types (logits rounded to 12 decimals) as the model derives from the full
        matrix.

    Raises
    ------
    ValueError
        A block of the wrong width, an empty row or a negative value, rows not covered once.

    References
    ----------
    Eq. (8) of Likhosherstov et al. (2021); :ref:`ch-width-bits`.
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    L = check_int("L", L, low=4, high=2 ** 53)
    delta = math.log((1.0 + eps1) / eps2)
    hist: dict = {}
    seen, k_max = 0, 0
    if isinstance(blocks, (str, bytes, dict)) or not hasattr(blocks, "__iter__"):
        raise TypeError(f"blocks must be an iterable of (first row, CSR block) pairs, got "
                        f"{type(blocks).__name__}")
    for item in blocks:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError(f"blocks must yield (first row, CSR block) pairs, got {item!r:.60}")
        start, blk = item
        if isinstance(start, bool) or not isinstance(start, (int, np.integer)):
            raise TypeError(f"blocks: a block's first row must be an integer, got {start!r:.40}")
        if not sps.issparse(blk) or blk.ndim != 2:
            raise TypeError(f"blocks: each block must be a 2-D scipy.sparse matrix, got "
                            f"{type(blk).__name__}")
        blk = sps.csr_array(blk, dtype=np.float64)
        if not np.all(np.isfinite(blk.data)):
            raise ValueError("blocks: the target must be finite")
        if blk.shape[1] != L:
            raise ValueError(f"blocks: every block must have L = {L} columns, got shape {blk.shape}")
        if start != seen:
            raise ValueError(f"blocks must cover the rows in order: expected row {seen}, got {start}")
        blk.eliminate_zeros()
        if (blk.data < 0).any():
            raise ValueError("blocks: the target must be nonnegative")
        for i in range(blk.shape[0]):
            v = blk.data[blk.indptr[i]:blk.indptr[i + 1]]
            if v.size == 0:
                raise ValueError(f"blocks: row {start + i} has no nonzero entry")
            b = tuple(np.round(np.sort(np.log(v / v.min()) + delta)[::-1], 12).tolist())
            hist[b] = hist.get(b, 0) + 1
            k_max = max(k_max, v.size)
        seen += blk.shape[0]
    if seen != L:
        raise ValueError(f"blocks: they cover {seen} rows, expected L = {L}")
    return RowTypes(L=L, k_max=k_max, eps1=eps1, eps2=eps2, types=tuple(sorted(hist.items())))

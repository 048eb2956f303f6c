"""What the fast engine needs of a target, and the generator of one draw.

:func:`prepare_target` stores the support of ``A`` and the logits ``B`` of eq. (8) row by row
(``k`` entries per row instead of ``L``), and :func:`draw_generator` names each draw's random
numbers by the draw's identity (task, width, draw index), so that results do not depend on the
order or the number of workers (:ref:`ch-computation`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sps

from .._validate import as_matrix, check_int
from ..patterns.criteria import validate_tolerances

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = ["draw_generator"]
# The module's public names: the flat ones, then those that stay in this module.
__all__ = [*__flat__, "SparseTarget", "prepare_target"]


@dataclass(frozen=True)
class SparseTarget:
    """The support of a target ``A`` and the logits ``B`` of eq. (8) on it, row by row.

    Rows are padded to ``k_max`` entries by repeating the row's first support column; padded
    slots carry ``b = 0`` (so they add nothing to ``B Z``) and the same ``ln A`` as the repeated
    entry (so they change no maximum or minimum of the criteria).
    """

    L: int
    k_max: int
    cols: np.ndarray       # (L, k_max) int64, support columns (padded)
    bvals: np.ndarray      # (L, k_max) float64, B on the support (0 on padding)
    logA: np.ndarray       # (L, k_max) float64, ln A on the support (repeated on padding)
    row_norm: np.ndarray   # (L,) ||B_l||
    eps1: float
    eps2: float

    @property
    def log1p_eps1(self) -> float:
        return math.log1p(self.eps1)

    @property
    def log_inv_eps2(self) -> float:
        return -math.log(self.eps2)


def prepare_target(A, eps1, eps2) -> SparseTarget:
    """Extract the support of ``A`` and the logits ``B`` of eq. (8) in padded row form.

    Parameters
    ----------
    A : array_like or scipy.sparse matrix, shape (L, L)
        Nonnegative, finite target with at least one nonzero per row.
    eps1 : float
        Tolerance of (6), ``eps1 > 0``.
    eps2 : float
        Tolerance of (7), ``0 < eps2 < 1``.

    Returns
    -------
    SparseTarget

    Raises
    ------
    ValueError
        Non-square, negative or non-finite ``A``, an empty row, or tolerances out of range.

    References
    ----------
    Eq. (8) of Likhosherstov et al. (2021), as reconstructed in :ref:`ch-construction`
    (:prf:ref:`con-def-B`: ``B = ln(A / a_l) + ln((1 + eps1)/eps2)`` on the support, 0 elsewhere).
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    if sps.issparse(A):
        if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
            raise ValueError(f"A must be a non-empty square matrix, got shape {A.shape}")
        csr = sps.csr_array(A)
        csr.eliminate_zeros()
        csr.sort_indices()
        data = np.asarray(csr.data, dtype=np.float64)
        if not np.all(np.isfinite(data)):
            raise ValueError("A must contain only finite numbers")
        if (data < 0).any():
            raise ValueError("A must be nonnegative (expected every entry >= 0)")
        keep = data > 0
        indptr = csr.indptr
        rows = np.repeat(np.arange(A.shape[0]), np.diff(indptr))[keep]
        cols, vals = csr.indices[keep].astype(np.int64), data[keep]
        L = A.shape[0]
    else:
        A = as_matrix("A", A, square=True)
        if (A < 0).any():
            r, c = np.argwhere(A < 0)[0]
            raise ValueError(f"A must be nonnegative, but A[{r}, {c}] = {A[r, c]:.6g}")
        L = A.shape[0]
        rows, cols = np.nonzero(A > 0)
        vals = A[rows, cols]
    counts = np.bincount(rows, minlength=L)
    if (counts == 0).any():
        r = int(np.flatnonzero(counts == 0)[0])
        raise ValueError(f"row {r} of A has no nonzero entry (every row needs at least one)")
    k_max = int(counts.max())
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.arange(rows.size) - starts[rows]
    cols_pad = np.repeat(cols[starts][:, None], k_max, axis=1)
    cols_pad[rows, slot] = cols
    amin = np.full(L, np.inf)
    np.minimum.at(amin, rows, vals)
    delta = math.log((1.0 + eps1) / eps2)
    logA_pad = np.repeat(np.log(vals[starts])[:, None], k_max, axis=1)
    logA_pad[rows, slot] = np.log(vals)
    bvals = np.zeros((L, k_max))
    bvals[rows, slot] = np.log(vals / amin[rows]) + delta
    return SparseTarget(L=L, k_max=k_max, cols=cols_pad, bvals=bvals, logA=logA_pad,
                        row_norm=np.sqrt((bvals ** 2).sum(axis=1)), eps1=eps1, eps2=eps2)


def draw_generator(root_seed: int, key: tuple[int, ...]) -> np.random.Generator:
    """The generator of one draw: ``SeedSequence(root_seed, spawn_key=key)``.

    Keys name the draw (task, width, draw index), never a position in a schedule, so results do
    not depend on the order in which draws or tasks are run.
    """
    root_seed = check_int("root_seed", root_seed, low=0)
    if not isinstance(key, (tuple, list)):
        raise TypeError(f"key must be a tuple of non-negative integers, got {type(key).__name__}")
    key = tuple(check_int(f"key[{i}]", k, low=0) for i, k in enumerate(key))
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(root_seed, spawn_key=key)))

"""A fast engine for the d_min experiments: one Stiefel draw of Algorithm 1, decided cheaply.

The construction of Theorem 1 (Chapter 4) accepts a draw when the logits

    G = (L/d) B Y Y^T,        Y uniform on the Stiefel manifold {Y : Y^T Y = I_d},

satisfy criteria (6)-(7) in every row (log-domain form, Chapter 3). The reference route of the
paper (SVD of B, full ``L x L`` attention matrix, explicit ratio checks) costs ``O(L^3)`` per
target and ``O(L^2 d)`` per draw with ``L x L`` arrays. This module makes *the same decision*
without any ``L x L`` array and without an SVD or a QR factorization:

1. **SVD-free.** ``G = (L/d) B U U^T`` depends on ``Y`` only through the projector ``Y Y^T``, and
   for a Gaussian ``Z`` (``L x d``) the projector onto its column span is
   ``Z C^{-1} Z^T`` with ``C = Z^T Z``. So ``G = (L/d) (B Z) C^{-1} Z^T``; ``B`` is sparse
   (``k`` nonzeros per row), so ``B Z`` costs ``O(L k d)``.
2. **Cheap partial draws (stage 1).** Split the rows of ``Z`` into a small set ``J`` (the supports
   of a few screened rows plus some random extra columns) and the rest. The Gram matrix of the
   rest, ``W``, is Wishart; it is sampled directly from its Bartlett factor (``d^2/2`` numbers
   instead of ``(L - |J|) d``). ``Z_J`` and ``C = Z_J^T Z_J + W`` give the exact logits of the
   screened rows on the columns ``J``. If one of these rows already violates (6) or (7) there, the
   whole draw fails (the full check only adds columns), and the rest of ``Z`` is never generated.
3. **Completing the same draw (stage 2).** Otherwise the rest of ``Z`` is generated *conditionally
   on* ``W``: ``Z_rest = Q R_W`` with ``Q`` the orthonormal factor of a fresh Gaussian ``Z'``
   (``Q`` is Haar and independent of the triangular factor, so ``Z_rest`` is exactly Gaussian
   with Gram matrix ``W``). Never formed: the logits against those columns are
   ``(U M^T) Z'^T`` with ``M = R'^{-1} R_W`` (``Z' = Q R'``).
4. **Early rejection by row blocks.** Rows are checked in blocks of growing size, hardest rows
   first (rows that failed earlier draws, then rows of largest ``||B_l||``); the first violating
   block ends the draw.
5. **float32 screening, float64 confirmation.** Each block of logits is one float32 GEMM. By the
   standard rounding-error bound for dot products (any summation order),
   ``|fl(u.z) - u.z| <= gamma_{n} ||u|| ||z||`` with ``gamma_n = n u / (1 - n u)``, ``u = 2^-24``;
   every margin is a difference of two logits, so a row whose float32 margin is below minus twice
   that bound fails in exact arithmetic, one above it passes, and only rows inside the band are
   recomputed in float64.

The distribution of the accepted/rejected decision is therefore that of Algorithm 1 with
``method="direct"`` (and, by the remark of Chapter 4, of the SVD route); on a given full ``Z``
the decision equals the reference decision on ``Y = qr(Z)`` (tests check both).

References
----------
Theorem 1, Algorithm 1, Section 4 (experiments) of Likhosherstov, Choromanski & Weller (2021);
Bartlett decomposition of the Wishart distribution; Higham, *Accuracy and Stability of Numerical
Algorithms*, Sec. 3.1 (dot-product error bound). Chapter 7 ("Experiments") of the book.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sps

from ._validate import as_matrix, check_int, check_rng
from .criteria import check_tolerances

__all__ = ["DrawOutcome", "FastEngine", "LevelResult", "SparseTarget", "prepare_target",
           "draw_generator"]

_U32 = 2.0 ** -24


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
    Eq. (8) of Likhosherstov et al. (2021), as reconstructed in Chapter 4 of the book
    (``B = ln(A / a_l) + ln((1 + eps1)/eps2)`` on the support, 0 elsewhere).
    """
    eps1, eps2 = check_tolerances(eps1, eps2)
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
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(root_seed, spawn_key=key)))


@dataclass
class DrawOutcome:
    """Decision on one draw and where it was taken.

    ``stage`` is ``"stage1"`` (rejected from the partial draw), ``"screen"`` (decided by float32
    screening), or ``"confirm"`` (float64 recomputation of borderline rows was needed).
    """

    ok: bool
    stage: str
    rows_screened: int
    borderline: int
    worst_row: int | None
    Z: np.ndarray | None = None   # the full Gaussian matrix of the draw (only if requested)


@dataclass
class LevelResult:
    """Outcome of up to ``n_draws`` draws at one width ``d`` (stops at the first success)."""

    d: int
    success: bool
    draws: int
    stage1_rejects: int = 0
    screen_rejects: int = 0
    confirmations: int = 0
    rows_screened: int = 0


@dataclass
class FastEngine:
    """Decide draws of Algorithm 1 for one target without ``L x L`` arrays (see module docs).

    Parameters
    ----------
    A : array_like or scipy.sparse matrix, shape (L, L)
        Target pattern.
    eps1, eps2 : float
        Tolerances of criteria (6)-(7).
    screen_rows : int, default 32
        Rows checked on the partial draw of stage 1.
    extra_cols : int, default 256
        Random extra columns of the partial draw (besides the screened rows' supports).
    first_block : int, default 64
        Rows of the first float32 block of stage 2; later blocks double, up to ``max_block``.
    max_block : int, default 1024
        Largest block; also capped so one block has at most ``2**23`` entries (32 MB).
    use_float32 : bool, default True
        Screen in float32 (with the rigorous error band); False computes blocks in float64.

    References
    ----------
    Algorithm 1 of Likhosherstov et al. (2021); Chapter 7 of the book.
    """

    A: object
    eps1: float
    eps2: float
    screen_rows: int = 32
    extra_cols: int = 256
    first_block: int = 64
    max_block: int = 1024
    use_float32: bool = True
    target: SparseTarget = field(init=False, repr=False)

    def __post_init__(self):
        self.target = prepare_target(self.A, self.eps1, self.eps2)
        self.A = None  # do not keep a dense copy alive
        t = self.target
        self.L = t.L
        self.screen_rows = check_int("screen_rows", self.screen_rows, low=1)
        self.extra_cols = check_int("extra_cols", self.extra_cols, low=0)
        self.first_block = check_int("first_block", self.first_block, low=1)
        self.max_block = check_int("max_block", self.max_block, low=1)
        self._order = np.argsort(-t.row_norm, kind="stable")
        self._suspects: deque[int] = deque(maxlen=max(1, self.screen_rows // 2))
        self._pos = np.full(t.L, -1, dtype=np.int64)
        cap = max(1, (1 << 23) // t.L)
        self._max_block = max(1, min(self.max_block, cap))

    # ------------------------------------------------------------------ row order
    def reset_suspects(self):
        """Forget the rows that failed earlier draws (the order then depends on ``B`` only)."""
        self._suspects.clear()

    def row_order(self) -> np.ndarray:
        """Rows in checking order: recent failures first, then by decreasing ``||B_l||``."""
        if not self._suspects:
            return self._order
        s = np.fromiter(self._suspects, dtype=np.int64)[::-1]
        s = np.unique(s, return_index=True)
        s = s[0][np.argsort(s[1])]
        rest = self._order[~np.isin(self._order, s)]
        return np.concatenate([s, rest])

    # ------------------------------------------------------------------ criteria on a block
    def _margins(self, rows, G, colpos):
        """Row margins ``min(margin6, margin7)`` of a logit block ``G`` (rows x columns).

        ``colpos[c]`` is the position of column ``c`` in ``G`` (or -1 if absent: partial draws).
        Works in the dtype of ``G``; the result is float64. Modifies ``G`` (support set to -inf).
        """
        t = self.target
        ar = np.arange(len(rows))[:, None]
        p = colpos[t.cols[rows]]
        gs = G[ar, p].astype(np.float64)
        r = gs - t.logA[rows]
        m6 = t.log1p_eps1 - (r.max(axis=1) - r.min(axis=1))
        G[ar, p] = -np.inf
        off = G.max(axis=1).astype(np.float64) if G.shape[1] else np.full(len(rows), -np.inf)
        m7 = (gs.min(axis=1) - off) - t.log_inv_eps2
        return np.minimum(m6, m7)

    def _bz(self, rows, zrow):
        """``B[rows] @ Z`` from a function returning the rows of ``Z`` at given columns."""
        t = self.target
        c = t.cols[rows]
        Zs = zrow(c.ravel()).reshape(c.shape + (-1,))
        return np.einsum("rk,rkd->rd", t.bvals[rows], Zs)

    # ------------------------------------------------------------------ one draw
    def draw(self, d, rng, *, complete: bool = False) -> DrawOutcome:
        """Decide one draw of Algorithm 1 at width ``d``.

        Parameters
        ----------
        d : int
            Width, ``1 <= d <= L``.
        rng : numpy.random.Generator
            The draw's own generator (see :func:`draw_generator`).
        complete : bool, default False
            Always generate the whole draw and return its Gaussian matrix ``Z`` (``L x d``,
            float64) in the outcome, so that tests can rerun the reference on ``Y = qr(Z)``.

        Returns
        -------
        DrawOutcome
        """
        t = self.target
        L = t.L
        d = check_int("d", d, low=1, high=L)
        rng = check_rng("rng", rng)
        scale = L / d
        order = self.row_order()
        rows0 = order[: min(self.screen_rows, L)]

        # ---- stage 1: Z_J and the Bartlett factor of the Gram matrix of the rest
        S = t.cols[rows0].ravel()
        T = rng.integers(0, L, size=self.extra_cols) if self.extra_cols else np.empty(0, np.int64)
        J = np.unique(np.concatenate([S, T]))
        if L - J.size < d:          # too few rows left for a Wishart factor: take all rows in J
            J = np.arange(L)
        m, n = J.size, L - J.size
        ZJ = rng.standard_normal((m, d))
        if n:
            RW = np.triu(rng.standard_normal((d, d)), 1)
            RW[np.diag_indices(d)] = np.sqrt(rng.chisquare(n - np.arange(d)))
            C = ZJ.T @ ZJ + RW.T @ RW
        else:
            RW = None
            C = ZJ.T @ ZJ
        cf = sla.cho_factor(C, lower=False, check_finite=False)
        pos = self._pos
        pos[J] = np.arange(m)
        try:
            def zrow_J(c):
                return ZJ[pos[c]]

            Cinv = sla.cho_solve(cf, np.eye(d), check_finite=False)   # C^{-1}, d x d
            U0 = (scale * self._bz(rows0, zrow_J)) @ Cinv
            G0 = U0 @ ZJ.T
            marg0 = self._margins(rows0, G0, pos)
            if marg0.min() < -1e-9 and not complete:
                w = int(rows0[int(np.argmin(marg0))])
                self._suspects.append(w)
                return DrawOutcome(False, "stage1", len(rows0), 0, w)
            stage1_fail = bool(marg0.min() < -1e-9)
        finally:
            pos[J] = -1

        # ---- stage 2: complete the same draw, conditionally on the Gram matrix of the rest
        inJ_mask = np.zeros(L, dtype=bool)
        inJ_mask[J] = True
        rest = np.flatnonzero(~inJ_mask)
        colpos = np.empty(L, dtype=np.int64)
        colpos[J] = np.arange(m)
        colpos[rest] = m + np.arange(n)
        if n:
            Zp = rng.standard_normal((n, d), dtype=np.float32)   # raw Gaussian Z' = Q R'
            Zp64 = Zp.astype(np.float64)
            Rp = sla.cholesky(Zp64.T @ Zp64, lower=False, check_finite=False)
            Mt = sla.solve_triangular(Rp, RW, lower=False, check_finite=False)  # R'^{-1} R_W
            CinvMt = Cinv @ Mt.T
        else:
            Zp = np.empty((0, d), np.float32)
            Zp64 = np.empty((0, d))
            Mt = np.eye(d)
            CinvMt = Cinv

        def zrow(c):
            p = colpos[c]
            out = np.empty((c.size, d))
            inJ = p < m
            out[inJ] = ZJ[p[inJ]]
            if (~inJ).any():
                out[~inJ] = Zp64[p[~inJ] - m] @ Mt
            return out

        Zfull = None
        if complete:
            Zfull = np.empty((L, d))
            Zfull[J] = ZJ
            if n:
                Zfull[rest] = Zp64 @ Mt
        if stage1_fail:
            w = int(rows0[int(np.argmin(marg0))])
            return DrawOutcome(False, "stage1", len(rows0), 0, w, Zfull)

        f32 = self.use_float32
        if f32 and d >= 1600:
            raise ValueError(f"d = {d} is too large for the float32 screening bound (d < 1600)")
        if f32:
            ZJ32 = ZJ.astype(np.float32)
            zj_norm = float(np.sqrt(np.einsum("ij,ij->i", ZJ, ZJ).max()))
            # float32 sum of squares of d terms: relative error below d * 2^-24 < 1e-4 (d < 1600)
            zp_norm = (float(np.sqrt(np.einsum("ij,ij->i", Zp, Zp).max() * (1 + 1e-4)))
                       if n else 0.0)
            nn = d + 2
            gam = nn * _U32 / (1 - nn * _U32)
        borderline_rows, borderline_u = [], []
        done = 0
        b = min(self.first_block, self._max_block)
        while done < L:
            rows = order[done: done + b]
            done += len(rows)
            H = scale * self._bz(rows, zrow)
            U = H @ Cinv
            V = H @ CinvMt
            dt = np.float32 if f32 else np.float64
            G = np.empty((len(rows), L), dtype=dt)
            if f32:
                np.matmul(U.astype(np.float32), ZJ32.T, out=G[:, :m])
                if n:
                    np.matmul(V.astype(np.float32), Zp.T, out=G[:, m:])
            else:
                np.matmul(U, ZJ.T, out=G[:, :m])
                if n:
                    np.matmul(V, Zp64.T, out=G[:, m:])
            marg = self._margins(rows, G, colpos)
            if f32:
                un = np.sqrt(np.einsum("ij,ij->i", U, U))
                vn = np.sqrt(np.einsum("ij,ij->i", V, V))
                tol = 2.0 * gam * np.maximum(un * zj_norm, vn * zp_norm) * (1 + 1e-6) + 1e-10
            else:
                tol = np.full(len(rows), 1e-10)
            bad = marg < -tol
            if bad.any():
                w = int(rows[int(np.argmax(bad))])
                self._suspects.append(w)
                return DrawOutcome(False, "screen", done, len(borderline_rows), w, Zfull)
            near = np.abs(marg) <= tol
            if near.any():
                borderline_rows.append(rows[near])
                borderline_u.append((U[near], V[near]))
            b = min(2 * b, self._max_block)
        if not borderline_rows:
            return DrawOutcome(True, "screen", done, 0, None, Zfull)
        # ---- float64 confirmation of the borderline rows
        rows = np.concatenate(borderline_rows)
        U = np.concatenate([u for u, _ in borderline_u])
        V = np.concatenate([v for _, v in borderline_u])
        G = np.empty((len(rows), L))
        G[:, :m] = U @ ZJ.T
        if n:
            G[:, m:] = V @ Zp64.T
        marg = self._margins(rows, G, colpos)
        if (marg < 0).any():
            w = int(rows[int(np.argmin(marg))])
            self._suspects.append(w)
            return DrawOutcome(False, "confirm", done, len(rows), w, Zfull)
        return DrawOutcome(True, "confirm", done, len(rows), None, Zfull)

    # ------------------------------------------------------------------ one width
    def level(self, d, n_draws, root_seed, key) -> LevelResult:
        """Up to ``n_draws`` draws at width ``d``; draw ``i`` uses ``draw_generator(root_seed,
        key + (d, i))``. Stops at the first success.

        Returns
        -------
        LevelResult
        """
        d = check_int("d", d, low=1, high=self.L)
        n_draws = check_int("n_draws", n_draws, low=1)
        res = LevelResult(d=d, success=False, draws=0)
        for i in range(n_draws):
            out = self.draw(d, draw_generator(root_seed, tuple(key) + (d, i)))
            res.draws += 1
            res.rows_screened += out.rows_screened
            if out.stage == "stage1":
                res.stage1_rejects += 1
            elif not out.ok and out.stage == "screen":
                res.screen_rejects += 1
            if out.stage == "confirm":
                res.confirmations += 1
            if out.ok:
                res.success = True
                break
        return res

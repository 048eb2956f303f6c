"""A fast engine for the d_min experiments: one Stiefel draw of Algorithm 1, decided cheaply.

The construction of Theorem 1 (:ref:`ch-construction`) accepts a draw when the logits

    G = (L/d) B Y Y^T,        Y uniform on the Stiefel manifold {Y : Y^T Y = I_d},

satisfy criteria (6)-(7) in every row (log-domain form, :prf:ref:`apx-prop-log`). The reference route of the
paper (SVD of B, full ``L x L`` attention matrix, explicit ratio checks) costs ``O(L^3)`` per
target and ``O(L^2 d)`` per draw with ``L x L`` arrays. This module makes *the same decision*
without any ``L x L`` array and without an SVD or a QR factorization:

1. **SVD-free.** ``G = (L/d) B Y Y^T`` depends on ``Y`` only through the projector ``Y Y^T``, and
   for a Gaussian ``Z`` (``L x d``) the projector onto its column span is
   ``Z C^{-1} Z^T`` with ``C = Z^T Z``. So ``G = (L/d) (B Z) C^{-1} Z^T``; ``B`` is sparse
   (``k`` nonzeros per row), so ``B Z`` costs ``O(L k d)``.
2. **Partial draws (stage 1).** Split the rows of ``Z`` into a set ``J`` (the supports of rows
   taken in a fixed random order until a given fraction of the columns is covered) and the rest.
   The Gram matrix of the rest, ``W = R_W^T R_W``, is Wishart and is sampled directly from its
   Bartlett factor (``d^2/2`` numbers instead of ``(L - |J|) d``), so ``C = Z_J^T Z_J + W`` and
   the *support* logits of every row whose support lies in ``J`` are exact. The rows with the
   lowest support margins in double precision (so that the choice, which decides what is drawn
   next, does not depend on the machine's single-precision rounding) are the candidates. From
   ``L = FLOAT32_STAGE1_MIN_L`` on, the margins are computed in float32 with a rigorous error
   bound and only the rows that the bound cannot exclude are recomputed in float64, which picks
   the same candidates at about half the cost. The candidates' exact logits on ``J`` come next,
   and if none of them violates (6) or (7) there, their logits on *all* other columns follow
   from a thin Haar factor: the rest of ``Z`` is ``Q R_W`` with ``Q`` Haar and independent of
   ``R_W``, so for the candidates' vectors
   ``R_W u_l = O [K; 0]`` (a QR factorization, ``O`` orthogonal) the logits are ``Q P K`` with
   ``P`` the first ``r`` columns of ``O``, and ``Q P`` is itself Haar: ``T R_T^{-1}`` for a
   Gaussian ``T`` (``(L - |J|) x r``, ``R_T`` its Cholesky factor). A violation ends the draw;
   the rest of ``Z`` is never generated. When the candidates' vectors are linearly dependent
   (equal rows of ``B``, for instance, which occur for ``k >= 2``), a QR factorization of them
   would leave part of ``O``, and so of the draw, to rounding. So ``r`` is the dimension of
   their span, ``O`` is built from a basis of it chosen exactly on ``B``
   (:func:`sattn.linalg.independent_rows`, greedy in the candidates' order), and every
   candidate's ``K`` column is its vector in that basis's orthonormal coordinates: the draw is
   a function of its seed.
3. **Completing the same draw (stage 2).** Otherwise the rest of ``Z`` is generated conditionally
   on everything drawn so far: ``Z_rest = Qt O^T R_W`` with ``Qt`` the orthonormal factor of
   ``Z' = [T, X]`` (``X`` fresh Gaussian). The first ``r`` columns of ``Qt`` are ``T R_T^{-1}``,
   so ``Q = Qt O^T`` is Haar with ``Q P = T R_T^{-1}``, and ``Z_rest`` is exactly Gaussian with
   Gram matrix ``W``. ``Qt`` is never formed: the logits against those columns are
   ``(U M^T) Z'^T`` with ``M = R'^{-1} O^T R_W`` (``R'`` the Cholesky factor of ``Z'^T Z'``).
4. **Early rejection by row blocks, riskiest rows first.** All rows are ranked by their support
   margins (a low support logit is what typically breaks (7)): the rows with support in ``J``
   keep their stage-1 scores, except the stage-1 candidates already checked against every
   column, which go last; the others are scored in single precision with ``C^{-1}`` replaced
   by ``I / L`` (``C = Z^T Z`` is close to ``L I`` for ``L >> d``), which skips a
   ``(rows x d) x (d x d)`` product, and, when ``n >= REST_RATIO d``, with the rest of ``Z``
   replaced by ``Z'`` itself (``M`` is close to ``O^T``, which moves only ``r`` of the ``d``
   directions), which skips an ``n x d x d`` one. Only the first two blocks are ordered at once
   (``argpartition``); the rest of the order is computed if a later block is needed. Then the
   rows are checked in blocks of growing size; the first violating block ends the draw. The
   ranking is a heuristic: it changes the cost of a draw, never its decision.
5. **float32 screening, float64 confirmation.** Each block of logits is one float32 GEMM. By the
   standard rounding-error bound for dot products (any summation order),
   ``|fl(u.z) - u.z| <= gamma_{n} ||u|| ||z||`` with ``gamma_n = n u / (1 - n u)``, ``u = 2^-24``;
   every margin is a difference of two logits, so a row whose float32 margin is below minus twice
   that bound fails in exact arithmetic, one above it passes, and only rows inside the band are
   recomputed in float64. From ``FLOAT32_STAGE1_MIN_L`` on, a block is computed as
   ``Z U^T`` (the faster orientation of the same products) and its columns in ``J`` first: the
   margins with the largest logit taken over ``J`` only are upper bounds, so a row already
   below the band there fails, and the other half of the product is skipped.

Which numbers are drawn first (the set ``J``, the candidates) depends only on the target and on
numbers already drawn, so it changes the cost of a draw and which draw a seed produces, never the
law of the decision. :meth:`FastEngine.level` starts a width with a small ``J`` (far below
``d_min`` nearly every row fails) and switches to the larger one once a draw survives stage 1.

The distribution of the accepted/rejected decision is therefore that of Algorithm 1 with
``method="direct"`` (and, by :prf:ref:`con-rem-svd-free`, of the SVD route); on a given full ``Z``
the decision equals the reference decision on ``Y = qr(Z)`` (tests check both).

References
----------
Theorem 1, Algorithm 1, Section 4 (experiments) of Likhosherstov, Choromanski & Weller (2021);
Bartlett decomposition of the Wishart distribution; Higham, *Accuracy and Stability of Numerical
Algorithms*, Sec. 3.1 (dot-product error bound). :ref:`ch-computation`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla

from ..linalg import independent_rows
from .._validate import MAX_DRAWS, MAX_L, check_int, check_real, check_rng, check_size
from ..results import Result
from .target import SparseTarget, draw_generator, prepare_target

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = ["FastEngine", "DrawOutcome", "LevelResult"]
# The module's public names: the flat ones, then those that stay in this module.
__all__ = [*__flat__, "BATCH_DRAWS", "BATCH_MAX_L", "ENGINE_VERSION", "FLOAT32_STAGE1_MIN_L", "REST_RATIO"]

#: Identifies how the fast engine turns a seed into a draw; part of every task's parameters, so
#: results of another engine version are refused on resume instead of being mixed in. Version
#: ``fast-3`` takes a defined basis of dependent stage-1 candidates (``span_basis=True``, see
#: :class:`FastEngine`); it computes exactly what ``fast-2`` (``span_basis=False``) computed on
#: every draw whose stage-1 candidates are independent.
ENGINE_VERSION = "fast-3"

_U32 = 2.0 ** -24

#: Automatic batch size of :meth:`FastEngine.level` (draws whose stage 1 is computed together) ...
BATCH_DRAWS = 16
#: ... for targets of at most this length; longer ones decide one draw at a time.
BATCH_MAX_L = 1024
#: The most draws :meth:`FastEngine.level` computes together (the stacked arrays grow with it).
MAX_BATCH = 1024


def _check_batch(batch):
    return check_size("batch", batch, cap=MAX_BATCH,
                      why="the draws of one batch are stacked in memory")
#: From this length on (with ``use_float32``), stage 1 scores its rows in float32 with a rigorous
#: error band and recomputes in float64 only the rows that can be candidates (the candidates and
#: their numbers are those of the float64 scores; below it the float64 products are small).
FLOAT32_STAGE1_MIN_L = 1025
#: The ranking of stage 2 takes the rows of ``Z`` outside ``J`` as ``Z'`` itself (no ``n x d x d``
#: product) when ``n >= REST_RATIO * d`` (see ``FastEngine._risk_scores``).
REST_RATIO = 16


def _cholesky_upper(C):
    """Upper Cholesky factor ``R`` of a symmetric positive definite ``C = R^T R`` (LAPACK)."""
    R, info = sla.lapack.dpotrf(C, lower=0, clean=1)
    if info:
        raise np.linalg.LinAlgError(f"Cholesky factorization failed (dpotrf info {info}): the "
                                    "Gram matrix of the draw is not positive definite")
    return R


def _spd_inverse(C):
    """Inverse of a symmetric positive definite matrix through its Cholesky factor (LAPACK)."""
    Ci, info = sla.lapack.dpotri(_cholesky_upper(C), lower=0)   # upper triangle; lower is 0
    if info:
        raise np.linalg.LinAlgError(f"inverting the Gram matrix failed (dpotri info {info})")
    return Ci + np.triu(Ci, 1).T


def _solve_upper(R, B):
    """``R^{-1} B`` for an upper triangular ``R`` (LAPACK ``trtrs``)."""
    X, info = sla.lapack.dtrtrs(R, B, lower=0)
    if info:
        raise np.linalg.LinAlgError(f"triangular solve failed (dtrtrs info {info})")
    return X


@dataclass
class DrawOutcome(Result):
    """Decision on one draw and where it was taken.

    ``stage`` is ``"stage1"`` (rejected from the partial draw), ``"screen"`` (decided by float32
    screening), or ``"confirm"`` (float64 recomputation of borderline rows was needed).
    ``rest_checked`` says whether stage 1 also checked its candidates against the columns outside
    the partial set (through the thin Haar factor).

    ``rows_screened`` depends on the order in which stage 2 screens the rows (a ranking
    heuristic, see the module docs): it changed when the ranking was made cheaper (same
    ``ENGINE_VERSION``, since ``ok`` and ``stage`` are unchanged for every seed).
    """

    ok: bool
    stage: str
    rows_screened: int
    borderline: int
    worst_row: int | None
    Z: np.ndarray | None = None   # the full Gaussian matrix of the draw (only if requested)
    rest_checked: bool = False

    @property
    def message(self) -> str:
        """One line: accepted or rejected, at which stage, and the rows it took."""
        where = f"{self.stage}, {self.rows_screened} rows checked, {self.borderline} borderline"
        if self.ok:
            return f"draw accepted: every row meets (6)-(7) ({where})"
        return f"draw rejected: row {self.worst_row} violates (6) or (7) ({where})"


@dataclass
class LevelResult(Result):
    """Outcome of up to ``n_draws`` draws at one width ``d`` (stops at the first success).

    ``ok`` says whether a draw succeeded (``success`` is its deprecated alias). ``d, ok, draws``
    and ``stage1_rejects`` depend only on the seeds (up to float64 rounding, which decides nothing
    short of an exact tie); so do ``screen_rejects`` and ``confirmations``, except that a
    rejected draw whose violating rows all lie within twice the float32 rounding band of zero
    counts as a screening rejection or as a confirmation depending on how the matrix library
    rounds the float32 products (rare: the band is about ``1e-4`` wide). ``rows_screened``
    also depends on the screening order (a ranking heuristic, see :class:`DrawOutcome`).
    """

    d: int
    ok: bool
    draws: int
    stage1_rejects: int = 0
    screen_rejects: int = 0
    confirmations: int = 0
    rows_screened: int = 0

    @property
    def message(self) -> str:
        """One line: the width, whether a draw succeeded, and how the draws were decided."""
        verdict = (f"a draw succeeded at draw {self.draws}" if self.ok
                   else f"no draw succeeded in {self.draws}")
        return (f"d = {self.d}: {verdict} ({self.stage1_rejects} rejected in stage 1, "
                f"{self.screen_rejects} by screening, {self.confirmations} confirmations)")


@dataclass
class _Draw:
    """The numbers of one draw, as the stages of :meth:`FastEngine.draw` produce them."""

    d: int
    scale: float
    P: dict                         # the partial set and its cached layout (FastEngine._partial)
    ZJ: np.ndarray                  # rows J of Z (float64)
    RW: np.ndarray | None           # Bartlett factor of the Gram matrix of the rest (None: J = all)
    Cinv: np.ndarray                # C^{-1}, C = Z^T Z
    r: int = 0                      # stage-1 candidates
    cand: np.ndarray | None = None  # the candidates, once checked against every column
    score_vis: np.ndarray | None = None
    ZJ32: np.ndarray | None = None  # Z_J in float32, rows [:m] of the "Z32" workspace (if kept)
    zj_norm: float | None = None    # largest row norm of Z_J (float32 rows, rounded up)
    T: np.ndarray | None = None     # thin Haar factor's Gaussian (n x r, float32)
    qr_in: np.ndarray | None = None  # R_W u_l of a basis of the candidates (None: not checked
    dependent: bool = False         # outside J); whether the candidates' vectors were dependent
    Zp: np.ndarray | None = None    # Z' = [T, X] (float32)
    Zp64: np.ndarray | None = None
    Mt: np.ndarray | None = None    # R'^{-1} O^T R_W
    CinvMt: np.ndarray | None = None

    @property
    def rest_checked(self) -> bool:
        return self.qr_in is not None


@dataclass
class FastEngine:
    """Decide draws of Algorithm 1 for one target without ``L x L`` arrays (see module docs).

    Parameters
    ----------
    A : array_like or scipy.sparse matrix, shape (L, L)
        Target pattern.
    eps1, eps2 : float
        Tolerances of criteria (6)-(7).
    partial_fraction : float, default 0.5
        Stage 1 draws the rows of ``Z`` in a set ``J`` of about this fraction of the columns (the
        supports of randomly chosen rows), ``0 < partial_fraction <= 1``.
    probe_fraction : float, default 0.1
        The smaller ``J`` that :meth:`level` uses until a draw survives stage 1 (far below
        ``d_min`` almost every row fails, and a small partial draw is enough to see it).
    candidates : int, default 32
        Rows of the partial draw checked against *all* columns in stage 1 (the rows with the
        lowest support margins, see ``FastEngine._risk_score``); at most ``131072``.
    first_block : int, default 64
        Rows of the first float32 block of stage 2; later blocks double, up to ``max_block``
        (both at most ``131072``, the largest L).
    max_block : int, default 1024
        Largest block; also capped so one block has at most ``2**23`` entries (32 MB).
    use_float32 : bool, default True
        Screen in float32 (with the rigorous error band); False computes blocks in float64.
    batch : int, optional
        Draws whose stage 1 :meth:`level` computes together, as one set of stacked array
        operations (``1``: one draw at a time). The default, ``None``, is automatic:
        ``BATCH_DRAWS`` when ``L <= BATCH_MAX_L`` (where the fixed cost of the many small array
        operations of a draw outweighs its arithmetic), else 1. Batching never changes a result
        (see :meth:`level`). At most 1024 (``MAX_BATCH``): the stacked arrays grow with it.
        A size above its cap is a :class:`sattn.SizeTooLargeError`.
    span_basis : bool, default True
        When stage 1's candidates are linearly dependent, take a basis of their span chosen
        exactly on ``B`` (module docs, item 2), so that the draw is a function of its seed
        (engine version ``fast-3``). False factorizes them as they are, as engine version
        ``fast-2`` did, which leaves part of such a draw to rounding; it is kept only to replay
        and audit ``fast-2`` results (``tools/audit_engine_rank.py``). On a draw whose
        candidates are independent both compute the same numbers.

    References
    ----------
    Algorithm 1 of Likhosherstov et al. (2021); :ref:`ch-computation`.
    """

    A: object
    eps1: float
    eps2: float
    partial_fraction: float = 0.5
    probe_fraction: float = 0.1
    candidates: int = 32
    first_block: int = 64
    max_block: int = 1024
    use_float32: bool = True
    batch: int | None = None
    span_basis: bool = True
    target: SparseTarget = field(init=False, repr=False)

    def __post_init__(self):
        self.target = prepare_target(self.A, self.eps1, self.eps2)
        self.A = None  # do not keep a dense copy alive
        t = self.target
        self.L = t.L
        self.partial_fraction = check_real("partial_fraction", self.partial_fraction, low=0.0,
                                           high=1.0, low_open=True)
        self.probe_fraction = check_real("probe_fraction", self.probe_fraction, low=0.0,
                                         high=1.0, low_open=True)
        rows = "a count of rows of the target, whose L is at most MAX_L = 131072"
        self.candidates = check_size("candidates", self.candidates, low=0, cap=MAX_L, why=rows)
        self.first_block = check_size("first_block", self.first_block, cap=MAX_L, why=rows)
        self.max_block = check_size("max_block", self.max_block, cap=MAX_L, why=rows)
        for name in ("use_float32", "span_basis"):
            value = getattr(self, name)
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{name} must be a bool, got {value!r} ({type(value).__name__})")
        if self.batch is not None:
            self.batch = _check_batch(self.batch)
        # the large-L path (module docs, items 2 and 5): float32 stage 1, transposed blocks
        self._large = bool(self.use_float32) and t.L >= FLOAT32_STAGE1_MIN_L
        cap = max(1, (1 << 23) // t.L)
        self._max_block = max(1, min(self.max_block, cap))
        # partial sets J: supports of rows in one fixed random order until the target size
        perm = np.random.default_rng(20210607).permutation(t.L)
        _, first = np.unique(t.cols[perm].ravel(), return_index=True)
        self._cover_perm = perm
        self._cover_rows = np.sort(first // t.k_max)   # rows of perm needed to cover c columns
        self._jsets = {}
        self._partial_cache = {}
        self._triu_cache = {}
        self._work = {}

    def _ws(self, name, shape, dtype=np.float64):
        """A workspace array kept between draws (contents undefined). Reusing the large
        temporaries of a draw, instead of allocating them afresh, avoids the page faults of
        freshly mapped memory, which cost about a tenth of a draw's time on a virtual machine."""
        a = self._work.get(name)
        if a is None or a.shape != shape or a.dtype != dtype:
            a = self._work[name] = np.empty(shape, dtype=dtype)
        return a

    def _triu(self, d):
        """Indices of the strict upper triangle of a ``d x d`` matrix (cached)."""
        iu = self._triu_cache.get(d)
        if iu is None:
            iu = self._triu_cache[d] = np.triu_indices(d, 1)
        return iu

    # ------------------------------------------------------------------ criteria on a block
    def _row_margins(self, rows, gs, off):
        """``min(margin (6), margin (7))`` of each row from its support logits ``gs`` (rows x
        k_max, in the order of ``target.cols``) and its largest off-support logit ``off``.
        Leading batch axes are allowed (``rows`` of shape (b, r), ``gs`` of shape (b, r, k_max))."""
        t = self.target
        gs = np.asarray(gs, dtype=np.float64)
        r = gs - t.logA[rows]
        m6 = t.log1p_eps1 - (r.max(axis=-1) - r.min(axis=-1))
        return np.minimum(m6, (gs.min(axis=-1) - off) - t.log_inv_eps2)

    def _split(self, rows, G, colpos):
        """Support logits (float64) and largest off-support logit of each row of a logit block
        ``G`` (rows x columns; ``colpos[c]`` is the position of column ``c`` in ``G``). Sets the
        support entries of ``G`` to -inf."""
        t = self.target
        ar = np.arange(len(rows))[:, None]
        p = colpos[t.cols[rows]]
        gs = G[ar, p].astype(np.float64)
        G[ar, p] = -np.inf
        off = G.max(axis=1).astype(np.float64) if G.shape[1] else np.full(len(rows), -np.inf)
        return gs, off

    def _margins_t(self, dr: _Draw, rows, U32, V32, ZJ32, tol):
        """Float32 row margins of a block from the transposed logits ``Z @ U^T`` (columns x rows,
        the faster orientation of the same products), the columns in ``J`` first.

        The support logits outside ``J`` are single float32 dot products (the rounding bound
        holds for any order of summation). The margins with the largest logit taken over the
        columns in ``J`` only are upper bounds of the full ones, so a row below ``-tol`` there
        fails in exact arithmetic and the logits against the rest of ``Z`` are not computed (the
        block's result is then those margins). Otherwise the rest follows and the margins are
        the full ones.
        """
        L, P = self.L, dr.P
        m, colpos = P["m"], P["colpos"]
        GT = self._ws("GT", (L * self._max_block,), np.float32)[: L * len(rows)]
        GT = GT.reshape(L, len(rows))
        np.matmul(ZJ32, U32.T, out=GT[:m])
        p = colpos[self.target.cols[rows]]                            # (rows, k) positions
        ar = np.broadcast_to(np.arange(len(rows))[:, None], p.shape)
        inJ = p < m
        gs = np.empty(p.shape, np.float32)
        gs[inJ] = GT[p[inJ], ar[inJ]]
        out = ~inJ
        gs[out] = np.einsum("ij,ij->i", V32[ar[out]], dr.Zp[p[out] - m])
        GT[p[inJ], ar[inJ]] = -np.inf
        off = GT[:m].max(axis=0).astype(np.float64)
        gs = gs.astype(np.float64)
        marg = self._row_margins(rows, gs, off)
        if (marg < -tol).any():
            return marg
        np.matmul(dr.Zp, V32.T, out=GT[m:])
        GT[p[out], ar[out]] = -np.inf
        return self._row_margins(rows, gs, np.maximum(off, GT[m:].max(axis=0)))

    def _margins(self, rows, G, colpos):
        """Row margins ``min(margin6, margin7)`` of a logit block ``G`` (see ``_split``)."""
        return self._row_margins(rows, *self._split(rows, G, colpos))

    def _risk_score(self, rows, U, Zs):
        """Ranking score of rows from ``U`` (rows x d, rows of ``(L/d)(BZ)C^{-1}``) and their
        support rows of ``Z`` (rows x k x d): the row margin with the largest off-support logit
        taken as 0. Only the support logits vary much between rows, so low scores mark the rows
        most likely to fail; the score orders work and is never a decision."""
        return self._row_margins(rows, np.einsum("rd,rkd->rk", U, Zs), 0.0)

    def _partial(self, d, fraction):
        """The partial set ``J`` for width ``d`` and everything about it that does not depend on
        the draw (cached).

        ``J`` holds the supports of rows taken in a fixed random order until about
        ``fraction * L`` columns are covered; ``J`` is chosen without looking at the draw, so
        which rows of ``Z`` are drawn first changes the cost of a draw, never its law. If fewer
        than ``d`` rows would be left for the Bartlett factor, ``J`` is all rows.
        """
        t = self.target
        L = t.L
        jset = self._jsets.get(fraction)
        if jset is None:
            jsize = min(L, max(1, int(round(fraction * L))))
            take = int(self._cover_rows[min(jsize, self._cover_rows.size) - 1]) + 1
            jset = self._jsets[fraction] = np.unique(t.cols[self._cover_perm[:take]].ravel())
        full = L - jset.size < d
        key = (jset.size, bool(full))
        if key in self._partial_cache:
            return self._partial_cache[key]
        inJ = np.ones(L, dtype=bool)
        if not full:
            inJ[:] = False
            inJ[jset] = True
        J = np.flatnonzero(inJ)
        rest = np.flatnonzero(~inJ)
        colpos = np.empty(L, dtype=np.int64)
        colpos[J] = np.arange(J.size)
        colpos[rest] = J.size + np.arange(rest.size)
        in_j = inJ[t.cols].all(axis=1)
        vis, nonvis = np.flatnonzero(in_j), np.flatnonzero(~in_j)
        info = dict(J=J, rest=rest, m=J.size, n=rest.size, colpos=colpos, vis=vis,
                    vis_pos=colpos[t.cols[vis]], vis_b=t.bvals[vis],
                    vis_b32=t.bvals[vis].astype(np.float32),
                    vis_babs=np.abs(t.bvals[vis]).sum(axis=1), nonvis=nonvis,
                    nonvis_pos=colpos[t.cols[nonvis]],
                    nonvis_b32=t.bvals[nonvis].astype(np.float32))
        self._partial_cache[key] = info
        return info

    # ------------------------------------------------------------------ one draw
    def draw(self, d, rng, *, complete: bool = False, fraction: float | None = None
             ) -> DrawOutcome:
        """Decide one draw of Algorithm 1 at width ``d``.

        The stages (see the module docs) are separate methods, called in this order; each draws
        its random numbers from ``rng`` in a fixed order, so a seed always produces the same draw:

        1. ``_partial_draw``: ``Z_J`` and the Bartlett factor ``R_W`` of the rest's Gram
           matrix, ``C^{-1}``;
        2. ``_stage1``: risk scores of the rows whose support lies in ``J`` and the exact
           check of the riskiest ones (through the thin Haar factor for the columns outside
           ``J``); a violation rejects the draw;
        3. ``_complete``: the rest of ``Z``, conditionally on everything drawn so far;
        4. ``_screen``: all rows in blocks, riskiest first, in float32 with a rigorous error
           band; a violation rejects the draw;
        5. ``_confirm``: float64 recomputation of the rows inside the band.

        Parameters
        ----------
        d : int
            Width, ``1 <= d <= L``.
        rng : numpy.random.Generator
            The draw's own generator (see :func:`~sattn.experiments.target.draw_generator`).
        complete : bool, default False
            Always generate the whole draw and return its Gaussian matrix ``Z`` (``L x d``,
            float64) in the outcome, so that tests can rerun the reference on ``Y = qr(Z)``.
        fraction : float, optional
            Size of the partial set ``J`` as a fraction of ``L`` (default ``partial_fraction``).
            It changes which numbers are drawn first, hence the cost and the particular draw a
            seed produces, never the law of the decision.

        Returns
        -------
        DrawOutcome

        Raises
        ------
        ValueError, TypeError
            ``d`` out of ``[1, L]``, ``fraction`` out of ``(0, 1]``, ``rng`` not a
            :class:`numpy.random.Generator`, or ``d >= 1600`` with float32 screening.

        References
        ----------
        Algorithm 1 of Likhosherstov et al. (2021), one iteration; :ref:`ch-computation`.
        """
        d = check_int("d", d, low=1, high=self.L)
        rng = check_rng("rng", rng)
        fraction = self.partial_fraction if fraction is None else check_real(
            "fraction", fraction, low=0.0, high=1.0, low_open=True)
        dr = self._partial_draw(d, rng, self._partial(d, fraction))
        return self._finish(dr, rng, self._stage1(dr, rng), complete)

    def _finish(self, dr: _Draw, rng, fail, complete=False) -> DrawOutcome:
        """The outcome of a draw after stage 1 (``fail``: the rejecting row, or None): a stage-1
        rejection, or the completion of the draw and its screening."""
        if fail is not None and not complete:
            return DrawOutcome(False, "stage1", dr.r, 0, fail, None, dr.rest_checked)
        self._complete(dr, rng)
        Zfull = self._full_z(dr) if complete else None
        if fail is not None:
            return DrawOutcome(False, "stage1", dr.r, 0, fail, Zfull, dr.rest_checked)
        return self._screen(dr, Zfull)

    def _partial_draw(self, d, rng, P) -> _Draw:
        """Stage 1, the numbers: ``Z_J`` (Gaussian) and the Bartlett factor ``R_W`` of the Gram
        matrix ``W`` of the rest of ``Z``, then ``C^{-1}`` with ``C = Z_J^T Z_J + R_W^T R_W``."""
        m, n = P["m"], P["n"]
        buf = self._ws("buf", (m + (d if n else 0), d))   # [Z_J; R_W]: C = buf^T buf
        rng.standard_normal(out=buf[:m])
        ZJ = buf[:m]
        if n:
            RW = buf[m:]
            RW.fill(0.0)
            iu = self._triu(d)
            RW[iu] = rng.standard_normal(iu[0].size)
            RW.flat[:: d + 1] = np.sqrt(rng.chisquare(n - np.arange(d)))
        else:
            RW = None
        C = buf.T @ buf
        return _Draw(d=d, scale=self.L / d, P=P, ZJ=ZJ, RW=RW, Cinv=_spd_inverse(C))

    def _stage1(self, dr: _Draw, rng):
        """Stage 1, the decision: the row that rejects the draw from its partial numbers, or None.

        Rows whose support lies in ``J``: their support margins rank them (the ranking is reused
        by stage 2) and pick the candidates, which are then checked exactly against *every*
        column; the columns outside ``J`` through the Haar factor:
        ``(Z_rest C^{-1} h)^T = Q (R_W u)`` and ``Q P = T R_T^{-1}`` (see module docs). Double
        precision: the choice decides which numbers are drawn next, so it must not hinge on
        single-precision rounding that differs between machines.
        """
        P, ZJ, d, n = dr.P, dr.ZJ, dr.d, dr.P["n"]
        vis = P["vis"]
        dr.r = r = min(self.candidates, vis.size, d)
        dr.T = np.empty((n, 0), np.float32)
        if not vis.size:
            return None
        cand, Uc = self._candidates(dr, r, keep=True)
        if not r:
            return None
        gsJ, off = self._split(cand, Uc @ ZJ.T, P["colpos"])
        return self._stage1_rest(dr, rng, cand, Uc, gsJ, off)

    def _candidates(self, dr: _Draw, r, keep=False):
        """Risk scores of the rows whose support lies in ``J`` (``dr.score_vis``) and the ``r``
        candidates: the rows with the lowest float64 scores (``np.argsort``, stable), with their
        rows ``Uc`` of ``(L/d)(BZ)C^{-1}`` in float64.

        From ``FLOAT32_STAGE1_MIN_L`` on (with ``use_float32``) the scores are computed in float32
        and only the rows whose score is within its rigorous error bound ``e`` of the ``r``-th
        lowest are recomputed in float64 (``_candidates32``); the others keep their float32
        scores, which only order the screening. ``keep``: leave ``Z_J`` in float32 in the
        ``"Z32"`` workspace for stage 2 (the one-draw path)."""
        if self._large:
            return self._candidates32(dr, r, keep)
        Uv, dr.score_vis = self._scores64(dr)
        sel = np.argsort(dr.score_vis, kind="stable")[:r]
        return dr.P["vis"][sel], Uv[sel]

    def _scores64(self, dr: _Draw, S=None):
        """Rows ``Uv`` of ``(L/d)(BZ)C^{-1}`` and risk scores, in float64, of the rows ``vis[S]``
        whose support lies in ``J`` (all of them, in workspaces, when ``S`` is None)."""
        P, ZJ, d = dr.P, dr.ZJ, dr.d
        vis, vp, b = P["vis"], P["vis_pos"], P["vis_b"]
        if S is None:
            Zs = np.take(ZJ, vp, axis=0, mode="clip",      # valid indices; "raise" buffers
                         out=self._ws("Zs", vp.shape + (d,)))                # (|vis|, k, d)
            H = np.einsum("rk,rkd->rd", b, Zs, out=self._ws("Hv", (vis.size, d)))
            H *= dr.scale
            Uv = np.matmul(H, dr.Cinv, out=self._ws("Uv", (vis.size, d)))
            return Uv, self._risk_score(vis, Uv, Zs)
        Zs = np.take(ZJ, vp[S], axis=0)
        H = np.einsum("rk,rkd->rd", b[S], Zs)
        H *= dr.scale
        Uv = H @ dr.Cinv
        return Uv, self._risk_score(vis[S], Uv, Zs)

    def _candidates32(self, dr: _Draw, r, keep):
        """``_candidates`` with float32 scores and a float64 recomputation of the rows that can
        be candidates.

        Rounding bound (entrywise, unit roundoff ``u = 2^-24``, ``g = gamma_{d+k+4}``): with
        ``H~ = fl((L/d) B Z~)`` (``Z~`` the float32 ``Z_J``), ``C~ = fl(C^{-1})``,
        ``U~ = fl(H~ C~)`` and ``N >= || |C~| ||_2`` (the largest column sum of ``|C~|``, a bound
        since ``C~`` is symmetric),

            ||U~_l - u_l|| <= E_l = N ((g + 2u) ||H~_l|| + g (L/d) sum_j |b_lj| z_max),
            ||U~_l|| <= (1 + g) N ||H~_l||,

        and each support logit ``fl(U~_l . z~_c)`` is within
        ``delta_l = (g ||U~_l|| + E_l + u (||U~_l|| + E_l)) z_max (1 + u)`` of ``u_l . z_c``, with
        ``z_max`` the largest row norm of ``Z_J``. A score (the row margin with the off-support
        logit taken as 0) moves by at most twice that, so ``e_l = 2.02 delta_l + 1e-9`` bounds
        the difference of the float32 and float64 scores (the float64 rounding, about
        ``2^-29`` times the float32 one, is inside the 1% and the ``1e-9``). With ``tau`` the
        ``r``-th lowest ``score~ + e``, at least ``r`` float64 scores are ``<= tau``, so every
        candidate lies in ``S = {score~ - e <= tau}``; the rows of ``S`` are recomputed by
        ``_scores64``, as ``_candidates`` computes all rows below the threshold, and their ``r`` lowest (stable order) are the candidates. (A
        product over fewer rows may round its last bit differently, as the same product on another
        machine's matrix library does; the draw is the same to about ``1e-15``.)
        """
        P, ZJ, d, m = dr.P, dr.ZJ, dr.d, dr.P["m"]
        vis, vp = P["vis"], P["vis_pos"]
        k = vp.shape[1]
        f32 = np.float32
        Z32 = (self._ws("Z32", (self.L, d), f32) if keep else self._ws("ZJ32", (m, d), f32))
        ZJ32 = Z32[:m]
        np.copyto(ZJ32, ZJ)
        # float32 sum of squares of d terms: relative error below d u < 1e-4 (d < 1600)
        zmax = float(np.sqrt(np.einsum("ij,ij->i", ZJ32, ZJ32).max() * (1 + 1e-4)))
        Zs = np.take(ZJ32, vp, axis=0, mode="clip", out=self._ws("Zs32v", vp.shape + (d,), f32))
        H = np.einsum("rk,rkd->rd", P["vis_b32"], Zs, out=self._ws("Hv32", (vis.size, d), f32))
        H *= f32(dr.scale)
        C32 = dr.Cinv.astype(f32)
        Uv = np.matmul(H, C32, out=self._ws("Uv32", (vis.size, d), f32))
        score = self._row_margins(vis, np.einsum("rd,rkd->rk", Uv, Zs), 0.0)
        u = _U32
        g = (d + k + 4) * u / (1 - (d + k + 4) * u)
        N = float(np.abs(C32).sum(axis=0, dtype=np.float64).max()) * (1 + 1e-6)
        hn = np.sqrt(np.einsum("rd,rd->r", H, H).astype(np.float64) * (1 + 1e-4))
        E = N * ((g + 2 * u) * hn + g * dr.scale * P["vis_babs"] * zmax)
        Un = (1 + g) * N * hn
        e = 2.02 * (g * Un + E + u * (Un + E)) * zmax * (1 + u) + 1e-9
        if keep:
            dr.ZJ32, dr.zj_norm = ZJ32, zmax
        if not r:
            dr.score_vis = score
            return vis[:0], np.empty((0, d))
        tau = np.partition(score + e, r - 1)[r - 1]
        S = np.flatnonzero(score - e <= tau)
        UvS, scoreS = self._scores64(dr, S)
        score[S] = scoreS
        dr.score_vis = score
        sel = np.argsort(scoreS, kind="stable")[:r]
        return vis[S[sel]], UvS[sel]

    def _stage1_rest(self, dr: _Draw, rng, cand, Uc, gsJ, off, mc=None):
        """The end of stage 1 for candidates ``cand`` (rows ``Uc`` of ``(L/d)(BZ)C^{-1}``, support
        logits ``gsJ`` and largest logit ``off`` on ``J``, row margins ``mc`` on ``J`` if already
        computed): if no candidate violates (6)-(7) on ``J``, their logits on the other columns
        through the thin Haar factor (draws ``T`` from ``rng``); the rejecting row, or None."""
        n, r = dr.P["n"], dr.r
        if mc is None:
            mc = self._row_margins(cand, gsJ, off)
        elif mc.min() < -1e-9:          # rejected on J (the common case far below d_min)
            return int(cand[int(np.argmin(mc))])
        if n and mc.min() >= -1e-9:     # no violation on J: look at the other columns too
            dr.cand = cand
            qr_in = dr.RW @ Uc.T                                        # R_W u_l = O [K; 0]
            basis = self._candidate_basis(cand) if self.span_basis else None
            if basis is None:                   # independent candidates (the common case)
                dr.qr_in = qr_in
                K = np.linalg.qr(qr_in, mode="r")[:r]
            else:                               # a basis of their span, then every candidate
                dr.qr_in = qr_in[:, basis]      # in the coordinates of its orthonormal factor
                K = np.linalg.qr(dr.qr_in)[0].T @ qr_in
                dr.dependent = True
            dr.T = rng.standard_normal((n, K.shape[0]), dtype=np.float32)
            T64 = dr.T.astype(np.float64)
            Grest = T64 @ _solve_upper(_cholesky_upper(T64.T @ T64), K)
            mc = self._row_margins(cand, gsJ, np.maximum(off, Grest.max(axis=0)))
        if mc.min() < -1e-9:
            return int(cand[int(np.argmin(mc))])
        return None

    def _candidate_basis(self, cand):
        """None when the vectors ``u_l`` of the candidates ``cand`` are linearly independent;
        otherwise the positions in ``cand`` of a basis of their span.

        ``u_l`` is ``(L/d) B_l Z C^{-1}``, so the candidates' vectors are dependent exactly when
        their rows of ``B`` are (for independent rows, with probability one, since there are at
        most ``d`` of them). That is decided on ``B``, exactly (:func:`sattn.linalg.independent_rows`,
        greedy in the candidates' order), never on the rounded ``u_l``: a QR factorization of
        dependent vectors would take the rest of the draw from rounding noise. Equal rows of
        ``B`` (two rows with the same constraint) are the usual cause, for ``k >= 2``.
        """
        t = self.target
        cols = t.cols[cand]
        uniq, inv = np.unique(cols, return_inverse=True)
        M = np.zeros((cand.size, uniq.size))
        np.add.at(M, (np.repeat(np.arange(cand.size), cols.shape[1]), inv.ravel()),
                  t.bvals[cand].ravel())
        keep = independent_rows(M)
        return None if keep.size == cand.size else keep

    def _complete(self, dr: _Draw, rng) -> None:
        """Stage 2, the numbers: complete the same draw, conditionally on ``R_W`` and on ``Q P``.

        ``Z_rest = Q R_W`` with ``Q = Qt O^T``, ``Qt`` the orthonormal factor of ``Z' = [T, X]``:
        the first ``r`` columns of ``Qt`` are ``T R_T^{-1}``. ``Z'`` is never orthonormalised:
        the logits use ``M = R'^{-1} O^T R_W``.
        """
        d, n = dr.d, dr.P["n"]
        if n:
            O = np.linalg.qr(dr.qr_in, mode="complete")[0] if dr.qr_in is not None else None
            rT = dr.T.shape[1]
            X = rng.standard_normal(dtype=np.float32, out=self._ws("X", (n, d - rT), np.float32))
            if n >= REST_RATIO * d:    # the ranking reads Z' as rows [m:] of the Z32 workspace
                Zp = self._ws("Z32", (self.L, d), np.float32)[dr.P["m"]:]
            else:
                Zp = self._ws("Zp", (n, d), np.float32)                # [T, X]
            Zp[:, :rT] = dr.T
            Zp[:, rT:] = X
            Zp64 = self._ws("Zp64", (n, d))
            np.copyto(Zp64, Zp)
            RW = dr.RW
            dr.Mt = _solve_upper(_cholesky_upper(Zp64.T @ Zp64), RW if O is None else O.T @ RW)
            dr.CinvMt = dr.Cinv @ dr.Mt.T
        else:
            Zp = np.empty((0, d), np.float32)
            Zp64 = np.empty((0, d))
            dr.Mt = np.eye(d)
            dr.CinvMt = dr.Cinv
        dr.Zp, dr.Zp64 = Zp, Zp64

    def _z_rows(self, dr: _Draw, c):
        """The rows of the completed ``Z`` (float64) at columns ``c``."""
        m = dr.P["m"]
        p = dr.P["colpos"][c]
        out = np.empty((c.size, dr.d))
        j = p < m
        out[j] = dr.ZJ[p[j]]
        if (~j).any():
            out[~j] = dr.Zp64[p[~j] - m] @ dr.Mt
        return out

    def _full_z(self, dr: _Draw):
        """The whole Gaussian matrix ``Z`` (``L x d``, float64) of a completed draw."""
        P = dr.P
        Zfull = np.empty((self.L, dr.d))
        Zfull[P["J"]] = dr.ZJ
        if P["n"]:
            Zfull[P["rest"]] = dr.Zp64 @ dr.Mt
        return Zfull

    def _screen(self, dr: _Draw, Zfull) -> DrawOutcome:
        """Stage 2, the decision: every row in blocks of growing size, riskiest rows first.

        Each block of logits is one float32 GEMM; a row whose float32 margin is below minus the
        rounding bound fails in exact arithmetic and rejects the draw, one above it passes, and
        the rows inside the band go to ``_confirm``.
        """
        L, d, P, ZJ, Zp = self.L, dr.d, dr.P, dr.ZJ, dr.Zp
        m, n, colpos = P["m"], P["n"], P["colpos"]
        rc = dr.rest_checked
        f32 = self.use_float32
        if f32 and d >= 1600:
            raise ValueError(f"d = {d} is too large for the float32 screening bound (d < 1600)")
        Z32 = self._ws("Z32", (L, d), np.float32)        # rows [J; rest] of Z in float32
        ZJ32 = Z32[:m]
        if dr.ZJ32 is None:                              # not left there by stage 1
            np.copyto(ZJ32, ZJ)
        blocks = self._risk_blocks(dr, Z32)
        if f32:
            # float32 sum of squares of d terms: relative error below d * 2^-24 < 1e-4 (d < 1600)
            zj_norm = (dr.zj_norm if dr.zj_norm is not None else
                       float(np.sqrt(np.einsum("ij,ij->i", ZJ32, ZJ32).max() * (1 + 1e-4))))
            zp_norm = (float(np.sqrt(np.einsum("ij,ij->i", Zp, Zp).max() * (1 + 1e-4)))
                       if n else 0.0)
            nn = d + 2
            gam = nn * _U32 / (1 - nn * _U32)
        borderline_rows, borderline_u = [], []
        done = 0
        b = min(self.first_block, self._max_block)
        while done < L:
            rows = blocks(done, b)
            done += len(rows)
            H = dr.scale * self._bz(dr, rows)
            U = H @ dr.Cinv
            V = H @ dr.CinvMt
            if f32:
                un = np.sqrt(np.einsum("ij,ij->i", U, U))
                vn = np.sqrt(np.einsum("ij,ij->i", V, V))
                tol = 2.0 * gam * np.maximum(un * zj_norm, vn * zp_norm) * (1 + 1e-6) + 1e-10
                if self._large and n:
                    marg = self._margins_t(dr, rows, U.astype(np.float32),
                                           V.astype(np.float32), ZJ32, tol)
                else:
                    G = self._ws("Gfloat32", (self._max_block, L), np.float32)[:len(rows)]
                    np.matmul(U.astype(np.float32), ZJ32.T, out=G[:, :m])
                    if n:
                        np.matmul(V.astype(np.float32), Zp.T, out=G[:, m:])
                    marg = self._margins(rows, G, colpos)
            else:
                G = self._ws("Gfloat64", (self._max_block, L))[:len(rows)]
                np.matmul(U, ZJ.T, out=G[:, :m])
                if n:
                    np.matmul(V, dr.Zp64.T, out=G[:, m:])
                marg = self._margins(rows, G, colpos)
                tol = np.full(len(rows), 1e-10)
            bad = marg < -tol
            if bad.any():
                w = int(rows[int(np.argmax(bad))])
                return DrawOutcome(False, "screen", done, len(borderline_rows), w, Zfull, rc)
            near = np.abs(marg) <= tol
            if near.any():
                borderline_rows.append(rows[near])
                borderline_u.append((U[near], V[near]))
            b = min(2 * b, self._max_block)
        if not borderline_rows:
            return DrawOutcome(True, "screen", done, 0, None, Zfull, rc)
        return self._confirm(dr, Zfull, done, borderline_rows, borderline_u)

    def _confirm(self, dr: _Draw, Zfull, done, borderline_rows, borderline_u) -> DrawOutcome:
        """Stage 2, float64 confirmation of the rows inside the float32 error band."""
        m, n = dr.P["m"], dr.P["n"]
        rows = np.concatenate(borderline_rows)
        U = np.concatenate([u for u, _ in borderline_u])
        V = np.concatenate([v for _, v in borderline_u])
        G = np.empty((len(rows), self.L))
        G[:, :m] = U @ dr.ZJ.T
        if n:
            G[:, m:] = V @ dr.Zp64.T
        marg = self._margins(rows, G, dr.P["colpos"])
        if (marg < 0).any():
            w = int(rows[int(np.argmin(marg))])
            return DrawOutcome(False, "confirm", done, len(rows), w, Zfull, dr.rest_checked)
        return DrawOutcome(True, "confirm", done, len(rows), None, Zfull, dr.rest_checked)

    def _bz(self, dr: _Draw, rows):
        """``B[rows] @ Z`` of the completed draw."""
        t = self.target
        c = t.cols[rows]
        Zs = self._z_rows(dr, c.ravel()).reshape(c.shape + (-1,))
        return np.einsum("rk,rkd->rd", t.bvals[rows], Zs)

    def _risk_scores(self, dr: _Draw, Z32):
        """Risk scores of all rows (low: likely violator), for the order of the screening only.

        * Rows whose support lies in ``J`` keep their stage-1 scores (``_risk_score``, double
          precision), except the stage-1 candidates that were checked against *every* column
          (``dr.cand``): they already passed, so they get ``+inf`` and are screened last.
        * The other rows (``P["nonvis"]``) are scored in single precision with ``C^{-1}``
          replaced by ``I / L``: ``C = Z^T Z`` is close to ``L I`` for ``L >> d`` (relative
          deviation about ``sqrt(d / L)``), so their support logits are approximately
          ``(1/d) (B Z)_l . z_c``, which skips the ``(rows x d) x (d x d)`` product by ``C^{-1}``
          (about a third of the cost of ranking at ``L = 32768``) and orders the rows nearly as
          well (measured: the violating row of a draw just below ``d_min`` lands in the same
          block).

        * When ``n >= REST_RATIO d``, the rows of ``Z`` outside ``J`` are taken as ``Z'``
          itself instead of ``Z' M^T``: ``M = R'^{-1} O^T R_W`` with both triangular factors
          close to ``sqrt(n) I`` (relative deviation about ``sqrt(d / n) <= 1/4``), and ``O^T``
          moves only the ``r`` directions of the stage-1 candidates, so the approximate logits
          keep most of their row-to-row variation. This skips an ``n x d x d`` product (a
          tenth of a draw at ``L = 32768``). On 15 draws
          just below ``d_min`` each at ``L = 8192`` and ``32768`` (setup k2-g2-e7-0.5), the
          median position of the first violating row in the order was 29 vs 26 and 41 vs 37
          with the exact rows; a worse order costs blocks, never a decision.

        ``Z32`` (``L x d`` float32, rows in the order ``[J; rest]``) holds ``Z_J`` on entry, and
        ``Z'`` in its rows ``rest`` in the second case; in the first those rows are filled here
        (``Z' M^T``). The gathered rows are processed in chunks of about 1 MB, which stay in
        cache for both products. Only the order of the checks depends on these scores, never a
        decision.
        """
        t, d, P = self.target, dr.d, dr.P
        m, nv = P["m"], P["nonvis"]
        score = np.empty(t.L)
        if P["vis"].size:
            score[P["vis"]] = dr.score_vis
        if dr.cand is not None:
            score[dr.cand] = np.inf
        if nv.size:
            n = dr.Zp.shape[0]
            if n and n < REST_RATIO * d:     # else Z' is already there (see _complete)
                np.matmul(dr.Zp, dr.Mt.astype(np.float32), out=Z32[m:])
            npos, b32 = P["nonvis_pos"], P["nonvis_b32"]
            k = npos.shape[1]
            # in chunks of about 1 MB of gathered rows, which stay in cache for both products
            ch = max(64, (1 << 20) // (4 * k * d))
            Zs = self._ws("Zs32", (ch, k, d), np.float32)
            H = self._ws("Hn", (ch, d), np.float32)
            gs = np.empty((nv.size, k), np.float32)
            for a in range(0, nv.size, ch):
                e = min(a + ch, nv.size)
                zs = np.take(Z32, npos[a:e], axis=0, mode="clip",  # valid indices; "raise" buffers
                             out=Zs[: e - a])
                h = np.einsum("rk,rkd->rd", b32[a:e], zs, out=H[: e - a])
                np.einsum("rd,rkd->rk", h, zs, out=gs[a:e])
            gs *= dr.scale / t.L                                # U ~ (L/d) (B Z) C^{-1}, C ~ L I
            score[nv] = self._row_margins(nv, gs, 0.0)
        return score

    def _risk_blocks(self, dr: _Draw, Z32):
        """The rows to screen, most likely violators first (ascending ``_risk_scores``), as a
        function ``blocks(start, size)`` returning the rows ``order[start: start + size]``.

        Only the rows of the first blocks are ordered at first (``np.argpartition``, then a sort
        of those few): just below ``d_min`` most draws are rejected by the first block or two.
        The full order of the remaining rows is computed when a later block is asked for.
        """
        score = self._risk_scores(dr, Z32)
        L = score.size
        head_n = min(L, 3 * min(self.first_block, self._max_block))   # the first two blocks
        if head_n < L:
            head = np.argpartition(score, head_n - 1)[:head_n]
            head = head[np.argsort(score[head], kind="stable")]
        else:
            head = np.argsort(score, kind="stable")
        state = {"order": head}

        def blocks(start, size):
            order = state["order"]
            if start + size > order.size and order.size < L:      # order the remaining rows
                rest = np.ones(L, dtype=bool)
                rest[head] = False
                rest = np.flatnonzero(rest)
                order = state["order"] = np.concatenate(
                    [head, rest[np.argsort(score[rest], kind="stable")]])
            return order[start: start + size]

        return blocks

    # ------------------------------------------------------------------ stage 1 of a batch
    def _partial_draws(self, d, rngs, P, capacity) -> list:
        """``_partial_draw`` for several draws at once, each from its own generator in ``rngs``
        (the same numbers in the same order as ``_partial_draw``): one stacked Gram product, then
        each ``C^{-1}`` by the same LAPACK calls. The list ends early, before the first draw
        whose Gram matrix cannot be inverted (that draw is left to the one-draw path, which
        raises the error at the same point as a one-by-one level would). ``capacity``: the
        size of the workspace, kept between batches (at least ``len(rngs)``)."""
        m, n = P["m"], P["n"]
        bufs = self._ws("bufs", (capacity, m + (d if n else 0), d))[:len(rngs)]  # [Z_J; R_W]s
        iu = self._triu(d)
        for buf, rng in zip(bufs, rngs):
            rng.standard_normal(out=buf[:m])
            if n:
                RW = buf[m:]
                RW.fill(0.0)
                RW[iu] = rng.standard_normal(iu[0].size)
                RW.flat[:: d + 1] = np.sqrt(rng.chisquare(n - np.arange(d)))
        C = np.matmul(bufs.transpose(0, 2, 1), bufs)
        Ci = []
        for Cj in C:                     # _spd_inverse, draw by draw, then one mirror for all
            try:
                Cij, info = sla.lapack.dpotri(_cholesky_upper(Cj), lower=0)
            except np.linalg.LinAlgError:
                break
            if info:
                break
            Ci.append(Cij)
        if not Ci:
            return []
        Ci = np.stack(Ci)
        Ci += np.triu(Ci, 1).transpose(0, 2, 1)
        return [_Draw(d=d, scale=self.L / d, P=P, ZJ=buf[:m], RW=buf[m:] if n else None,
                      Cinv=Cij) for buf, Cij in zip(bufs, Ci)]

    def _stage1_batch(self, d, rngs, P, capacity) -> list:
        """Stage 1 of several draws up to the check of their candidates on ``J``, as stacked
        array operations (the same operations as ``_stage1``, draw by draw, so the same numbers).

        Returns
        -------
        list of (_Draw, tuple or None)
            For each draw (a prefix of ``rngs``, see ``_partial_draws``), its numbers and the
            arguments ``(cand, Uc, gsJ, off, mc)`` of ``_stage1_rest``, or None when the draw has
            no candidate (stage 1 cannot reject it).
        """
        draws = self._partial_draws(d, rngs, P, capacity)
        b = len(draws)
        vis = P["vis"]
        r = min(self.candidates, vis.size, d)
        for dr in draws:
            dr.r = r
            dr.T = np.empty((P["n"], 0), np.float32)
        if not b or not vis.size:
            return [(dr, None) for dr in draws]
        if self._large:                  # float32 stage 1: the one-draw computation, draw by draw
            out = []
            for dr in draws:
                cand, Uc = self._candidates(dr, r)
                out.append((dr, (cand, Uc, *self._split(cand, Uc @ dr.ZJ.T, P["colpos"]), None)
                            if r else None))
            return out
        ZJ = self._work["bufs"][:b, :P["m"]]                                  # (b, m, d)
        Zs = ZJ[:, P["vis_pos"]]                                              # (b, |vis|, k, d)
        H = np.einsum("rk,brkd->brd", P["vis_b"], Zs)
        H *= self.L / d
        Uv = np.matmul(H, np.stack([dr.Cinv for dr in draws]))                # (b, |vis|, d)
        score = self._row_margins(vis, np.einsum("brd,brkd->brk", Uv, Zs), 0.0)  # _risk_score
        for dr, sc in zip(draws, score):
            dr.score_vis = sc
        if not r:
            return [(dr, None) for dr in draws]
        sel = np.argsort(score, axis=1, kind="stable")[:, :r]
        cand = vis[sel]                                                       # (b, r)
        Uc = Uv[np.arange(b)[:, None], sel]                                   # (b, r, d)
        G = np.matmul(Uc, ZJ.transpose(0, 2, 1))                              # (b, r, m)
        # _split on the stack: support logits, then the largest logit off the support
        bi = np.arange(b)[:, None, None]
        ri = np.arange(r)[None, :, None]
        p = P["colpos"][self.target.cols[cand]]                               # (b, r, k)
        gs = G[bi, ri, p]
        G[bi, ri, p] = -np.inf
        off = G.max(axis=2)
        mc = self._row_margins(cand, gs, off)                                 # (b, r)
        return [(dr, (cand[j], Uc[j], gs[j], off[j], mc[j])) for j, dr in enumerate(draws)]

    # ------------------------------------------------------------------ one width
    def level(self, d, n_draws, root_seed, key, *, batch=None) -> LevelResult:
        """Up to ``n_draws`` draws at width ``d``; draw ``i`` uses ``draw_generator(root_seed,
        key + (d, i))``. Stops at the first success.

        Draws start with the small partial set (``probe_fraction``) and switch to
        ``partial_fraction`` from the first draw that survives stage 1 on. The switch depends only
        on earlier draws of the same level, so the level's result is a function of its seeds.

        With ``batch = b > 1``, stage 1 of ``b`` consecutive draws is computed together (each
        draw's numbers still come from its own generator, in the same order, and the stacked
        operations compute exactly the numbers of the one-draw path); the draws are then decided
        in order, exactly as one by one. Batches grow from 2 draws to ``b``. Work on draws after the first success, or after the
        switch of partial set (made with the old set), is discarded and redone as the one-draw
        path would, so the result is the same for every ``batch``.

        Parameters
        ----------
        d : int
            Width, ``1 <= d <= L``.
        n_draws : int
            Largest number of draws, ``>= 1``.
        root_seed : int
            Root seed, ``>= 0``.
        key : tuple of int
            The level's seed key (the draw index and ``d`` are appended).
        batch : int, optional
            Draws per batch, ``>= 1``; default: the engine's ``batch`` (see :class:`FastEngine`).

        Returns
        -------
        LevelResult

        Raises
        ------
        ValueError, TypeError
            ``d`` out of ``[1, L]``, ``n_draws < 1`` or ``batch < 1`` (or not an integer).
        SizeTooLargeError
            ``n_draws > 10**6`` (``MAX_DRAWS``) or ``batch > 1024`` (``MAX_BATCH``).
        """
        d = check_int("d", d, low=1, high=self.L)
        n_draws = check_size("n_draws", n_draws, cap=MAX_DRAWS,
                             why="the most random draws one call may make")
        batch = self.batch if batch is None else _check_batch(batch)
        if batch is None:
            batch = BATCH_DRAWS if self.L <= BATCH_MAX_L else 1
        res = LevelResult(d=d, ok=False, draws=0)
        fraction = self.probe_fraction
        if batch == 1:
            for i in range(n_draws):
                out = self.draw(d, draw_generator(root_seed, tuple(key) + (d, i)),
                                fraction=fraction)
                if out.stage != "stage1":
                    fraction = self.partial_fraction
                if self._tally(res, out):
                    break
            return res
        i, size = 0, min(2, batch)   # batches grow 2, 4, ... up to `batch`: little work is
        while i < n_draws:           # wasted when a level ends (or switches) after a few draws
            rngs = [draw_generator(root_seed, tuple(key) + (d, j))
                    for j in range(i, min(i + size, n_draws))]
            size = min(2 * size, batch)
            stage1 = self._stage1_batch(d, rngs, self._partial(d, fraction), batch)
            if not stage1:   # the first Gram matrix is singular: as the one-draw path does it
                stage1 = [(None, None)]
            for (dr, cands), rng in zip(stage1, rngs):
                if dr is None:
                    out = self.draw(d, draw_generator(root_seed, tuple(key) + (d, i)),
                                    fraction=fraction)
                else:
                    fail = None if cands is None else self._stage1_rest(dr, rng, *cands)
                    out = self._finish(dr, rng, fail)
                i += 1
                if self._tally(res, out):
                    return res
                if out.stage != "stage1" and fraction != self.partial_fraction:
                    fraction = self.partial_fraction   # the rest of the batch used the old set
                    size = min(2, batch)
                    break
        return res

    @staticmethod
    def _tally(res: LevelResult, out: DrawOutcome) -> bool:
        """Count the outcome ``out`` of one more draw in ``res``; whether it succeeded."""
        res.draws += 1
        res.rows_screened += out.rows_screened
        if out.stage == "stage1":
            res.stage1_rejects += 1
        elif not out.ok and out.stage == "screen":
            res.screen_rejects += 1
        if out.stage == "confirm":
            res.confirmations += 1
        if out.ok:
            res.ok = True
        return out.ok

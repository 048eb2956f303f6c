"""Low-width logits that meet criteria (6)-(7), found by optimization or written down explicitly.

The construction of Theorem 1 (:mod:`sattn.patterns.construction`) is one way to find an input ``X`` for
the fixed weights ``W_Q = [I_d; 0]``, ``W_K = [0; I_d]``. With those weights the logits are
``G = Q K^T`` for the two halves ``X = [Q, K]``, so *any* pair ``Q, K`` in ``R^{L x d}`` whose
product meets criteria (6)-(7) is an input of the same module. This module looks for such pairs
directly, to ask how far the random construction is from the smallest width that works:

* :func:`optimize_logits` minimizes a squared-hinge loss on the log-domain margins of (6)-(7)
  over ``Q`` and ``K`` with L-BFGS, from a few seeded starts, and verifies the result with
  :func:`sattn.check_approximation`;
* :func:`moment_curve_logits` writes down logits of width ``2k + 1`` for every target with at most
  ``k`` nonzeros per row, whatever ``L``, ``eps1`` and ``eps2`` (a polynomial construction on the
  moment curve), at the price of entries that grow with ``L``;
* :func:`smallest_width` bisects over ``d`` for any such method (including
  :func:`sattn.approximate`).

A success of any of these methods proves that width ``d`` suffices for the given target: each of
them gives an upper bound on the true smallest width. A failure of the optimizer proves nothing.

The book explains all of this in the chapter "Beyond the paper".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from .._validate import as_vector, check_int, check_real, check_rng, check_size
from ..linalg import canonical_svd, ordered_matmul
from ..rounding import correctly_rounded, product_error_bound
from .construction import exact_product_rows, validate_target, logit_target
from ..results import Result
from .criteria import ApproximationReport, check_approximation, validate_tolerances

__flat__ = __all__ = [
    "OptimizedLogits", "WidthSearch", "moment_curve_logits", "optimize_logits", "smallest_width",
]


@dataclass(frozen=True)
class OptimizedLogits(Result):
    """Result of :func:`optimize_logits` or :func:`moment_curve_logits`.

    Attributes
    ----------
    ok : bool
        ``report.ok``: the logits ``Q K^T`` meet (6)-(7), as checked by
        :func:`sattn.check_approximation` (independently of the loss that was minimized).
    d : int
        Width (number of columns of ``Q`` and ``K``).
    Q, K : numpy.ndarray, shape (L, d)
        The halves of the input ``X = [Q, K]`` for the fixed weights of
        :func:`sattn.fixed_weights`; from the successful start, or from the start
        whose report came closest (largest ``min(margin6, margin7)``) when all failed.
    report : ApproximationReport
        Criteria (6)-(7) checked on ``Q K^T``.
    starts : int
        Number of starts run (stops at the first success).
    loss : float
        Final loss of the returned start (0 when every tightened constraint holds).
    iterations : tuple of int
        L-BFGS iterations of each start run.
    method : str
        ``"lbfgs"`` or ``"moment-curve"``.
    """

    ok: bool
    d: int
    Q: np.ndarray
    K: np.ndarray
    report: ApproximationReport
    starts: int
    loss: float
    iterations: tuple = field(default_factory=tuple)
    method: str = "lbfgs"

    @property
    def message(self) -> str:
        """One line: method, width, starts, and the criteria checked on ``Q K^T``."""
        return (f"{self.method} logits at d = {self.d} ({self.starts} start(s), loss "
                f"{self.loss:.3g}): {self.report.message}")

    @property
    def G(self) -> np.ndarray:
        """The logits ``Q K^T``."""
        return self.Q @ self.K.T

    @property
    def X(self) -> np.ndarray:
        """The input ``[Q, K]`` of shape ``(L, 2d)`` for the fixed weights of the construction."""
        return np.hstack([self.Q, self.K])


class _HingeLoss:
    """Squared hinge loss on the log-domain constraints of (6)-(7), tightened by ``margin``.

    (6): for every row and every ordered pair ``j1, j2`` of its support,
    ``r[j1] - r[j2] <= ln(1 + eps1) - margin`` with ``r = G - ln A``.
    (7): for every row, every ``j`` off and ``j'`` on the support,
    ``G[j] - G[j'] <= ln(eps2) - margin``.
    """

    def __init__(self, A, eps1, eps2, d, margin):
        L = A.shape[0]
        self.L, self.d = L, d
        S = A > 0
        self.S = S
        kmax = int(S.sum(axis=1).max())
        order = np.argsort(~S, axis=1, kind="stable")[:, :kmax]  # support columns first
        self.sup = order
        self.sup_mask = np.take_along_axis(S, order, axis=1)        # (L, kmax)
        # ln A correctly rounded (NumPy's log differs in the last bit between CPUs), once per value
        vals = np.where(self.sup_mask, np.take_along_axis(A, order, axis=1), 1.0)
        uniq, inv = np.unique(vals, return_inverse=True)
        self.logA_sup = correctly_rounded("log", uniq)[inv].reshape(vals.shape)
        self.c6 = math.log1p(eps1) - margin
        self.c7 = math.log(eps2) - margin
        self.rows = np.arange(L)[:, None]

    def __call__(self, theta):
        L, d = self.L, self.d
        Q = theta[:L * d].reshape(L, d)
        K = theta[L * d:].reshape(L, d)
        G = ordered_matmul(Q, K.T)
        Gon = G[self.rows, self.sup]                               # (L, kmax)
        m = self.sup_mask
        # (6): pairs on the support
        r = Gon - self.logA_sup
        v6 = r[:, :, None] - r[:, None, :] - self.c6                # (L, kmax, kmax)
        pair6 = m[:, :, None] & m[:, None, :]
        h6 = np.where(pair6 & (v6 > 0), v6, 0.0)
        # (7): off-support j against support j'
        v7 = G[:, :, None] - Gon[:, None, :] - self.c7              # (L, L, kmax)
        pair7 = (~self.S)[:, :, None] & m[:, None, :]
        h7 = np.where(pair7 & (v7 > 0), v7, 0.0)
        loss = float((h6 ** 2).sum() + (h7 ** 2).sum())
        dGon = 2.0 * (h6.sum(axis=2) - h6.sum(axis=1)) - 2.0 * h7.sum(axis=1)
        dG = 2.0 * h7.sum(axis=2)
        np.add.at(dG, (np.broadcast_to(self.rows, self.sup.shape), self.sup), dGon)
        grad = np.concatenate([ordered_matmul(dG, K).ravel(), ordered_matmul(dG.T, Q).ravel()])
        return loss, grad


#: Stopping tests of L-BFGS, well above the rounding of the loss (about 1e-16 of its size), so
#: that the machine's last bits do not decide when a start stops.
GTOL, FTOL = 1e-9, 1e-12
#: L-BFGS memory (pairs kept), Armijo constant and the smallest step of the backtracking search.
HISTORY, ARMIJO, MIN_STEP = 10, 1e-4, 2.0 ** -40


#: Bits of the grid a start is rounded to (relative to its largest entry).
START_BITS = 24


def _on_grid(x):
    """``x`` rounded to multiples of ``2**(e - START_BITS)``, ``2**e`` just above ``max|x|``.

    The canonical SVD's last bits come from LAPACK and differ between CPUs, and a start that
    differs in them would send the path elsewhere. On this grid those bits (29 below it) are gone,
    entries that are 0 up to rounding included.
    """
    top = float(np.abs(x).max())
    if top == 0:
        return x
    q = 2.0 ** (math.frexp(top)[1] - START_BITS)
    return np.round(x / q) * q


def _dot(a, b) -> float:
    """``sum(a * b)`` rounded once (``math.fsum``): the same on every machine, unlike BLAS."""
    return math.fsum((a * b).tolist())


def _lbfgs(fun, x0, *, maxiter: int):
    """Minimize ``fun`` (returning value and gradient) by L-BFGS with a backtracking search.

    Every operation is an IEEE elementwise operation, a NumPy sum or a correctly rounded dot
    product, so the path, and where it ends, are the same on every machine: no BLAS (whose
    kernels sum in CPU-dependent orders) and no line search inside a compiled library. Stops when
    the largest gradient entry is at most ``GTOL``, when a step lowers the loss by at most
    ``FTOL`` times its size, when the search finds no step of at least ``MIN_STEP`` that lowers
    the loss enough (Armijo), or after ``maxiter`` iterations. Returns ``(x, f, iterations)``.

    References
    ----------
    Nocedal & Wright, *Numerical Optimization* (2006), Algorithms 7.4-7.5 (two-loop recursion)
    and 3.1 (backtracking).
    """
    x = np.array(x0, dtype=np.float64)
    f, g = fun(x)
    pairs = []                      # (s, y, 1 / (y . s)), oldest first
    it = 0
    while it < maxiter and float(np.abs(g).max()) > GTOL:
        it += 1
        q = g.copy()
        alphas = []
        for s_, y_, rho in reversed(pairs):
            a = rho * _dot(s_, q)
            alphas.append(a)
            q = q - a * y_
        if pairs:
            s_, y_, _ = pairs[-1]
            q = q * (_dot(s_, y_) / _dot(y_, y_))
        else:
            q = q / max(1.0, float(np.abs(g).max()))
        for (s_, y_, rho), a in zip(pairs, reversed(alphas)):
            q = q + s_ * (a - rho * _dot(y_, q))
        p = -q
        slope = _dot(g, p)
        if not slope < 0:           # not a descent direction: restart from steepest descent
            pairs.clear()
            p = -g / max(1.0, float(np.abs(g).max()))
            slope = _dot(g, p)
        t = 1.0
        while True:
            x_new = x + t * p
            f_new, g_new = fun(x_new)
            if f_new <= f + ARMIJO * t * slope:
                break
            t *= 0.5
            if t < MIN_STEP:
                return x, f, it
        s_, y_ = x_new - x, g_new - g
        sy = _dot(s_, y_)
        if sy > 1e-12 * math.sqrt(_dot(s_, s_) * _dot(y_, y_)):
            pairs.append((s_, y_, 1.0 / sy))
            if len(pairs) > HISTORY:
                pairs.pop(0)
        done = f - f_new <= FTOL * max(abs(f), abs(f_new), 1.0)
        x, f, g = x_new, f_new, g_new
        if done:
            break
    return x, f, it
#: Caps of :func:`optimize_logits`: starts, and L-BFGS iterations per start.
MAX_RESTARTS = 1000
MAX_ITER = 10**5


def optimize_logits(A, eps1, eps2, d, *, rng, restarts: int = 3, margin: float = 0.01,
                    maxiter: int = 300) -> OptimizedLogits:
    """Search ``Q, K`` in ``R^{L x d}`` such that ``G = Q K^T`` meets criteria (6)-(7) for ``A``.

    Minimizes the squared hinge loss of the log-domain constraints (6)-(7), each tightened by
    ``margin``, with L-BFGS in arithmetic that every machine rounds alike (fixed-order products,
    correctly rounded dot products, a backtracking line search), so a seeded run ends at the same
    point on every CPU. The first start is the best rank-``d``
    approximation of the construction's logit target ``B`` (eq. 8), split as
    ``Q = U_d S_d^{1/2}``, ``K = V_d S_d^{1/2}``; the others are Gaussian with the same scale. It
    stops at the first start whose product passes :func:`sattn.check_approximation` (an
    independent check of the untightened criteria). ``X = [Q, K]`` is then an input of the
    self-attention module with the fixed weights of :func:`sattn.fixed_weights` ``(d)``.

    Parameters
    ----------
    A : array_like, shape (L, L)
        Target: nonnegative, finite, at least one nonzero per row.
    eps1 : float
        Tolerance of (6), ``eps1 > 0``.
    eps2 : float
        Tolerance of (7), ``0 < eps2 < 1``.
    d : int
        Width, ``1 <= d <= L``.
    rng : numpy.random.Generator
        Source of the random starts.
    restarts : int, default 3
        Number of starts, ``1 <= restarts <= 1000`` (``MAX_RESTARTS``).
    margin : float, default 0.01
        Slack (in log units) by which each constraint is tightened, ``0 <= margin < ln(1 + eps1)``.
    maxiter : int, default 300
        L-BFGS iterations per start, ``1 <= maxiter <= 10**5`` (``MAX_ITER``). A larger
        ``restarts`` or ``maxiter`` is a :class:`sattn.SizeTooLargeError`.

    Returns
    -------
    OptimizedLogits
        ``ok`` (verified), ``Q``, ``K``, the report, and the work done. At ``d = L`` the first
        start reproduces ``B`` to about 24 bits (starts are rounded to a grid of ``START_BITS`` bits,
        so that the last bits of LAPACK's SVD do not decide the path) and succeeds.

    Raises
    ------
    ValueError, TypeError
        Bad input: the message names the parameter, the value received and the expected range.

    Notes
    -----
    A success proves that width ``d`` suffices for this ``A`` (an upper bound on the smallest
    width); a failure proves nothing, since the problem is not convex.

    References
    ----------
    Criteria (6)-(7) and the fixed weights (16)-(17) of Likhosherstov et al. (2021); the book's
    chapter "Beyond the paper" (how far the random construction is from the smallest width).
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    A = validate_target(A)
    L = A.shape[0]
    d = check_int("d", d, low=1, high=L)
    rng = check_rng("rng", rng)
    restarts = check_size("restarts", restarts, cap=MAX_RESTARTS,
                          why="every start is a full L-BFGS run over the L x L logits")
    maxiter = check_size("maxiter", maxiter, cap=MAX_ITER,
                         why="every iteration evaluates the loss on the L x L logits")
    margin = check_real("margin", margin, low=0.0)
    if margin >= math.log1p(eps1):
        raise ValueError(f"margin must lie in [0, ln(1 + eps1)) = [0, {math.log1p(eps1):.4g}), "
                         f"got {margin:g}")
    loss_fn = _HingeLoss(A, eps1, eps2, d, margin)
    B = logit_target(A, eps1, eps2)
    U, s, V = canonical_svd(B)   # a defined start, also inside clusters of equal singular values
    root = np.sqrt(s[:d])
    scale = math.sqrt(s[0] / d) if s[0] > 0 else 1.0
    best, iterations = None, []
    for start in range(restarts):
        if start == 0:
            Q0, K0 = U[:, :d] * root, V[:, :d] * root
        else:
            Q0 = scale * rng.standard_normal((L, d))
            K0 = scale * rng.standard_normal((L, d))
        theta0 = _on_grid(np.concatenate([Q0.ravel(), K0.ravel()]))
        x, fx, nit = _lbfgs(loss_fn, theta0, maxiter=maxiter)
        iterations.append(nit)
        Q, K = x[:L * d].reshape(L, d), x[L * d:].reshape(L, d)
        rep = check_approximation(Q @ K.T, A, eps1, eps2, logit_error=product_error_bound(Q, K),
                                  exact_logits=exact_product_rows(Q, K))
        cand = (rep, Q, K, float(fx))
        if best is None or min(rep.margin6, rep.margin7) > min(best[0].margin6, best[0].margin7):
            best = cand
        if rep.ok:
            best = cand
            break
    rep, Q, K, loss = best
    return OptimizedLogits(ok=rep.ok, d=d, Q=Q, K=K, report=rep, starts=len(iterations),
                           loss=loss, iterations=tuple(iterations), method="lbfgs")


def moment_curve_logits(A, eps1, eps2, *, nodes=None) -> OptimizedLogits:
    """Explicit logits of width ``2k + 1`` meeting (6)-(7), for any ``L``, ``eps1`` and ``eps2``.

    Put column ``j`` at a node ``t_j`` and let ``K[j] = (1, t_j, ..., t_j^{2k})`` (the moment
    curve). For row ``l`` with support ``S`` (``|S| <= k``) take the polynomial

    ``p_l(t) = q_l(t) - c_l * prod_{i in S} (t - t_i)^2``,

    where ``q_l`` (degree ``< |S|``) interpolates ``ln A[l, i]`` at the nodes of ``S`` and ``c_l >= 0``
    is the smallest constant that pushes every off-support value ``p_l(t_j)`` at least
    ``ln(1/eps2) + ln(1 + eps1)/2`` below the smallest support value. ``Q[l]`` holds the
    coefficients of ``p_l``, so ``(Q K^T)[l, j] = p_l(t_j)``: on the support it equals ``ln A[l, j]``
    (criterion (6) with spread 0), off it the gap exceeds ``ln(1/eps2)`` (criterion (7)).

    Parameters
    ----------
    A : array_like, shape (L, L)
        Target: nonnegative, finite, at least one nonzero per row; ``k`` is its largest number of
        nonzeros in a row.
    eps1 : float
        ``eps1 > 0`` (only sets the spare room in (7)).
    eps2 : float
        ``0 < eps2 < 1``.
    nodes : array_like, shape (L,), optional
        Distinct nodes ``t_j``; default Chebyshev nodes in ``[-1, 1]``.

    Returns
    -------
    OptimizedLogits
        With ``d = 2k + 1`` (independent of ``L``; it exceeds ``L`` only for tiny targets) and
        ``method = "moment-curve"``; ``ok`` is the verdict of
        :func:`sattn.check_approximation`, which in floating point can fail for large ``L`` or
        ``k`` because the coefficients grow (the report says by how much).

    Raises
    ------
    ValueError, TypeError
        Bad input (shape, negative entry, empty row, eps out of range, repeated nodes).
    FloatingPointError
        If the logits overflow float64 (long sequences: the constant ``c_l`` grows like an inverse
        power of the node gaps).

    References
    ----------
    A polynomial (moment-curve) construction of the book's chapter "Beyond the paper"; criteria
    (6)-(7) of Likhosherstov et al. (2021). The moment curve is a standard tool for upper bounds
    on the sign rank of sign patterns (Alon, Moran & Yehudayoff 2016, "Sign rank versus VC
    dimension").
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    A = validate_target(A)
    L = A.shape[0]
    S = A > 0
    k = int(S.sum(axis=1).max())
    if nodes is None:
        t = correctly_rounded("cos", np.pi * (np.arange(L) + 0.5) / L)
    else:
        t = as_vector("nodes", nodes, size=L)
        if np.unique(t).size != L:
            raise ValueError("nodes must be distinct (two columns at the same node cannot be separated)")
    deg = 2 * k
    K = np.vander(t, deg + 1, increasing=True)                     # (L, 2k + 1)
    logA_all = np.zeros_like(A)
    logA_all[S] = correctly_rounded("log", A[S])
    Q = np.zeros((L, deg + 1))
    gap = math.log(1.0 / eps2) + 0.5 * math.log1p(eps1)
    for l in range(L):
        sup = np.flatnonzero(S[l])
        off = np.flatnonzero(~S[l])
        logA = logA_all[l, sup]
        # interpolating polynomial q_l of degree |S| - 1 (monomial basis, increasing powers),
        # solved exactly and rounded once, so that no LAPACK kernel decides its last bits
        q = _interpolate_exactly(t[sup], logA)
        # w(t) = prod (t - t_i)^2, increasing-power coefficients, multiplied out in a fixed order
        w = np.array([1.0])
        for ti in t[sup]:
            nxt = np.zeros(w.size + 2)
            nxt[:-2] += w * (ti * ti)
            nxt[1:-1] += w * (-2.0 * ti)
            nxt[2:] += w
            w = nxt
        c = 0.0
        if off.size:
            q_off = _horner(q, t[off])
            w_off = np.prod((t[off, None] - t[None, sup]) ** 2, axis=1)  # > 0: distinct nodes
            with np.errstate(divide="ignore", over="ignore"):
                need = (q_off - (logA.min() - gap)) / w_off            # c >= need on every j off S
            c = max(0.0, float(need.max()))
            if not math.isfinite(c):
                raise FloatingPointError(
                    f"moment_curve_logits: the polynomial coefficients overflow float64 in row {l} "
                    f"(L = {L}, k = {k}): the nodes are too close for this precision"
                )
        coef = -c * w
        coef[:sup.size] += q
        Q[l, :coef.size] = coef
    with np.errstate(over="ignore", invalid="ignore"):
        G = ordered_matmul(Q, K.T)   # the float64 evaluation, summed in a fixed order
    if not np.all(np.isfinite(G)):
        raise FloatingPointError(
            f"moment_curve_logits: the polynomial coefficients overflow float64 (L = {L}, k = {k}, "
            f"largest |coefficient| {np.abs(Q).max():.3g}); the construction is exact in real "
            "arithmetic but needs more precision for this target"
        )
    rep = check_approximation(G, A, eps1, eps2)
    return OptimizedLogits(ok=rep.ok, d=deg + 1, Q=Q, K=K, report=rep, starts=1, loss=0.0,
                           iterations=(), method="moment-curve")


def _interpolate_exactly(nodes, values) -> np.ndarray:
    """Coefficients (increasing powers) of the polynomial through ``(nodes, values)``, solved in
    exact rational arithmetic and rounded once to float64."""
    n = len(nodes)
    M = [[Fraction(float(x)) ** p for p in range(n)] + [Fraction(float(v))]
         for x, v in zip(nodes, values)]
    for col in range(n):
        piv = next(r for r in range(col, n) if M[r][col] != 0)   # distinct nodes: nonsingular
        M[col], M[piv] = M[piv], M[col]
        for r in range(n):
            if r != col and M[r][col] != 0:
                f = M[r][col] / M[col][col]
                M[r] = [a - f * b for a, b in zip(M[r], M[col])]
    return np.array([float(M[r][n] / M[r][r]) for r in range(n)])


def _horner(coef, x) -> np.ndarray:
    """``sum_p coef[p] x**p`` by Horner's rule (elementwise, the same on every machine)."""
    out = np.full(np.shape(x), coef[-1], dtype=np.float64)
    for c in coef[-2::-1]:
        out = out * x + c
    return out


@dataclass(frozen=True)
class WidthSearch(Result):
    """Result of :func:`smallest_width`.

    Attributes
    ----------
    d : int or None
        Smallest width in ``[low, high]`` at which ``succeeds`` returned True under bisection
        (assumes success is monotone in ``d``); ``None`` if it failed at ``high``.
    tried : tuple of (int, bool)
        Every width tried, in order, with its outcome.
    """

    d: int | None
    tried: tuple

    @property
    def ok(self) -> bool:
        """Whether some width in the range succeeded (``d`` is not ``None``)."""
        return self.d is not None

    @property
    def message(self) -> str:
        """One line: the smallest width found and the widths tried."""
        tried = ", ".join(f"{d}{'+' if s else '-'}" for d, s in self.tried)
        if self.ok:
            return f"smallest width d = {self.d} (tried, + success / - failure: {tried})"
        return f"no width succeeded (tried, + success / - failure: {tried})"


def _verdict(succeeds, d) -> bool:
    """``succeeds(d)``, which must be a bool (Python or NumPy): anything else is a TypeError."""
    ok = succeeds(d)
    if not isinstance(ok, (bool, np.bool_)):
        raise TypeError(f"succeeds(d) must return a bool (True or False), got {ok!r} "
                        f"({type(ok).__name__}) at d = {d}")
    return bool(ok)


def smallest_width(succeeds, low: int, high: int) -> WidthSearch:
    """Bisection for the smallest ``d`` in ``[low, high]`` with ``succeeds(d)`` True.

    Tries ``high`` first; if it fails, returns ``d = None``. Otherwise keeps an interval
    ``(fail, success]`` and halves it. With a randomized or local method, success need not be
    monotone in ``d``; the result is then the bisection's answer, an upper bound on the smallest
    width at which the method can succeed.

    Parameters
    ----------
    succeeds : callable
        ``succeeds(d) -> bool``.
    low, high : int
        ``1 <= low <= high``.

    Returns
    -------
    WidthSearch

    Raises
    ------
    TypeError
        If ``succeeds`` is not callable, returns something other than a bool, or ``low``/``high``
        is not an integer.
    ValueError
        If ``low < 1`` or ``high < low``.

    References
    ----------
    The ``d_min`` protocol of Section 4 of Likhosherstov et al. (2021), with bisection instead of
    a grid; the book's chapter "Beyond the paper".
    """
    if not callable(succeeds):
        raise TypeError(f"succeeds must be callable, got {type(succeeds).__name__}")
    low = check_int("low", low, low=1)
    high = check_int("high", high, low=low)
    tried = []
    ok = _verdict(succeeds, high)
    tried.append((high, ok))
    if not ok:
        return WidthSearch(d=None, tried=tuple(tried))
    lo, hi = low - 1, high                                          # fails at lo (or lo < low)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        ok = _verdict(succeeds, mid)
        tried.append((mid, ok))
        if ok:
            hi = mid
        else:
            lo = mid
    return WidthSearch(d=hi, tried=tuple(tried))

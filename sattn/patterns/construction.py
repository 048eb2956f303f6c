"""The constructive proof of Theorem 1 of Likhosherstov, Choromanski & Weller, as an algorithm.

Given a sparse target ``A`` (``L x L``) and tolerances ``eps1``, ``eps2``, the construction finds
an input ``X`` (``L x 2d``) for *fixed* weights ``W_Q = [I_d; 0]``, ``W_K = [0; I_d]`` such that
``SAM(X)`` satisfies criteria (6)-(7):

1. :func:`logit_target` turns ``A`` into the logit matrix ``B`` (eq. 8): on the support,
   ``B = ln(A / a_l) + Delta`` with ``a_l`` the smallest nonzero of row ``l`` and
   ``Delta = ln((1 + eps1) / eps2)``; off the support, ``B = 0``.
2. :func:`factorize` writes ``B = D V^T`` (the SVD route ``D = U Sigma`` of the paper, or the
   SVD-free route ``D = B, V = I``, which gives the same distribution of the result).
3. :func:`sample_stiefel` draws ``Y`` uniformly with ``Y^T Y = I_d`` (QR of a Gaussian matrix with
   the sign fix), and ``X1 = sqrt(L/d) D Y``, ``X2 = sqrt(L/d) V Y`` (eq. 13), so that
   ``E[X1 X2^T] = B`` (eq. 14).
4. ``X = [X1, X2]`` (eq. 15) and :func:`fixed_weights` (eqs. 16-17) give ``X W_Q W_K^T X^T = X1 X2^T``.
5. :func:`approximate` (Algorithm 1) redraws ``Y`` until the criteria hold, within a budget of
   draws; it raises :class:`ConstructionFailed` when the budget is spent.

:func:`theorem1_bound` is the width of Theorem 1', the book's explicit version of Theorem 1 with
constants derived in the book (the paper's own constants are not reproduced here).

The book explains all of this in :ref:`ch-construction`, :ref:`ch-why-it-works` and :ref:`ch-causal`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import SizeTooLargeError
from .._validate import (MAX_BYTES, MAX_DRAWS, MAX_L, as_matrix, check_bool, check_dense_size,
                         check_int, check_real, check_rng, check_size, gib)
from ..attention import row_softmax
from ..results import Result
from ..linalg import canonical_svd
from ..rounding import product_error_bound
from .criteria import ApproximationReport, check_approximation, validate_tolerances
from .sparse import check_lower_triangular

__flat__ = [
    "Approximation",
    "ConstructionFailed",
    "Theorem1Constants",
    "approximate",
    "default_max_draws",
    "draw_input",
    "factorize",
    "fixed_weights",
    "logit_target",
    "sample_stiefel",
    "theorem1_bound",
    "theorem1_constants", "theorem1_crossover",
]
__all__ = [*__flat__, "exact_product_rows", "validate_target"]

METHODS = ("svd", "direct")


class ConstructionFailed(RuntimeError):
    """Algorithm 1 spent its budget of draws without meeting criteria (6)-(7).

    Attributes
    ----------
    draws : int
        Number of draws made (all failed).
    d : int
        The width tried.
    L : int
        Sequence length.
    best : ApproximationReport or None
        Report of the draw that came closest (largest ``min(margin6, margin7)``).
    """

    def __init__(self, message, *, draws, d, L, best=None):
        super().__init__(message)
        self.draws = draws
        self.d = d
        self.L = L
        self.best = best


# --------------------------------------------------------------------------- checking inputs
def validate_target(A, *, causal: bool = False) -> np.ndarray:
    """Validate a target pattern: square, finite, nonnegative, a nonzero in every row, and
    lower triangular when ``causal``. Returns it as a float array; raises ``ValueError`` naming
    the first offending entry or row. Shared by the construction, the optimizer and the engine.
    """
    A = as_matrix("A", A, square=True)
    if (A < 0).any():
        r, c = np.argwhere(A < 0)[0]
        raise ValueError(f"A must be nonnegative, but A[{r}, {c}] = {A[r, c]:.6g} (expected >= 0)")
    empty = ~(A > 0).any(axis=1)
    if empty.any():
        r = int(np.flatnonzero(empty)[0])
        raise ValueError(f"row {r} of A has no nonzero entry (every row needs at least one, "
                         "the support of an attention row)")
    if causal:
        rep = check_lower_triangular(A)
        if not rep.ok:
            raise ValueError(f"causal=True needs a lower-triangular target: {rep.message}")
    return A


# --------------------------------------------------------------------------- the steps
def logit_target(A, eps1, eps2) -> np.ndarray:
    """The logit matrix ``B`` of the construction (eq. 8).

    ``B[l, j] = ln(A[l, j] / a_l) + Delta`` where ``A[l, j] > 0`` and ``0`` elsewhere, with
    ``a_l`` the smallest nonzero of row ``l`` and ``Delta = ln((1 + eps1) / eps2)``. Then
    ``softmax(B[l])`` meets (6) exactly and (7) with room ``ln(1 + eps1)`` to spare.

    Parameters
    ----------
    A : array_like, shape (L, L)
        Nonnegative target with at least one nonzero per row.
    eps1, eps2 : float
        The tolerances, ``eps1 > 0`` and ``0 < eps2 < 1``.

    Returns
    -------
    numpy.ndarray, shape (L, L)
        ``B``, with the zero pattern of ``A`` and nonzeros in ``[Delta, Delta + ln gamma]``.

    Raises
    ------
    ValueError
        On a negative, NaN or infinite entry, a non-square ``A``, an empty row, or eps out of range.

    References
    ----------
    Eqs. (8)-(10) of the proof of Theorem 1, Likhosherstov et al. (2021), as reconstructed in the
    book (the shift ``Delta`` is derived there); :ref:`ch-construction` ("The construction").
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    A = validate_target(A, causal=False)
    S = A > 0
    a = np.where(S, A, np.inf).min(axis=1, keepdims=True)
    delta = math.log((1.0 + eps1) / eps2)
    return np.where(S, np.log(np.where(S, A, 1.0) / a) + delta, 0.0)


def fixed_weights(d) -> tuple[np.ndarray, np.ndarray]:
    """The fixed weights ``W_Q = [I_d; 0]`` and ``W_K = [0; I_d]``, each of shape ``(2d, d)``.

    They depend on ``d`` only: every target is approximated by choosing the input ``X``.

    Parameters
    ----------
    d : int
        Query/key width, ``d >= 1``.

    Returns
    -------
    W_Q, W_K : numpy.ndarray, shape (2d, d)

    Raises
    ------
    ValueError, TypeError
        If ``d`` is not an integer ``>= 1``.
    SizeTooLargeError
        If ``d > 9459`` (the arrays would take more than 4 GiB, ``MAX_BYTES``).

    References
    ----------
    Eqs. (16)-(17) of Likhosherstov et al. (2021) (AAAI numbering); :ref:`ch-construction`.
    """
    # two (2d, d) float64 results and two d x d temporaries: 48 d**2 bytes
    d = check_dense_size("d", d, bytes_per_unit=48, what="the weights (two (2d, d) float64 arrays)")
    eye, zero = np.eye(d), np.zeros((d, d))
    return np.vstack([eye, zero]), np.vstack([zero, eye])


def _check_stiefel_size(L, d):
    """An (L, d) Gaussian draw and its QR factor take about 24 L d bytes: at most MAX_BYTES."""
    if 24.0 * L * d > MAX_BYTES:
        raise SizeTooLargeError(
            f"L = {L} is too large for d = {d}: an (L, d) Stiefel draw and its QR "
            f"factorisation would need {gib(24.0 * L * d)}, more than the {gib(MAX_BYTES)} one call "
            f"may allocate; L * d can be at most {MAX_BYTES // 24}")


def sample_stiefel(L, d, rng) -> np.ndarray:
    """A uniformly random ``L x d`` matrix with orthonormal columns (a point of the Stiefel manifold).

    Thin QR of a standard Gaussian matrix, ``Z = Q R``, then ``Y = Q diag(sign(diag R))``; the sign
    fix makes ``Y`` exactly Haar distributed (Mezzadri 2007).

    Parameters
    ----------
    L : int
        Number of rows, ``L >= 1``.
    d : int
        Number of columns, ``1 <= d <= L``.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray, shape (L, d)
        ``Y`` with ``Y^T Y = I_d``.

    Raises
    ------
    ValueError, TypeError
        If ``L`` or ``d`` is out of range, or ``rng`` is not a :class:`numpy.random.Generator`.
    SizeTooLargeError
        If ``24 L d`` bytes (the draw and its QR factor) exceed 4 GiB
        (``MAX_BYTES``).

    References
    ----------
    Section 3 of Likhosherstov et al. (2021) (QR of Gaussian matrices, citing Stewart 1980);
    :ref:`ch-construction`.
    """
    L = check_int("L", L, low=1)
    d = check_int("d", d, low=1, high=L)
    _check_stiefel_size(L, d)
    rng = check_rng("rng", rng)
    Q, R = np.linalg.qr(rng.standard_normal((L, d)))
    s = np.sign(np.diag(R))
    s[s == 0] = 1.0
    return Q * s


def exact_product_rows(X1, X2):
    """``rows -> exact rows of X1 @ X2.T`` (as Fractions): the exact logits that
    :func:`sattn.check_approximation` asks for when a margin lies inside its rounding band."""
    X1 = np.asarray(X1, dtype=np.float64)
    X2 = np.asarray(X2, dtype=np.float64)

    def rows_of(rows):
        cols = [[Fraction(float(x)) for x in row] for row in X2]
        out = []
        for r in rows:
            a = [Fraction(float(x)) for x in X1[int(r)]]
            out.append([sum((p * q for p, q in zip(a, c)), Fraction(0)) for c in cols])
        return out

    return rows_of


def factorize(B, method: str = "svd") -> tuple[np.ndarray, np.ndarray]:
    """Write ``B = D V^T`` with ``V`` orthogonal.

    Parameters
    ----------
    B : array_like, shape (L, L)
    method : {"svd", "direct"}
        ``"svd"``: the paper's route, full SVD ``B = U Sigma V^T`` and ``D = U Sigma``, with the
        signs and the bases inside clusters of equal singular values fixed by
        ``sattn.canonical_svd`` (so that a seeded draw is the same on every machine).
        ``"direct"``: ``D = B`` and ``V = I`` (no SVD; the construction's output has the same
        distribution, because ``V Y`` is again uniform on the Stiefel manifold).

    Returns
    -------
    D : numpy.ndarray, shape (L, L)
        Rows have the norms of the rows of ``B``.
    V : numpy.ndarray, shape (L, L)
        Orthogonal (rows of norm 1).

    Raises
    ------
    ValueError, TypeError
        If ``B`` is not a finite, real, square matrix, or ``method`` is unknown.

    References
    ----------
    Eqs. (11)-(12) of Likhosherstov et al. (2021) (SVD, ``D = U Sigma``), as reconstructed in the
    book; the SVD-free route is the book's remark :prf:ref:`con-rem-svd-free`.
    """
    B = as_matrix("B", B, square=True)
    if method == "svd":
        U, sig, V = canonical_svd(B)
        return U * sig, V
    if method == "direct":
        return B.copy(), np.eye(B.shape[0])
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def draw_input(D, V, d, rng, *, Y=None) -> np.ndarray:
    """One random input ``X = [X1, X2]`` of the construction (eqs. 13 and 15).

    ``X1 = sqrt(L/d) D Y`` and ``X2 = sqrt(L/d) V Y`` with ``Y`` from :func:`sample_stiefel`, so
    that ``X W_Q W_K^T X^T = X1 X2^T`` and ``E[X1 X2^T] = D V^T``.

    Parameters
    ----------
    D, V : array_like, shape (L, L)
        A factorization ``B = D V^T`` (from :func:`factorize`).
    d : int
        Width, ``1 <= d <= L``.
    rng : numpy.random.Generator
    Y : array_like, shape (L, d), optional
        Use this Stiefel matrix instead of drawing one.

    Returns
    -------
    numpy.ndarray, shape (L, 2d)

    Raises
    ------
    ValueError, TypeError
        If the shapes do not match, ``d`` is out of range, or ``rng`` is not a
        :class:`numpy.random.Generator` (when ``Y`` is not given).

    References
    ----------
    Eqs. (13)-(15) of Likhosherstov et al. (2021); :ref:`ch-construction`.
    """
    D = as_matrix("D", D, square=True)
    L = D.shape[0]
    V = as_matrix("V", V, rows=L, cols=L)
    d = check_int("d", d, low=1, high=L)
    if Y is None:
        Y = sample_stiefel(L, d, rng)
    else:
        Y = as_matrix("Y", Y, rows=L, cols=d)
    c = math.sqrt(L / d)
    return np.hstack([c * (D @ Y), c * (V @ Y)])


# --------------------------------------------------------------------------- Algorithm 1
@dataclass(frozen=True)
class Approximation(Result):
    """Result of :func:`approximate`.

    Attributes
    ----------
    X : numpy.ndarray, shape (L, 2d)
        The input found.
    W_Q, W_K : numpy.ndarray, shape (2d, d)
        The fixed weights (depend on ``d`` only).
    draws : int
        Number of Stiefel draws used (the last one succeeded).
    report : ApproximationReport
        Criteria (6)-(7) re-checked on the result.
    B : numpy.ndarray, shape (L, L)
        The logit target of eq. (8).
    d : int
    eps1, eps2 : float
    causal : bool
    method : str
    """

    X: np.ndarray
    W_Q: np.ndarray
    W_K: np.ndarray
    draws: int
    report: ApproximationReport
    B: np.ndarray
    d: int
    eps1: float
    eps2: float
    causal: bool
    method: str

    @property
    def L(self) -> int:
        return self.X.shape[0]

    @property
    def ok(self) -> bool:
        """Whether criteria (6)-(7), re-checked on the result, hold (``report.ok``)."""
        return self.report.ok

    @property
    def message(self) -> str:
        """One line: width, draws used, and the re-checked criteria."""
        kind = "causal " if self.causal else ""
        return (f"{kind}approximation at d = {self.d} after {self.draws} draw(s) "
                f"({self.method}): {self.report.message}")

    @property
    def G(self) -> np.ndarray:
        """Logits ``X W_Q W_K^T X^T`` (``-inf`` above the diagonal when causal)."""
        G = (self.X @ self.W_Q) @ (self.X @ self.W_K).T
        if self.causal:
            G = np.where(np.tri(self.L, dtype=bool), G, -np.inf)
        return G

    @property
    def M(self) -> np.ndarray:
        """The self-attention matrix ``SAM(X)`` (``SAM^c(X)`` when causal)."""
        return row_softmax(self.G)


def default_max_draws(L, Q: float = 1.0) -> int:
    """The redraw budget ``ceil(Q * L)`` of the experiments (``Q = 1`` in the paper).

    Parameters
    ----------
    L : int
        Sequence length, ``L >= 1``.
    Q : float, default 1.0
        Draws per token, ``Q > 0``.

    Returns
    -------
    int
        ``max(1, ceil(Q * L))``.

    Raises
    ------
    ValueError, TypeError
        If ``L`` is not an integer ``>= 1`` or ``Q`` is not a finite number ``> 0``.
    SizeTooLargeError
        If ``L > 131072`` (``MAX_L``) or ``Q L > 10**6`` draws
        (``MAX_DRAWS``).

    References
    ----------
    Lemma 1 and Section 4 of Likhosherstov et al. (2021); :ref:`ch-why-it-works`.
    """
    L = check_size("L", L, cap=MAX_L, why="the largest sequence length the package works with; "
                                           "the book's experiments stop at 65536")
    Q = check_real("Q", Q, low=0.0, low_open=True)
    n = Q * L
    if n > MAX_DRAWS:
        raise SizeTooLargeError(f"Q = {Q:g} is too large for L = {L}: ceil(Q L) = {math.ceil(n):.6g} "
                                f"draws, more than the {MAX_DRAWS} one call may make")
    return max(1, math.ceil(n))


def approximate(A, eps1, eps2, d, *, rng, causal: bool = False, max_draws=None,
                method: str = "svd") -> Approximation:
    """Algorithm 1: find ``X`` such that ``SAM(X)`` with fixed weights approximates ``A``.

    Builds ``B`` (eq. 8), factorizes it, and draws ``X`` (eqs. 13-15) until criteria (6)-(7) hold
    for the logits ``X W_Q W_K^T X^T``, checked in the log domain.

    Parameters
    ----------
    A : array_like, shape (L, L)
        Target: nonnegative, finite, square, at least one nonzero per row (lower triangular when
        ``causal``). The guarantee of Theorem 1' needs ``A`` k-nonzero-bounded and
        gamma-variation-bounded, but the algorithm runs on any such ``A``.
    eps1 : float
        Tolerance of (6), ``eps1 > 0``.
    eps2 : float
        Tolerance of (7), ``0 < eps2 < 1``.
    d : int
        Query/key width, ``1 <= d <= L``; the hidden width is ``2d``.
    rng : numpy.random.Generator
    causal : bool, default False
        Approximate with the causal self-attention matrix ``SAM^c`` (:ref:`ch-causal`).
    max_draws : int, optional
        Budget of Stiefel draws, ``1 <= max_draws <= 10**6`` (``MAX_DRAWS``;
        larger is a :class:`sattn.SizeTooLargeError`); default
        :func:`default_max_draws` ``(L) = L``.
    method : {"svd", "direct"}, default "svd"
        Factorization route (:func:`factorize`).

    Returns
    -------
    Approximation
        ``X``, ``W_Q``, ``W_K``, number of draws, and the verification report.

    Raises
    ------
    ValueError, TypeError
        Bad input (the message names the parameter, the value and the expected range).
    ConstructionFailed
        If no draw within the budget satisfies the criteria.

    References
    ----------
    Theorem 1 and Algorithm 1 of Likhosherstov et al. (2021) (reconstructed as Theorem 1' in the
    book); :ref:`ch-construction` and :ref:`ch-causal`.
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    check_bool('causal', causal)
    A = validate_target(A, causal=bool(causal))
    L = A.shape[0]
    d = check_int("d", d, low=1, high=L)
    rng = check_rng("rng", rng)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    max_draws = default_max_draws(L) if max_draws is None else check_size(
        "max_draws", max_draws, cap=MAX_DRAWS, why="the most random draws one call may make")
    B = logit_target(A, eps1, eps2)
    D, V = factorize(B, method)
    W_Q, W_K = fixed_weights(d)
    best = None
    for draw in range(1, max_draws + 1):
        X = draw_input(D, V, d, rng)
        X1, X2 = X[:, :d], X[:, d:]
        G = X1 @ X2.T
        rep = check_approximation(G, A, eps1, eps2, causal=causal,
                                  logit_error=product_error_bound(X1, X2),
                                  exact_logits=exact_product_rows(X1, X2))
        if rep.ok:
            return Approximation(X=X, W_Q=W_Q, W_K=W_K, draws=draw, report=rep, B=B, d=d,
                                 eps1=eps1, eps2=eps2, causal=bool(causal), method=method)
        if best is None or min(rep.margin6, rep.margin7) > min(best.margin6, best.margin7):
            best = rep
    raise ConstructionFailed(
        f"approximate: all {max_draws} draws at d = {d} (L = {L}) failed criteria (6)-(7); "
        f"closest draw: margin6 = {best.margin6:.3g}, margin7 = {best.margin7:.3g}. "
        f"Try a larger d (at most L = {L}) or a larger max_draws.",
        draws=max_draws, d=d, L=L, best=best,
    )


# --------------------------------------------------------------------------- Theorem 1'
@dataclass(frozen=True)
class Theorem1Constants:
    """Constants of Theorem 1' (the book's explicit version of Theorem 1).

    ``delta = ln(1+eps1)/2`` (allowed logit error), ``Delta = ln((1+eps1)/eps2)`` (shift of eq. 8),
    ``R = Delta + ln(gamma)`` (largest entry of B), ``eps = delta / (sqrt(k) R)`` (JL distortion),
    ``d = ceil(4 ln(3L) / (eps^2/2 - eps^3/3))`` (the bound).
    """

    delta: float
    Delta: float
    R: float
    eps: float
    d: int


def theorem1_constants(L, k, gamma, eps1, eps2) -> Theorem1Constants:
    """All constants of Theorem 1' for the given parameters (see :func:`theorem1_bound`).

    Parameters
    ----------
    L, k, gamma, eps1, eps2
        As in :func:`theorem1_bound`.

    Returns
    -------
    Theorem1Constants

    Raises
    ------
    ValueError, TypeError
        As :func:`theorem1_bound`.

    References
    ----------
    Theorem 1' of the book (:prf:ref:`con-thm-1prime`, proved in :ref:`ch-why-it-works`), its explicit version of Theorem 1 of
    Likhosherstov et al. (2021).
    """
    L = check_int("L", L, low=1)
    k = check_int("k", k, low=1, high=L)
    gamma = check_real("gamma", gamma, low=1.0)
    eps1, eps2 = validate_tolerances(eps1, eps2)
    delta = 0.5 * math.log1p(eps1)
    Delta = math.log((1.0 + eps1) / eps2)
    R = Delta + math.log(gamma)
    eps = delta / (math.sqrt(k) * R)
    d = math.ceil(4.0 * math.log(3 * L) / (eps ** 2 / 2 - eps ** 3 / 3))
    return Theorem1Constants(delta=delta, Delta=Delta, R=R, eps=eps, d=int(d))


def theorem1_bound(L, k, gamma, eps1, eps2) -> int:
    """The width ``d`` that Theorem 1' guarantees to suffice (bound R5).

    ``d = ceil(4 ln(3L) / (eps^2/2 - eps^3/3))`` with
    ``eps = ln(1+eps1) / (2 sqrt(k) ln(gamma (1+eps1) / eps2))``, roughly
    ``32 k ln^2(gamma(1+eps1)/eps2) / ln^2(1+eps1) * ln(3L)``: logarithmic in ``L``. The
    construction needs ``d <= L``, so the bound is informative only when it is below ``L``.

    Parameters
    ----------
    L : int
        ``L >= 1``.
    k : int
        ``1 <= k <= L``.
    gamma : float
        ``gamma >= 1``.
    eps1, eps2 : float
        The tolerances, ``eps1 > 0`` and ``0 < eps2 < 1``.

    Returns
    -------
    int

    Raises
    ------
    ValueError, TypeError
        If a parameter is out of the range stated above (the message names it).

    References
    ----------
    Eq. (5) of Likhosherstov et al. (2021), whose constants are not available; this is the book's
    own explicit version (:prf:ref:`con-thm-1prime`, constants derived in :ref:`ch-why-it-works`).
    """
    return theorem1_constants(L, k, gamma, eps1, eps2).d


def theorem1_crossover(k, gamma, eps1, eps2) -> int:
    """The smallest length ``L`` at which the bound of Theorem 1' drops below ``L``.

    :func:`theorem1_bound` grows like ``ln L``, so ``L - bound(L)`` is increasing once ``L``
    exceeds the bound's slope; below the returned length the theorem promises no width smaller
    than the sequence itself (and the construction needs ``d <= L``).

    Parameters
    ----------
    k : int
        ``k >= 1``.
    gamma : float
        ``gamma >= 1``.
    eps1, eps2 : float
        ``eps1 > 0``, ``0 < eps2 < 1``.

    Returns
    -------
    int
        The smallest ``L >= k`` with ``theorem1_bound(L, k, gamma, eps1, eps2) < L``.

    Raises
    ------
    ValueError, TypeError
        If a parameter is out of the range stated above (the message names it).
    SizeTooLargeError
        If ``k > 131072`` (no pattern the package builds has more nonzeros per row).

    References
    ----------
    :prf:ref:`con-thm-1prime` (the book's explicit version of Theorem 1); :ref:`ch-log-law`.
    """
    k = check_size("k", k, cap=MAX_L, why="nonzeros per row of a pattern, whose L is at most "
                                          "MAX_L = 131072")
    theorem1_bound(k, k, gamma, eps1, eps2)          # validates gamma, eps1, eps2

    def below(L):
        return theorem1_bound(L, k, gamma, eps1, eps2) < L

    hi = k
    while not below(hi):
        hi *= 2
    lo = max(k, hi // 2)                              # below(lo) is false unless lo == k
    if below(lo):
        return lo
    while hi - lo > 1:                                # below(lo) false, below(hi) true
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if below(mid) else (mid, hi)
    return hi


# The old names of this module's renamed functions warn and resolve for one release
# (sattn/_deprecation.py); imported last so that no line above moves.
from .._deprecation import module_getattr as _old_names  # noqa: E402

__getattr__ = _old_names(__name__)

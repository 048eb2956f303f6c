"""The rank-1 single-head softmax construction of Theorem 2 (Part II, :ref:`ch-rank-one`).

The projection vector of Lemma 3 (:prf:ref:`r1-lem-projection`) and the rank-1 layer of
:prf:ref:`r1-thm-rank-one`, with the theorem's lambda or a data-adaptive one, verified in float64
or in mpmath. The explicit constants (lambda, delta, the gap ``2 log n + 3``) are the book's
reconstruction of Theorem 2, not quotes of the paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import mpmath
import numpy as np

from .._validate import MAX_DRAWS, as_float_array, as_vector, check_int, check_real, check_rng, check_size
from ..layers import AttentionHead, multihead_attention
from ..results import Result
from .boltzmann import boltzmann_average
from .contextual import (
    ContextualReport,
    SeparationReport,
    token_key,
    log10_or_minus_inf,
    pairs_to_separate,
    as_sequences,
    validate_separated,
)

__flat__ = [
    "ProjectionReport",
    "projection_vector",
    "Theorem2Constants", "theorem2_constants",
    "adaptive_lambda",
    "RankOneContextualMapping",
    "rank_one_contextual_mapping",
]
__all__ = [*__flat__, "validate_head_size"]


@dataclass(frozen=True)
class ProjectionReport(Result):
    """Outcome of :func:`projection_vector`: the worst ratio ``|v.(x-x')| / ||x-x'||`` over all
    pairs, the bound ``sqrt(8/(pi d)) / M^2`` it must reach, and the number of draws used."""

    min_ratio: float
    bound: float
    worst_pair: tuple
    draws: int
    n_points: int

    @property
    def ok(self) -> bool:
        """The worst ratio reaches the bound of Lemma 3."""
        return self.min_ratio >= self.bound

    @property
    def message(self) -> str:
        """One line: worst ratio against the bound, with the pair and the draws used."""
        rel = ">=" if self.ok else "<"
        return (f"worst ratio |v.(x-x')|/||x-x'|| = {self.min_ratio:.4g} {rel} bound "
                f"{self.bound:.4g} (pair {self.worst_pair} of {self.n_points} points, "
                f"{self.draws} draw(s))")


#: The largest head size ``s`` of the constructions (their weights are ``s x d`` matrices; the
#: theorems need ``s = 1``).
MAX_HEAD_SIZE = 4096


def validate_head_size(s):
    """The head size ``s``, ``1 <= s <= MAX_HEAD_SIZE``."""
    return check_size("s", s, cap=MAX_HEAD_SIZE,
                      why="the head's weights are s x d matrices; the construction needs s = 1")


def projection_vector(P, rng, *, max_draws: int = 100) -> tuple[np.ndarray, ProjectionReport]:
    """A unit vector ``v`` with ``|v.(x-x')| >= sqrt(8/(pi d))/M^2 ||x-x'||`` for all pairs of P.

    Draws uniformly random unit vectors and keeps the first that satisfies the inequality on
    every pair (each draw succeeds with probability at least ``1 - 2/pi``).

    Parameters
    ----------
    P : array_like, shape (M, d)
        ``M >= 2`` distinct points, one per row.
    rng : numpy.random.Generator
    max_draws : int, default 100
        At most ``10**6`` (above, a :class:`sattn.SizeTooLargeError`).

    Returns
    -------
    v : numpy.ndarray, shape (d,)
    report : ProjectionReport

    Raises
    ------
    ValueError
        If ``P`` has repeated points, or no draw succeeds within ``max_draws``.

    References
    ----------
    Lemma 3 of Kajitsuka & Sato (2024) (from Park et al., 2021); :ref:`ch-rank-one`.
    """
    P = as_float_array("P", P, ndim=2)
    rng = check_rng("rng", rng)
    max_draws = check_size("max_draws", max_draws, cap=MAX_DRAWS,
                           why="the most random draws one call may make")
    M, d = P.shape
    if M < 2:
        raise ValueError(f"P must hold at least 2 points (rows), got shape {P.shape}")
    a, b = np.triu_indices(M, 1)
    diff = P[a] - P[b]
    dist = np.linalg.norm(diff, axis=1)
    if np.any(dist == 0):
        z = int(np.argmin(dist))
        raise ValueError(f"P has repeated points: rows {a[z]} and {b[z]} are equal")
    bound = math.sqrt(8.0 / (math.pi * d)) / M**2
    best = None
    for draw in range(1, max_draws + 1):
        v = rng.standard_normal(d)
        v /= np.linalg.norm(v)
        ratio = np.abs(diff @ v) / dist
        z = int(np.argmin(ratio))
        if best is None or ratio[z] > best[1]:
            best = (v, float(ratio[z]), (int(a[z]), int(b[z])))
        if ratio[z] >= bound:
            return v, ProjectionReport(float(ratio[z]), bound, (int(a[z]), int(b[z])), draw, M)
    raise ValueError(
        f"no unit vector satisfying Lemma 3 was found in max_draws = {max_draws} draws "
        f"(best worst-pair ratio {best[1]:.3g} < bound {bound:.3g}); increase max_draws"
    )


# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Theorem2Constants:
    """The constants of the book's explicit version of Theorem 2.

    ``lam`` is lambda, ``r = r_max + eps/4`` the radius, ``log10_delta`` the separation in log10
    (delta itself underflows float64 for all but toy sizes), ``max_logit = lam * r_max**2``,
    ``digits`` the decimal digits needed to resolve delta-sized differences, ``c`` the Lemma 3
    constant ``sqrt(8/(pi d))/(|V|+1)^2`` and ``gap = 2 log n + 3``.
    """

    n: int
    vocabulary_size: int
    d: int
    eps: float
    r_min: float
    r_max: float
    lam: float
    r: float
    log10_delta: float
    max_logit: float
    digits: int
    c: float
    gap: float

    @property
    def delta(self) -> float:
        """delta as a float (0.0 when it underflows)."""
        return 10.0 ** self.log10_delta if self.log10_delta > -320 else 0.0


def theorem2_constants(n: int, vocabulary_size: int, d: int, eps: float, r_min: float,
                       r_max: float) -> Theorem2Constants:
    """lambda, r and delta of the book's explicit Theorem 2, computed in the log domain.

    ``lam = (|V|+1)^4 (2 log n + 3) pi d / (8 eps r_min)``, ``r = r_max + eps/4`` and
    ``delta = eps/(4 r_max) * (log n)^2 exp(-2 lam r_max^2) / (lam r_max)``.

    Parameters
    ----------
    n : int (2 <= n <= 2**53)
    vocabulary_size : int (1 <= vocabulary_size <= 2**53)
    d : int (1 <= d <= 2**53)
        A count above ``2**53`` (``n``, ``vocabulary_size``, ``d``) is a
        :class:`sattn.SizeTooLargeError`.
    eps, r_min, r_max : float (> 0)

    Returns
    -------
    Theorem2Constants

    References
    ----------
    Theorem 2 of Kajitsuka & Sato (2024); the constants are reconstructed for this book
    (:ref:`ch-rank-one`).
    """
    exact = "the constants are computed in float64, exact for counts up to 2**53"
    n = check_size("n", n, low=2, cap=2**53, why=exact)
    V = check_size("vocabulary_size", vocabulary_size, cap=2**53, why=exact)
    d = check_size("d", d, cap=2**53, why=exact)
    eps = check_real("eps", eps, low=0.0, low_open=True)
    r_min = check_real("r_min", r_min, low=0.0, low_open=True)
    r_max = check_real("r_max", r_max, low=r_min)
    gap = 2.0 * math.log(n) + 3.0
    c = math.sqrt(8.0 / (math.pi * d)) / (V + 1) ** 2
    lam = gap / (c**2 * eps * r_min)
    ln_delta = (math.log(eps / (4 * r_max)) + 2 * math.log(math.log(n))
                - 2 * lam * r_max**2 - math.log(lam * r_max))
    digits = int(math.ceil(2 * lam * r_max**2 / math.log(10))) + 30
    return Theorem2Constants(n=n, vocabulary_size=V, d=d, eps=eps, r_min=r_min, r_max=r_max,
                             lam=lam, r=r_max + eps / 4, log10_delta=ln_delta / math.log(10),
                             max_logit=lam * r_max**2, digits=digits, c=c, gap=gap)


def adaptive_lambda(projections, n: int) -> float:
    """The smallest lambda for which Lemma 2's gap condition holds on the actual data.

    ``lam * min|a| * min_{a != a'} |a - a'| = 2 log n + 3``, where ``a`` runs over the
    projections ``v.x`` of the vocabulary.

    Parameters
    ----------
    projections : array_like, shape (vocabulary_size,)
        Distinct, nonzero projections of the vocabulary.
    n : int (2 <= n <= 2**53)

    References
    ----------
    Step 5 of the proof of Theorem 2 (book's version); :ref:`ch-rank-one`.
    """
    a = as_vector("projections", projections)
    if a.size == 0:
        raise ValueError("projections must hold at least one value, got an empty vector")
    n = check_int("n", n, low=2)
    if np.any(a == 0):
        raise ValueError("projections must be nonzero (a zero projection means inverse temperature 0)")
    s = np.sort(a)
    gaps = np.diff(s)
    if s.size > 1 and gaps.min() <= 0:
        raise ValueError("projections must be distinct")
    min_gap = float(gaps.min()) if s.size > 1 else float(np.abs(a).min())
    return (2 * math.log(n) + 3) / (float(np.abs(a).min()) * min_gap)


@dataclass
class RankOneContextualMapping:
    """The rank-1 single-head softmax attention layer of Theorem 2 (book's explicit version).

    ``F(X)[:, k] = x_k + scale * v * g_k(X)`` with ``a = v.X``,
    ``g_k(X) = sum_l a_l softmax(lam a_k a)_l`` (the Boltzmann average at inverse temperature
    ``lam a_k``) and ``scale = eps / (4 r_max)``.

    Attributes
    ----------
    v : numpy.ndarray, shape (d,)
        The projection vector (Lemma 3 on the vocabulary and the origin).
    lam : float
    scale : float
    head : AttentionHead
        Explicit rank-1 weights (head size ``s``) realising the layer.
    constants : Theorem2Constants
        The theorem's constants for this dataset (independent of the ``lam`` actually used).
    separation : SeparationReport
    projection : ProjectionReport
    lam_rule : str
        "theorem", "adaptive" or "given".
    """

    v: np.ndarray
    lam: float
    scale: float
    head: AttentionHead
    constants: Theorem2Constants
    separation: SeparationReport
    projection: ProjectionReport
    lam_rule: str
    vocab: list = field(default_factory=list, repr=False)

    def __call__(self, X) -> np.ndarray:
        """The layer's output in float64 (through :func:`~sattn.layers.multihead_attention`)."""
        X = as_float_array("X", X, ndim=2)
        return multihead_attention(X, [self.head])

    def boltzmann_values(self, X, *, dps: int | None = None):
        """``g_k(X)`` for every column k: float64 array, or a list of mpf if ``dps`` is given."""
        X = as_float_array("X", X, ndim=2)
        a = self.v @ X
        if dps is None:
            return np.array([boltzmann_average(a, self.lam * ak) for ak in a])
        with mpmath.workdps(dps):
            am = [mpmath.mpf(float(x)) for x in a]
            lam = mpmath.mpf(self.lam)
            out = []
            for ak in am:
                z = [lam * ak * x for x in am]
                m = max(z)
                w = [mpmath.exp(x - m) for x in z]
                out.append(mpmath.fsum(x * y for x, y in zip(am, w)) / mpmath.fsum(w))
            return out

    def digits_needed(self, Xs) -> int:
        """Decimal digits that resolve Boltzmann differences of size ``exp(-2 lam max a^2)`` (+30)."""
        Xs = as_sequences("Xs", Xs, d=self.v.shape[0])
        amax = max(float(np.abs(self.v @ X).max()) for X in Xs)
        return int(math.ceil(2 * self.lam * amax**2 / math.log(10))) + 30

    def verify(self, Xs, *, dps: int | str | None = None) -> ContextualReport:
        """Check the contextual-mapping property on ``Xs``.

        The same-token separation ``scale * |g_k(X_i) - g_l(X_j)|`` is computed from the
        Boltzmann values directly (not from ``x_k + tiny``, which float64 would absorb); in
        mpmath with ``dps`` digits if given (``"auto"``: :meth:`digits_needed`). Different-token distances use the float64 outputs.
        The report is checked against the theorem's ``r`` and ``log10 delta``.
        """
        Xs = as_sequences("Xs", Xs, d=self.v.shape[0])
        if isinstance(dps, str):
            if dps != "auto":
                raise ValueError(f"dps must be None, 'auto' or an integer >= 15, got {dps!r}")
            dps = self.digits_needed(Xs)
        elif dps is not None:
            dps = check_int("dps", dps, low=15)
        outs = [self(X) for X in Xs]
        g = [self.boltzmann_values(X, dps=dps) for X in Xs]
        max_norm = max(float(np.linalg.norm(Y, axis=0).max()) for Y in outs)
        best_same, same_pair = None, None
        best_diff, diff_pair = math.inf, None
        n_pairs = 0
        for p, q, same in pairs_to_separate(Xs):
            n_pairs += 1
            if same:
                gap = abs(g[p[0]][p[1]] - g[q[0]][q[1]])
                if best_same is None or gap < best_same:
                    best_same, same_pair = gap, (p, q)
            else:
                dist = float(np.linalg.norm(outs[p[0]][:, p[1]] - outs[q[0]][:, q[1]]))
                if dist < best_diff:
                    best_diff, diff_pair = dist, (p, q)
        if best_same is None:
            same_f, log_same = math.inf, math.inf
        elif dps is not None:
            with mpmath.workdps(dps):
                sep = self.scale * best_same
                log_same = float(mpmath.log10(sep)) if sep > 0 else -math.inf
            same_f = float(sep) if log_same > -300 else 0.0
        else:
            same_f = float(self.scale * best_same)
            log_same = log10_or_minus_inf(same_f)
        if same_f <= best_diff and same_pair is not None:
            overall, worst = same_f, same_pair
        else:
            overall, worst = best_diff, diff_pair
        return ContextualReport(
            max_norm=max_norm, min_distance=overall, worst_pair=worst,
            min_distance_same_token=same_f, min_distance_different_tokens=best_diff,
            log10_min_distance_same_token=log_same, n_pairs=n_pairs, r=self.constants.r,
            delta=self.constants.delta, log10_delta=self.constants.log10_delta,
            precision="float64" if dps is None else f"mpmath, {dps} digits",
        )


def rank_one_contextual_mapping(Xs, rng, *, lam="theorem", s: int = 1, r_min: float | None = None,
                                r_max: float | None = None, eps: float | None = None,
                                max_draws: int = 100) -> RankOneContextualMapping:
    """Build the rank-1, single-head softmax attention layer that is a contextual mapping on Xs.

    Weights: ``W_Q = e v^T``, ``W_K = lam e v^T``, ``W_V = e v^T``, ``W_O = scale v e^T`` with
    ``e = e_1`` in R^s and ``scale = eps / (4 r_max)``, so ``W_K^T W_Q = lam v v^T`` and
    ``W_O W_V = scale v v^T``.

    Parameters
    ----------
    Xs : list of (d, n) arrays, or array (N, d, n)
        Sequences without duplicate tokens and without a zero token.
    rng : numpy.random.Generator
        Used to draw the projection vector (redrawn until Lemma 3 holds on V and the origin).
    lam : {"theorem", "adaptive"} or float, default "theorem"
        "theorem": the theorem's lambda; "adaptive": the smallest lambda for which the gap
        condition holds on the measured projections; a float: that value.
    s : int, default 1
        Head size, ``1 <= s <= 4096`` (``MAX_HEAD_SIZE``; above, a
        :class:`sattn.SizeTooLargeError`).
    r_min, r_max, eps : float, optional
        Separation parameters; measured from the data when omitted, checked when given.
    max_draws : int, default 100
        At most ``10**6`` (above, a :class:`sattn.SizeTooLargeError`).

    Returns
    -------
    RankOneContextualMapping

    Raises
    ------
    ValueError
        On a duplicate token (naming the sequence and columns), a zero token (``r_min > 0`` is
        required), a violated given separation bound, ``n < 2``, or an invalid ``lam``.

    References
    ----------
    Theorem 2 of Kajitsuka & Sato (2024); constants reconstructed for this book (:ref:`ch-rank-one`).
    """
    Xs = as_sequences("Xs", Xs)
    rng = check_rng("rng", rng)
    s = validate_head_size(s)
    d, n = Xs[0].shape
    if n < 2:
        raise ValueError(f"sequences must have n >= 2 tokens (with n = 1 the statement is trivial), got n = {n}")
    rep = validate_separated(Xs, r_min=r_min, r_max=r_max, eps=eps)
    if rep.r_min == 0.0:
        i, k = rep.r_min_at
        raise ValueError(
            f"token Xs[{i}][:, {k}] is the zero vector, but the construction needs r_min > 0 "
            "(a zero token would attend with inverse temperature 0)"
        )
    r_min = rep.r_min if r_min is None else r_min
    r_max = rep.r_max if r_max is None else r_max
    if eps is None:
        eps = rep.eps if math.isfinite(rep.eps) else 1.0
    if r_min <= 0:
        raise ValueError(f"r_min must be > 0 for this construction, got {r_min}")
    vocab = sorted({token_key(X[:, k]) for X in Xs for k in range(n)})
    P = np.vstack([np.array(vocab), np.zeros((1, d))])
    v, proj = projection_vector(P, rng, max_draws=max_draws)
    const = theorem2_constants(n, len(vocab), d, eps, r_min, r_max)
    if isinstance(lam, str):
        if lam == "theorem":
            lam_v = const.lam
        elif lam == "adaptive":
            lam_v = adaptive_lambda(np.array(vocab) @ v, n)
        else:
            raise ValueError(f"lam must be 'theorem', 'adaptive' or a positive float, got {lam!r}")
        rule = lam
    else:
        lam_v = check_real("lam", lam, low=0.0, low_open=True)
        rule = "given"
    scale = eps / (4 * r_max)
    e = np.zeros((s, 1))
    e[0, 0] = 1.0
    vr = v[None, :]
    head = AttentionHead(W_Q=e @ vr, W_K=lam_v * (e @ vr), W_V=e @ vr, W_O=scale * (vr.T @ e.T))
    return RankOneContextualMapping(v=v, lam=float(lam_v), scale=scale, head=head, constants=const,
                                    separation=rep, projection=proj, lam_rule=rule, vocab=vocab)


# The old names of this module's renamed functions warn and resolve for one release
# (sattn/_deprecation.py); imported last so that no line above moves.
from .._deprecation import module_getattr as _old_names  # noqa: E402

__getattr__ = _old_names(__name__)

"""Contextual mappings with one attention layer (Part II of the book, Kajitsuka & Sato 2024).

Column convention throughout: a sequence is a matrix ``X`` of shape ``(d, n)`` whose column ``k``
is token ``k``; a dataset is a list of such matrices (or an array of shape ``(N, d, n)``).

Contents
--------
* the Boltzmann operator ``boltz(a) = a . softmax(a)`` in float64 and in mpmath, and the
  Boltzmann average ``phi_a(t)`` (inverse temperature ``t``);
* tokenwise separatedness and vocabulary sets, with a checker reporting the worst pair;
* a contextual-mapping checker for any map, reporting the worst pair and its distance;
* the hardmax counter-example (one-layer hardmax attention is never a contextual mapping);
* the projection vector of Lemma 3 and the rank-1 single-head softmax construction of Theorem 2,
  with the theorem's lambda or a data-adaptive one, verified in float64 or in mpmath.

The explicit constants (lambda, delta, the gap ``2 log n + 3``) are the book's reconstruction of
Theorem 2 (see the chapter "One layer suffices: the rank-1 construction"), not quotes of the paper.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import mpmath
import numpy as np

from ._validate import as_float_array, as_vector, check_int, check_real, check_rng
from .attention import AttentionHead, multihead_attention

__all__ = [
    "boltzmann",
    "boltzmann_mp",
    "boltzmann_average",
    "as_sequences",
    "vocabulary",
    "SeparationReport",
    "tokenwise_separation",
    "check_separated",
    "ContextualReport",
    "contextual_mapping_report",
    "hardmax_counterexample",
    "HardmaxReport",
    "check_hardmax_counterexample",
    "ProjectionReport",
    "projection_vector",
    "Theorem2Constants",
    "theorem2_constants",
    "adaptive_lambda",
    "RankOneContextualMapping",
    "rank_one_contextual_mapping",
]


# ----------------------------------------------------------------------------------------
# Boltzmann operator
# ----------------------------------------------------------------------------------------

def boltzmann(a, *, axis: int = -1) -> np.ndarray | float:
    """The Boltzmann operator ``boltz(a) = sum_l a_l softmax(a)_l`` (float64, stable).

    Parameters
    ----------
    a : array_like, shape (..., n)
        One or more real vectors (along ``axis``).
    axis : int, default -1

    Returns
    -------
    float or numpy.ndarray
        ``boltz`` of each vector; lies between ``max(a) - log n`` and ``max(a)``.

    References
    ----------
    The Boltzmann operator of Kajitsuka & Sato (2024), Section 3.4; Chapter "Softmax and the
    Boltzmann operator".
    """
    a = as_float_array("a", a)
    if a.ndim == 0 or a.shape[axis] == 0:
        raise ValueError(f"a must have at least one entry along axis {axis}, got shape {a.shape}")
    m = a.max(axis=axis, keepdims=True)
    with np.errstate(under="ignore"):
        w = np.exp(a - m)
    out = (a * w).sum(axis=axis) / w.sum(axis=axis)
    return float(out) if np.ndim(out) == 0 else out


def boltzmann_mp(a, *, dps: int = 50):
    """The Boltzmann operator in mpmath arithmetic with ``dps`` decimal digits.

    Parameters
    ----------
    a : sequence of real numbers or mpmath.mpf, length n
    dps : int, default 50
        Working precision (decimal digits).

    Returns
    -------
    mpmath.mpf

    References
    ----------
    As :func:`boltzmann`; Chapter "Softmax and the Boltzmann operator".
    """
    dps = check_int("dps", dps, low=15)
    with mpmath.workdps(dps):
        a = [mpmath.mpf(x) for x in a]
        if not a:
            raise ValueError("a must have at least one entry, got an empty sequence")
        m = max(a)
        w = [mpmath.exp(x - m) for x in a]
        return mpmath.fsum(x * y for x, y in zip(a, w)) / mpmath.fsum(w)


def boltzmann_average(a, t) -> np.ndarray | float:
    """``phi_a(t) = sum_l a_l softmax(t a)_l``, the softmax-weighted mean at inverse temperature t.

    Parameters
    ----------
    a : array_like, shape (n,)
    t : float or array_like of floats
        Inverse temperature(s); ``t = 0`` gives the mean, ``t -> +inf`` the max, ``t -> -inf``
        the min.

    Returns
    -------
    float or numpy.ndarray (shape of ``t``)

    References
    ----------
    Property P3 (temperature monotonicity) of the Boltzmann operator; Chapter "Softmax and the
    Boltzmann operator".
    """
    a = as_vector("a", a)
    t = as_float_array("t", t)
    z = t[..., None] * a
    m = z.max(axis=-1, keepdims=True)
    with np.errstate(under="ignore"):
        w = np.exp(z - m)
    out = (w * a).sum(axis=-1) / w.sum(axis=-1)
    return float(out) if out.ndim == 0 else out


# ----------------------------------------------------------------------------------------
# Sequences, vocabularies, separatedness
# ----------------------------------------------------------------------------------------

def as_sequences(name: str, Xs, *, d: int | None = None, n: int | None = None) -> list[np.ndarray]:
    """Validate a dataset of sequences: a list of ``(d, n)`` arrays or an array ``(N, d, n)``.

    All sequences must share ``d`` and ``n``. Returns a list of float64 arrays.

    Raises
    ------
    ValueError
        Naming the first sequence whose shape differs, or the empty dataset.
    """
    if isinstance(Xs, np.ndarray) and Xs.ndim == 2:
        raise ValueError(
            f"{name} must be a list of (d, n) sequences or an array of shape (N, d, n), "
            f"got a single 2-D array of shape {Xs.shape}; wrap it in a list"
        )
    try:
        items = list(Xs)
    except TypeError:
        raise TypeError(f"{name} must be a list of (d, n) arrays, got {type(Xs).__name__}") from None
    if not items:
        raise ValueError(f"{name} must contain at least one sequence, got none")
    out = []
    for i, X in enumerate(items):
        X = as_float_array(f"{name}[{i}]", X, ndim=2)
        if 0 in X.shape:
            raise ValueError(f"{name}[{i}] must be non-empty, got shape {X.shape}")
        out.append(X)
    d0, n0 = out[0].shape
    if d is not None and d0 != d:
        raise ValueError(f"{name}[0] must have d = {d} rows, got shape {out[0].shape}")
    if n is not None and n0 != n:
        raise ValueError(f"{name}[0] must have n = {n} columns, got shape {out[0].shape}")
    for i, X in enumerate(out):
        if X.shape != (d0, n0):
            raise ValueError(
                f"{name}[{i}] has shape {X.shape} but {name}[0] has shape {(d0, n0)}; "
                "all sequences must have the same (d, n)"
            )
    return out


def _key(x) -> tuple:
    return tuple(float(v) for v in x)


def vocabulary(X) -> frozenset:
    """The vocabulary set of one sequence: the set of its distinct tokens (as tuples).

    References
    ----------
    Section 3.1 of Kajitsuka & Sato (2024); Chapter "Contextual mappings and separated inputs".
    """
    X = as_float_array("X", X, ndim=2)
    return frozenset(_key(X[:, k]) for k in range(X.shape[1]))


@dataclass(frozen=True)
class SeparationReport:
    """Measured separatedness of a dataset (Definition 1).

    ``r_min``/``r_max`` are the smallest/largest token norm, ``eps`` the smallest distance
    between two different tokens anywhere in the dataset (``inf`` if there is a single distinct
    token), attained by ``eps_pair = ((i, k), (j, l))``. ``duplicates`` lists ``(i, k, l)`` with
    ``X[i][:, k] == X[i][:, l]`` (k < l), ``vocabulary_size`` is ``|V|``.
    """

    r_min: float
    r_max: float
    eps: float
    eps_pair: tuple | None
    r_min_at: tuple
    r_max_at: tuple
    duplicates: tuple
    vocabulary_size: int

    @property
    def has_duplicates(self) -> bool:
        return bool(self.duplicates)


def tokenwise_separation(Xs) -> SeparationReport:
    """Measure ``(r_min, r_max, eps)`` of a dataset and list duplicate tokens.

    Parameters
    ----------
    Xs : list of array_like (d, n), or array (N, d, n)

    Returns
    -------
    SeparationReport

    References
    ----------
    Definition 1 (tokenwise separatedness) of Kajitsuka & Sato (2024), after Yun et al. (2020);
    Chapter "Contextual mappings and separated inputs".
    """
    Xs = as_sequences("Xs", Xs)
    norms = np.array([np.linalg.norm(X, axis=0) for X in Xs])  # (N, n)
    imin = np.unravel_index(int(np.argmin(norms)), norms.shape)
    imax = np.unravel_index(int(np.argmax(norms)), norms.shape)
    first_at: dict[tuple, tuple] = {}
    for i, X in enumerate(Xs):
        for k in range(X.shape[1]):
            first_at.setdefault(_key(X[:, k]), (i, k))
    toks = np.array(list(first_at))
    where = list(first_at.values())
    eps, pair = math.inf, None
    if len(toks) > 1:
        D = np.linalg.norm(toks[:, None, :] - toks[None, :, :], axis=-1)
        np.fill_diagonal(D, np.inf)
        a, b = np.unravel_index(int(np.argmin(D)), D.shape)
        eps, pair = float(D[a, b]), (where[min(a, b)], where[max(a, b)])
    dups = []
    for i, X in enumerate(Xs):
        seen: dict[tuple, int] = {}
        for k in range(X.shape[1]):
            t = _key(X[:, k])
            if t in seen:
                dups.append((i, seen[t], k))
            else:
                seen[t] = k
    return SeparationReport(
        r_min=float(norms[imin]), r_max=float(norms[imax]), eps=eps, eps_pair=pair,
        r_min_at=(int(imin[0]), int(imin[1])), r_max_at=(int(imax[0]), int(imax[1])),
        duplicates=tuple(dups), vocabulary_size=len(first_at),
    )


def check_separated(Xs, *, r_min: float | None = None, r_max: float | None = None,
                    eps: float | None = None, allow_duplicates: bool = False) -> SeparationReport:
    """Check that a dataset is tokenwise ``(r_min, r_max, eps)``-separated; raise naming the culprit.

    The inequalities are checked in the non-strict form ``r_min <= ||x|| <= r_max`` and
    ``||x - x'|| >= eps`` for different tokens (strictness does not matter for the results).
    Parameters left ``None`` are not checked.

    Parameters
    ----------
    Xs : list of array_like (d, n), or array (N, d, n)
    r_min, r_max, eps : float, optional
    allow_duplicates : bool, default False
        If False, a token repeated inside one sequence is an error.

    Returns
    -------
    SeparationReport
        The measured values.

    Raises
    ------
    ValueError
        Naming the token (sequence ``i``, column ``k``) or pair that violates the condition.

    References
    ----------
    Definition 1 of Kajitsuka & Sato (2024); Chapter "Contextual mappings and separated inputs".
    """
    rep = tokenwise_separation(Xs)
    if not allow_duplicates and rep.duplicates:
        i, k, l = rep.duplicates[0]
        raise ValueError(
            f"sequence {i} has a duplicate token: columns {k} and {l} are equal; this construction "
            "needs inputs without duplicate tokens (use the positional-encoding variant)"
        )
    if r_min is not None:
        r_min = check_real("r_min", r_min, low=0.0)
        if rep.r_min < r_min:
            i, k = rep.r_min_at
            raise ValueError(f"token Xs[{i}][:, {k}] has norm {rep.r_min:.6g} < r_min = {r_min:.6g}")
    if r_max is not None:
        r_max = check_real("r_max", r_max, low=0.0, low_open=True)
        if rep.r_max > r_max:
            i, k = rep.r_max_at
            raise ValueError(f"token Xs[{i}][:, {k}] has norm {rep.r_max:.6g} > r_max = {r_max:.6g}")
    if eps is not None:
        eps = check_real("eps", eps, low=0.0, low_open=True)
        if rep.eps < eps:
            (i, k), (j, l) = rep.eps_pair
            raise ValueError(
                f"tokens are not eps-separated: Xs[{i}][:, {k}] and Xs[{j}][:, {l}] are different "
                f"but only {rep.eps:.6g} apart, below eps = {eps:.6g}"
            )
    return rep


# ----------------------------------------------------------------------------------------
# Contextual-mapping checker
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ContextualReport:
    """Result of checking the (r, delta)-contextual-mapping property (Definition 2).

    Attributes
    ----------
    max_norm : float
        Largest norm of an output column.
    min_distance : float
        Smallest distance between two output columns that must be separated (vocabularies
        differ or tokens differ); ``inf`` if no such pair. May be 0.
    worst_pair : tuple or None
        ``((i, k), (j, l))`` attaining ``min_distance``.
    min_distance_same_token : float
        Smallest distance over pairs with the same input token but different vocabularies.
    min_distance_different_tokens : float
        Smallest distance over pairs with different input tokens.
    log10_min_distance_same_token : float
        ``log10`` of the same-token minimum (from high precision when available).
    n_pairs : int
        Number of pairs that must be separated.
    r, delta : float or None
        The radius and separation being checked against (``None``: not checked).
    log10_delta : float or None
        ``log10(delta)`` when ``delta`` is too small for float64.
    precision : str
        "float64" or "mpmath, N digits".
    """

    max_norm: float
    min_distance: float
    worst_pair: tuple | None
    min_distance_same_token: float
    min_distance_different_tokens: float
    log10_min_distance_same_token: float
    n_pairs: int
    r: float | None = None
    delta: float | None = None
    log10_delta: float | None = None
    precision: str = "float64"

    @property
    def holds(self) -> bool:
        """True if every measured quantity satisfies the bounds that were given."""
        ok = True
        if self.r is not None:
            ok &= self.max_norm <= self.r
        if self.log10_delta is not None:
            ok &= self.log10_min_distance_same_token > self.log10_delta and (
                self.min_distance_different_tokens > 10.0 ** max(self.log10_delta, -300)
            )
        elif self.delta is not None:
            ok &= self.min_distance > self.delta
        return bool(ok)


def _pairs_to_separate(Xs):
    """Yield ((i,k),(j,l), same_token) for all pairs that a contextual mapping must separate."""
    vocab = [vocabulary(X) for X in Xs]
    cols = [(i, k, _key(X[:, k])) for i, X in enumerate(Xs) for k in range(X.shape[1])]
    for (a, b) in itertools.combinations(range(len(cols)), 2):
        i, k, t = cols[a]
        j, l, u = cols[b]
        if t != u:
            yield (i, k), (j, l), False
        elif vocab[i] != vocab[j]:
            yield (i, k), (j, l), True


def _log10(x: float) -> float:
    return math.log10(x) if x > 0 else -math.inf


def contextual_mapping_report(Xs, outputs, *, r: float | None = None,
                              delta: float | None = None) -> ContextualReport:
    """Check Definition 2 for a map given by its outputs on a dataset; report the worst pair.

    Parameters
    ----------
    Xs : list of (d, n) arrays
        The input sequences.
    outputs : list of (d', n) arrays
        ``q(Xs[i])`` for each ``i`` (for example ``multihead_attention(X, heads)``).
    r, delta : float, optional
        Bounds to check against.

    Returns
    -------
    ContextualReport

    References
    ----------
    Definition 2 ((r, delta)-contextual mapping) of Kajitsuka & Sato (2024), after Kim et al.
    (2023); Chapter "Contextual mappings and separated inputs".
    """
    Xs = as_sequences("Xs", Xs)
    Ys = as_sequences("outputs", outputs, n=Xs[0].shape[1])
    if len(Ys) != len(Xs):
        raise ValueError(f"outputs must have one sequence per input: {len(Xs)} inputs, {len(Ys)} outputs")
    max_norm = max(float(np.linalg.norm(Y, axis=0).max()) for Y in Ys)
    best = {True: (math.inf, None), False: (math.inf, None)}
    n_pairs = 0
    for p, q, same in _pairs_to_separate(Xs):
        n_pairs += 1
        dist = float(np.linalg.norm(Ys[p[0]][:, p[1]] - Ys[q[0]][:, q[1]]))
        if dist < best[same][0]:
            best[same] = (dist, (p, q))
    overall = min(best.values(), key=lambda t: t[0])
    return ContextualReport(
        max_norm=max_norm, min_distance=overall[0], worst_pair=overall[1],
        min_distance_same_token=best[True][0], min_distance_different_tokens=best[False][0],
        log10_min_distance_same_token=_log10(best[True][0]), n_pairs=n_pairs,
        r=None if r is None else float(r), delta=None if delta is None else float(delta),
    )


# ----------------------------------------------------------------------------------------
# Hardmax counter-example
# ----------------------------------------------------------------------------------------

#: The two sets of positions of the counter-example: same min (1), max (6) and mean (7/2).
COUNTEREXAMPLE_T = ((1, 2, 5, 6), (1, 3, 4, 6))


def hardmax_counterexample(d: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Two integer sequences on which one-layer hardmax attention is never a contextual mapping.

    Tokens are ``x(t) = t e_1 + e_2`` (``x(t) = t`` when ``d = 1``) for ``t`` in
    ``T1 = {1, 2, 5, 6}`` and ``T2 = {1, 3, 4, 6}``: the two position sets share their minimum,
    maximum and mean, so every hardmax head returns the same vector at the shared tokens ``x(1)``
    (column 0) and ``x(6)`` (column 3), whatever its weights.

    Parameters
    ----------
    d : int, default 1
        Token dimension (>= 1).

    Returns
    -------
    X1, X2 : numpy.ndarray of int, shape (d, 4)

    References
    ----------
    Theorem 1 of Kajitsuka & Sato (2024) (the example here is the book's own, not the paper's);
    Chapter "Hardmax attention is not enough".
    """
    d = check_int("d", d, low=1)
    out = []
    for T in COUNTEREXAMPLE_T:
        X = np.zeros((d, 4), dtype=np.int64)
        X[0] = T
        if d >= 2:
            X[1] = 1
        out.append(X)
    return out[0], out[1]


@dataclass(frozen=True)
class HardmaxReport:
    """Outcome of :func:`check_hardmax_counterexample`.

    ``mismatches`` counts the trials where a shared token's hardmax output differed between the
    two sequences (0 expected, exactly); ``softmax_gap`` is the distance between the softmax
    outputs at token ``x(1)`` for one fixed head, showing that softmax separates the pair.
    """

    trials: int
    mismatches: int
    max_heads: int
    zero_key_trials: int
    tied_trials: int
    softmax_outputs: tuple
    softmax_gap: float


def _random_int_heads(rng, d, max_heads, max_s, bound, zero_key):
    h = int(rng.integers(1, max_heads + 1))
    heads = []
    for _ in range(h):
        s = int(rng.integers(1, max_s + 1))
        W = [rng.integers(-bound, bound + 1, size=shape) for shape in ((s, d), (s, d), (s, d), (d, s))]
        if zero_key:
            W[1] = np.zeros((s, d), dtype=np.int64)
        heads.append(AttentionHead(*W))
    return heads


def check_hardmax_counterexample(rng, *, trials: int = 1000, d: int = 1, max_heads: int = 4,
                                 max_s: int = 3, bound: int = 5) -> HardmaxReport:
    """Verify the counter-example exactly (rational arithmetic) over random integer weights.

    For each trial, draws 1..``max_heads`` heads of size 1..``max_s`` with integer entries in
    ``[-bound, bound]`` (every fifth trial with ``W_K = 0``, where hardmax returns the plain mean),
    runs exact hardmax attention on both sequences and compares the outputs at the shared tokens.

    Parameters
    ----------
    rng : numpy.random.Generator
    trials, d, max_heads, max_s, bound : int

    Returns
    -------
    HardmaxReport

    References
    ----------
    Theorem 1 of Kajitsuka & Sato (2024); Chapter "Hardmax attention is not enough".
    """
    rng = check_rng("rng", rng)
    trials = check_int("trials", trials, low=1)
    d = check_int("d", d, low=1)
    max_heads = check_int("max_heads", max_heads, low=1)
    max_s = check_int("max_s", max_s, low=1)
    bound = check_int("bound", bound, low=1)
    X1, X2 = hardmax_counterexample(d)
    mismatches = zero = tied = 0
    for t in range(trials):
        zero_key = t % 5 == 4
        zero += zero_key
        heads = _random_int_heads(rng, d, max_heads, max_s, bound, zero_key)
        Y1, P1 = multihead_attention(X1, heads, kind="hardmax", exact=True, return_weights=True)
        Y2 = multihead_attention(X2, heads, kind="hardmax", exact=True)
        tied += any(any(sum(1 for x in P[:, k] if x != 0) > 1 for k in range(4)) for P in P1)
        if not (np.all(Y1[:, 0] == Y2[:, 0]) and np.all(Y1[:, 3] == Y2[:, 3])):
            mismatches += 1
    # softmax separates the same pair (one fixed head, d = 1 projection on the first coordinate)
    e = np.zeros((1, d))
    e[0, 0] = 1.0
    head = AttentionHead(W_Q=0.3 * e, W_K=e, W_V=e, W_O=e.T)
    S1 = multihead_attention(X1.astype(float), [head])
    S2 = multihead_attention(X2.astype(float), [head])
    return HardmaxReport(
        trials=trials, mismatches=mismatches, max_heads=max_heads, zero_key_trials=zero,
        tied_trials=tied, softmax_outputs=(float(S1[0, 0]), float(S2[0, 0])),
        softmax_gap=float(np.linalg.norm(S1[:, 0] - S2[:, 0])),
    )


# ----------------------------------------------------------------------------------------
# Lemma 3: the projection vector
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProjectionReport:
    """Outcome of :func:`projection_vector`: the worst ratio ``|v.(x-x')| / ||x-x'||`` over all
    pairs, the bound ``sqrt(8/(pi d)) / M^2`` it must reach, and the number of draws used."""

    min_ratio: float
    bound: float
    worst_pair: tuple
    draws: int
    n_points: int


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
    Lemma 3 of Kajitsuka & Sato (2024) (from Park et al., 2021); Chapter "One layer suffices:
    the rank-1 construction".
    """
    P = as_float_array("P", P, ndim=2)
    rng = check_rng("rng", rng)
    max_draws = check_int("max_draws", max_draws, low=1)
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
# Theorem 2: the rank-1 construction
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
    n : int (>= 2)
    vocabulary_size : int (>= 1)
    d : int (>= 1)
    eps, r_min, r_max : float (> 0)

    Returns
    -------
    Theorem2Constants

    References
    ----------
    Theorem 2 of Kajitsuka & Sato (2024); the constants are reconstructed for this book
    (Chapter "One layer suffices: the rank-1 construction").
    """
    n = check_int("n", n, low=2)
    V = check_int("vocabulary_size", vocabulary_size, low=1)
    d = check_int("d", d, low=1)
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
    n : int (>= 2)

    References
    ----------
    Step 5 of the proof of Theorem 2 (book's version); Chapter "One layer suffices".
    """
    a = as_vector("projections", projections)
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
        """The layer's output in float64 (through :func:`multihead_attention`)."""
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
        for p, q, same in _pairs_to_separate(Xs):
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
            log_same = _log10(same_f)
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
        Head size.
    r_min, r_max, eps : float, optional
        Separation parameters; measured from the data when omitted, checked when given.
    max_draws : int, default 100

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
    Theorem 2 of Kajitsuka & Sato (2024); constants reconstructed for this book (Chapter "One
    layer suffices: the rank-1 construction").
    """
    Xs = as_sequences("Xs", Xs)
    rng = check_rng("rng", rng)
    s = check_int("s", s, low=1)
    d, n = Xs[0].shape
    if n < 2:
        raise ValueError(f"sequences must have n >= 2 tokens (with n = 1 the statement is trivial), got n = {n}")
    rep = check_separated(Xs, r_min=r_min, r_max=r_max, eps=eps)
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
    vocab = sorted({_key(X[:, k]) for X in Xs for k in range(n)})
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

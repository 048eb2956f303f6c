"""Sequences, tokenwise separatedness and contextual mappings (Part II, :ref:`ch-contextual-mappings`).

Column convention throughout: a sequence is a matrix ``X`` of shape ``(d, n)`` whose column ``k``
is token ``k``; a dataset is a list of such matrices (or an array of shape ``(N, d, n)``).
Vocabulary sets, tokenwise separatedness (:prf:ref:`cm-def-separated`) with a checker reporting
the worst pair, and a contextual-mapping checker (:prf:ref:`cm-def-contextual`) for any map given
by its outputs.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from .._validate import as_float_array, check_real
from ..results import Result

__flat__ = [
    "vocabulary",
    "SeparationReport",
    "tokenwise_separation",
    "validate_separated",
    "ContextualReport",
    "contextual_mapping_report",
]
__all__ = [*__flat__, "as_sequences", "log10_or_minus_inf", "pairs_to_separate", "token_key"]


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


def token_key(x) -> tuple:
    """A token (a column vector) as a hashable tuple of floats."""
    return tuple(float(v) for v in x)


def vocabulary(X) -> frozenset:
    """The vocabulary set of one sequence: the set of its distinct tokens (as tuples).

    References
    ----------
    Section 3.1 of Kajitsuka & Sato (2024); :ref:`ch-contextual-mappings`.
    """
    X = as_float_array("X", X, ndim=2)
    return frozenset(token_key(X[:, k]) for k in range(X.shape[1]))


@dataclass(frozen=True)
class SeparationReport(Result):
    """Measured separatedness of a dataset (Definition 1).

    ``r_min``/``r_max`` are the smallest/largest token norm, ``eps`` the smallest distance
    between two different tokens anywhere in the dataset (``inf`` if there is a single distinct
    token), attained by ``eps_pair = ((i, k), (j, l))``. ``duplicates`` lists ``(i, k, l)`` with
    ``X[i][:, k] == X[i][:, l]`` (k < l), ``vocabulary_size`` is ``|V|``. ``ok`` says whether the
    dataset is separated as the constructions of Part II need it: no sequence repeats a token and
    no token is zero (``r_min > 0``).
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

    @property
    def ok(self) -> bool:
        """No duplicate token inside a sequence and ``r_min > 0``."""
        return not self.has_duplicates and self.r_min > 0

    @property
    def message(self) -> str:
        """One line: the measured ``(r_min, r_max, eps)``, or what keeps the data from being separated."""
        measured = (f"r_min = {self.r_min:.4g}, r_max = {self.r_max:.4g}, eps = {self.eps:.4g}, "
                    f"|V| = {self.vocabulary_size}")
        if self.has_duplicates:
            i, k, l = self.duplicates[0]
            return (f"not separated: sequence {i} repeats a token (columns {k} and {l}; "
                    f"{len(self.duplicates)} duplicate(s)); {measured}")
        if self.r_min <= 0:
            i, k = self.r_min_at
            return f"not separated: token Xs[{i}][:, {k}] is zero; {measured}"
        return f"tokenwise separated: {measured}"


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
    :ref:`ch-contextual-mappings`.
    """
    Xs = as_sequences("Xs", Xs)
    norms = np.array([np.linalg.norm(X, axis=0) for X in Xs])  # (N, n)
    imin = np.unravel_index(int(np.argmin(norms)), norms.shape)
    imax = np.unravel_index(int(np.argmax(norms)), norms.shape)
    first_at: dict[tuple, tuple] = {}
    for i, X in enumerate(Xs):
        for k in range(X.shape[1]):
            first_at.setdefault(token_key(X[:, k]), (i, k))
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
            t = token_key(X[:, k])
            if t in seen:
                dups.append((i, seen[t], k))
            else:
                seen[t] = k
    return SeparationReport(
        r_min=float(norms[imin]), r_max=float(norms[imax]), eps=eps, eps_pair=pair,
        r_min_at=(int(imin[0]), int(imin[1])), r_max_at=(int(imax[0]), int(imax[1])),
        duplicates=tuple(dups), vocabulary_size=len(first_at),
    )


def validate_separated(Xs, *, r_min: float | None = None, r_max: float | None = None,
                    eps: float | None = None, allow_duplicates: bool = False) -> SeparationReport:
    """Validate that a dataset is tokenwise ``(r_min, r_max, eps)``-separated; raise naming the culprit.

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
    Definition 1 of Kajitsuka & Sato (2024); :ref:`ch-contextual-mappings`.
    """
    rep = tokenwise_separation(Xs)
    if not isinstance(allow_duplicates, (bool, np.bool_)):
        raise TypeError(f"allow_duplicates must be a bool, got {allow_duplicates!r} "
                        f"({type(allow_duplicates).__name__})")
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


@dataclass(frozen=True)
class ContextualReport(Result):
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
    def message(self) -> str:
        """One line: the verdict, the largest norm and the smallest separations against ``r`` and ``delta``."""
        parts = [f"max norm {self.max_norm:.4g}" + ("" if self.r is None else f" (r = {self.r:.4g})")]
        if self.log10_delta is not None:
            parts.append(f"same-token separation 10^{self.log10_min_distance_same_token:.1f} "
                         f"(delta = 10^{self.log10_delta:.1f})")
        else:
            parts.append(f"smallest separation {self.min_distance:.3g}"
                         + ("" if self.delta is None else f" (delta = {self.delta:.3g})"))
        parts.append(f"different tokens {self.min_distance_different_tokens:.3g}")
        verdict = "contextual mapping" if self.ok else "NOT a contextual mapping"
        return (f"{verdict} on {self.n_pairs} pairs ({self.precision}): " + "; ".join(parts)
                + f"; worst pair {self.worst_pair}")

    @property
    def ok(self) -> bool:
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


def pairs_to_separate(Xs):
    """Yield ((i,k),(j,l), same_token) for all pairs that a contextual mapping must separate."""
    vocab = [vocabulary(X) for X in Xs]
    cols = [(i, k, token_key(X[:, k])) for i, X in enumerate(Xs) for k in range(X.shape[1])]
    for (a, b) in itertools.combinations(range(len(cols)), 2):
        i, k, t = cols[a]
        j, l, u = cols[b]
        if t != u:
            yield (i, k), (j, l), False
        elif vocab[i] != vocab[j]:
            yield (i, k), (j, l), True


def log10_or_minus_inf(x: float) -> float:
    """``log10(x)``, or ``-inf`` for ``x <= 0``."""
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
    (2023); :ref:`ch-contextual-mappings`.
    """
    Xs = as_sequences("Xs", Xs)
    Ys = as_sequences("outputs", outputs, n=Xs[0].shape[1])
    r = None if r is None else check_real("r", r, low=0.0, low_open=True)
    delta = None if delta is None else check_real("delta", delta, low=0.0, low_open=True)
    if len(Ys) != len(Xs):
        raise ValueError(f"outputs must have one sequence per input: {len(Xs)} inputs, {len(Ys)} outputs")
    max_norm = max(float(np.linalg.norm(Y, axis=0).max()) for Y in Ys)
    best = {True: (math.inf, None), False: (math.inf, None)}
    n_pairs = 0
    for p, q, same in pairs_to_separate(Xs):
        n_pairs += 1
        dist = float(np.linalg.norm(Ys[p[0]][:, p[1]] - Ys[q[0]][:, q[1]]))
        if dist < best[same][0]:
            best[same] = (dist, (p, q))
    overall = min(best.values(), key=lambda t: t[0])
    return ContextualReport(
        max_norm=max_norm, min_distance=overall[0], worst_pair=overall[1],
        min_distance_same_token=best[True][0], min_distance_different_tokens=best[False][0],
        log10_min_distance_same_token=log10_or_minus_inf(best[True][0]), n_pairs=n_pairs,
        r=None if r is None else float(r), delta=None if delta is None else float(delta),
    )


# The old names of this module's renamed functions warn and resolve for one release
# (sattn/_deprecation.py); imported last so that no line above moves.
from .._deprecation import module_getattr as _old_names  # noqa: E402

__getattr__ = _old_names(__name__)

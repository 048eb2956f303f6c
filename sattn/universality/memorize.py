"""Memorization with one softmax attention layer (Part II, :ref:`ch-memorization`).

Column convention (``X`` has shape ``(d, n)``, one token per column), as in
:mod:`sattn.universality.contextual`.

* :func:`memorize` builds a one-layer Transformer ``F_FF o F_SA`` (single head, rank-1 weights)
  that maps every training sequence exactly to its labels: the attention layer is the rank-1
  contextual mapping, the feed-forward layer a piecewise-linear interpolation of the context ids
  along one projection (the book's explicit version of Theorem 3 of Kajitsuka & Sato 2024).
* :func:`memorize_with_positions` adds positional encodings so that sequences with duplicate
  tokens can be memorized too (the book's version of Theorem 4).

The constructions verify themselves and return reports with measured margins.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._validate import as_float_array, check_rng
from ..layers import FeedForward, feed_forward, multihead_attention
from ..results import Result
from .contextual import token_key, as_sequences, tokenwise_separation, vocabulary
from .rank_one import RankOneContextualMapping, projection_vector, rank_one_contextual_mapping

__flat__ = __all__ = [
    "validate_consistent_labels",
    "interpolating_ffn",
    "MemorizationReport",
    "OneLayerTransformer",
    "memorize",
    "memorize_with_positions",
]


def _labels(Xs, Ys):
    Ys = as_sequences("Ys", Ys)
    if len(Ys) != len(Xs):
        raise ValueError(f"Ys must hold one label matrix per sequence: {len(Xs)} sequences, {len(Ys)} label matrices")
    if Ys[0].shape != Xs[0].shape:
        raise ValueError(
            f"each label matrix must have the shape of its sequence (d, n) = {Xs[0].shape}, "
            f"got Ys[0] of shape {Ys[0].shape}"
        )
    return Ys


def validate_consistent_labels(Xs, Ys) -> int:
    """Validate that labels are consistent; raise naming the first conflicting pair.

    Labels are consistent when two tokens that are equal and sit in sequences with the same
    vocabulary set carry the same label. Any Transformer without positional encoding is
    permutation-equivariant, so it cannot fit inconsistent labels on sequences without duplicate
    tokens (nor on two sequences that are permutations of each other). Sequences with duplicate
    tokens can share a vocabulary without being permutations of each other (``[1, 1, 2]`` and
    ``[1, 2, 2]``); the check still applies to them, as the condition of Theorem 3, but their
    conflict does not rule out every Transformer.

    Parameters
    ----------
    Xs, Ys : lists of (d, n) arrays
        Sequences and their labels (label ``Ys[i][:, k]`` belongs to token ``Xs[i][:, k]``).

    Returns
    -------
    int
        The number of distinct (token, vocabulary) classes.

    Raises
    ------
    ValueError
        ``"inconsistent labels: ..."`` naming both positions and both labels.

    References
    ----------
    Theorem 3 of Kajitsuka & Sato (2024) (consistency assumption); :ref:`ch-memorization`.
    """
    Xs = as_sequences("Xs", Xs)
    Ys = _labels(Xs, Ys)
    seen: dict = {}
    for i, X in enumerate(Xs):
        V = vocabulary(X)
        for k in range(X.shape[1]):
            key = (token_key(X[:, k]), V)
            y = Ys[i][:, k]
            if key in seen:
                j, l = seen[key]
                if not np.array_equal(Ys[j][:, l], y):
                    if sorted(map(token_key, Xs[j].T)) == sorted(map(token_key, X.T)):
                        why = "no Transformer without positional encoding can fit both"
                    else:  # same vocabulary set, different multisets: only possible with duplicates
                        why = ("the sequences have duplicate tokens and are not permutations of each "
                               "other, so this does not rule out every Transformer, but the one-layer "
                               "construction needs consistent labels")
                    raise ValueError(
                        f"inconsistent labels: Xs[{j}] and Xs[{i}] have the same vocabulary and "
                        f"Xs[{j}][:, {l}] == Xs[{i}][:, {k}], but Ys[{j}][:, {l}] = {Ys[j][:, l].tolist()} != "
                        f"Ys[{i}][:, {k}] = {y.tolist()}; {why}"
                    )
            else:
                seen[key] = (i, k)
    return len(seen)


def interpolating_ffn(ids, targets, rng, *, max_draws: int = 100) -> tuple[FeedForward, dict]:
    """A feed-forward layer with skip connection that maps each id exactly to its target.

    Projects the ids on a Lemma 3 direction ``u``, sorts the projections ``p_(1) < ... < p_(M)``
    and uses ``M - 1`` ReLUs ``relu(u.h - p_(m))`` to interpolate ``target - id`` piecewise
    linearly (the skip connection adds the id back).

    Parameters
    ----------
    ids : array_like, shape (M, d)
        Distinct context ids (rows).
    targets : array_like, shape (M, d)
        The wanted outputs.
    rng : numpy.random.Generator

    Returns
    -------
    ffn : FeedForward
        Width ``max(M - 1, 1)``.
    info : dict
        ``min_gap`` (smallest gap between sorted projections), ``max_slope`` (largest absolute
        entry of a slope), ``width``.

    Raises
    ------
    ValueError
        If two ids coincide (or project to the same value) while their targets differ.

    References
    ----------
    Proof of Theorem 3 of Kajitsuka & Sato (2024) (construction derived for the book);
    :ref:`ch-memorization`.
    """
    C = as_float_array("ids", ids, ndim=2)
    T = as_float_array("targets", targets, ndim=2)
    if C.shape != T.shape:
        raise ValueError(f"ids and targets must have the same shape (M, d), got {C.shape} and {T.shape}")
    M, d = C.shape
    rng = check_rng("rng", rng)
    if M == 1:
        return FeedForward(np.zeros((1, d)), np.zeros(1), np.zeros((d, 1)), T[0] - C[0]), {
            "min_gap": math.inf, "max_slope": 0.0, "width": 1}
    # identical ids (float64 could not separate them): harmless if the targets agree, fatal otherwise
    _, first, inverse = np.unique(C, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    for m in range(M):
        f = first[inverse[m]]
        if f != m and not np.array_equal(T[f], T[m]):
            raise ValueError(
                f"ids[{f}] and ids[{m}] are identical in float64 but their targets differ "
                f"({T[f].tolist()} vs {T[m].tolist()}): no token-wise layer can map them apart"
            )
    if len(first) < M:
        keep = np.sort(first)
        C, T = C[keep], T[keep]
        M = C.shape[0]
        if M == 1:
            return FeedForward(np.zeros((1, d)), np.zeros(1), np.zeros((d, 1)), T[0] - C[0]), {
                "min_gap": math.inf, "max_slope": 0.0, "width": 1}
    if d == 1:
        u = np.ones(1)
    else:
        u, _ = projection_vector(C, rng, max_draws=max_draws)
    p = C @ u
    order = np.argsort(p, kind="stable")
    p, C, T = p[order], C[order], T[order]
    gaps = np.diff(p)
    if np.any(gaps <= 0):
        m = int(np.argmin(gaps))
        raise ValueError(
            f"two context ids project to the same value {p[m]:.17g}: they cannot be told apart in "
            "float64 (try another lam)"
        )
    targ = T - C  # the skip connection adds the id back
    slopes = (targ[1:] - targ[:-1]) / gaps[:, None]  # (M-1, d)
    kappa = np.vstack([slopes[:1], np.diff(slopes, axis=0)])  # (M-1, d)
    q = M - 1
    ffn = FeedForward(W1=np.tile(u, (q, 1)), b1=-p[:-1].copy(), W2=kappa.T.copy(), b2=targ[0].copy())
    return ffn, {"min_gap": float(gaps.min()), "max_slope": float(np.abs(slopes).max()), "width": q}


@dataclass(frozen=True)
class MemorizationReport(Result):
    """Measured outcome of a memorization construction.

    ``max_error`` is the largest ``|F(X_i) - Y_i|`` entry over the training set; ``n_ids`` the
    number of distinct context ids, ``width`` the FFN width, ``min_gap`` the smallest gap
    between projected ids, ``max_slope`` the largest FFN slope, ``lam`` the attention's lambda,
    ``parameters`` the number of stored numbers (rank-1 factors counted as vectors). ``ok``:
    ``max_error <= TOLERANCE`` (exact memorization up to float64 rounding).
    """

    #: Largest training error that still counts as exact memorization.
    TOLERANCE: ClassVar[float] = 1e-6

    n_sequences: int
    n_ids: int
    width: int
    max_error: float
    min_gap: float
    max_slope: float
    lam: float
    parameters: int

    @property
    def ok(self) -> bool:
        """Every training sequence is mapped to its labels within :attr:`TOLERANCE`."""
        return self.max_error <= self.TOLERANCE

    @property
    def message(self) -> str:
        """One line: the training error against the tolerance, ids, width and parameters."""
        rel = "<=" if self.ok else ">"
        return (f"{'memorized' if self.ok else 'NOT memorized'} {self.n_sequences} sequences: "
                f"max error {self.max_error:.3g} {rel} {self.TOLERANCE:g}; {self.n_ids} ids, "
                f"FFN width {self.width}, smallest gap {self.min_gap:.3g}, largest slope "
                f"{self.max_slope:.3g}, lambda {self.lam:.4g}, {self.parameters} parameters")


@dataclass
class OneLayerTransformer:
    """``F(X) = F_FF(F_SA(X + E))``: one single-head rank-1 attention layer, one FFN.

    Attributes
    ----------
    attention : RankOneContextualMapping
    ffn : FeedForward
    E : numpy.ndarray of shape (d, n), or None
        Positional encoding added to the input (Theorem 4 variant).
    """

    attention: RankOneContextualMapping
    ffn: FeedForward
    E: np.ndarray | None = None

    def __call__(self, X) -> np.ndarray:
        X = as_float_array("X", X, ndim=2)
        if self.E is not None:
            if X.shape != self.E.shape:
                raise ValueError(f"X must have shape {self.E.shape} (that of the positional encoding), got {X.shape}")
            X = X + self.E
        return feed_forward(multihead_attention(X, [self.attention.head]), self.ffn)


def _choose_lam(Xs, seed, candidates=(0.25, 0.5, 1.0, 2.0, 4.0)):
    """Pick lambda (as max logit / max a^2) maximizing the smallest same-token id gap in float64.

    All candidates are compared on the projection vector drawn by ``default_rng(seed)``, the one
    the caller then builds the layer with, so the chosen maximal logit is the one the layer has.
    """
    best = None
    probe = rank_one_contextual_mapping(Xs, np.random.default_rng(seed), lam=1.0)
    amax = max(float(np.abs(probe.v @ X).max()) for X in Xs)
    for c in candidates:
        lam = c / amax**2
        g = {}
        for X in Xs:
            V = vocabulary(X)
            a = probe.v @ X
            vals = [_g_float(a, lam, k) for k in range(X.shape[1])]
            for k in range(X.shape[1]):
                g.setdefault(token_key(X[:, k]), {})[V] = vals[k]
        gap = math.inf
        for per_token in g.values():
            vals = np.sort(np.array(list(per_token.values())))
            if vals.size > 1:
                gap = min(gap, float(np.diff(vals).min()))
        if best is None or gap > best[1]:
            best = (lam, gap)
    return best[0]


def _g_float(a, lam, k):
    z = lam * a[k] * a
    w = np.exp(z - z.max())
    return float((a * w).sum() / w.sum())


def _parameters(attn: RankOneContextualMapping, ffn: FeedForward) -> int:
    s = attn.head.W_Q.shape[0]
    d = attn.v.shape[0]
    return 4 * (s + d) + ffn.W1.size + ffn.b1.size + ffn.W2.size + ffn.b2.size


def memorize(Xs, Ys, rng, *, lam="auto", s: int = 1) -> tuple[OneLayerTransformer, MemorizationReport]:
    """Build a one-layer Transformer that maps every ``Xs[i]`` exactly to ``Ys[i]``.

    Steps: check the inputs (no duplicate token, no zero token, consistent labels); build the
    rank-1 contextual mapping; collect one context id per (token, vocabulary) class; fit the
    interpolating FFN; measure the error on the training set.

    Parameters
    ----------
    Xs : list of (d, n) arrays, or array (N, d, n)
    Ys : list of (d, n) arrays
        Labels (any real values; the paper uses classes in ``[C]``).
    rng : numpy.random.Generator
    lam : "auto", "adaptive", "theorem" or float, default "auto"
        "auto" picks, among lambdas with a maximal logit of 0.25 to 4, the one whose context ids
        are best separated in float64 (no guarantee; the error is measured). "theorem" and
        "adaptive" are as in :func:`~sattn.universality.rank_one.rank_one_contextual_mapping`; with them, ids usually collide
        in float64, which raises.
    s : int, default 1
        Head size.

    Returns
    -------
    model : OneLayerTransformer
    report : MemorizationReport

    Raises
    ------
    ValueError
        On duplicate or zero tokens, inconsistent labels (naming the pair), shape mismatches, or
        context ids that float64 cannot tell apart.

    References
    ----------
    Theorem 3 of Kajitsuka & Sato (2024); construction of the FFN derived for this book
    (:ref:`ch-memorization`).
    """
    Xs = as_sequences("Xs", Xs)
    rng = check_rng("rng", rng)
    Ys = _labels(Xs, Ys)
    # preconditions of the attention layer first (duplicates, zero tokens), then the labels
    attn = rank_one_contextual_mapping(Xs, rng, lam=1.0, s=s)
    validate_consistent_labels(Xs, Ys)
    if isinstance(lam, str) and lam == "auto":
        # one projection vector for choosing lambda and for the layer itself
        seed = int(rng.integers(2**32))
        attn = rank_one_contextual_mapping(Xs, np.random.default_rng(seed), lam=_choose_lam(Xs, seed), s=s)
    else:
        attn = rank_one_contextual_mapping(Xs, rng, lam=lam, s=s)
    ids, targets, where, seen = [], [], [], set()
    for i, (X, Y) in enumerate(zip(Xs, Ys)):
        H = attn(X)
        V = vocabulary(X)
        for k in range(X.shape[1]):
            key = (token_key(X[:, k]), V)
            if key not in seen:
                seen.add(key)
                ids.append(H[:, k])
                targets.append(Y[:, k])
                where.append((i, k))
    try:
        ffn, info = interpolating_ffn(np.array(ids), np.array(targets), rng)
    except ValueError as exc:
        pair = [int(x) for x in re.findall(r"ids\[(\d+)\]", str(exc))[:2]]
        named = ""
        if len(pair) == 2:
            (i, k), (j, l) = where[pair[0]], where[pair[1]]
            named = f" (token Xs[{i}][:, {k}] and token Xs[{j}][:, {l}])"
        raise ValueError(
            f"the context ids of two classes that need different labels{named} cannot be told apart "
            f"in float64 with lam = {attn.lam:.4g}: the attention's separation is below float64 "
            "resolution; use lam='auto' or a smaller lam"
        ) from exc
    model = OneLayerTransformer(attention=attn, ffn=ffn)
    err = max(float(np.abs(model(X) - Y).max()) for X, Y in zip(Xs, Ys))
    return model, MemorizationReport(
        n_sequences=len(Xs), n_ids=len(ids), width=info["width"], max_error=err,
        min_gap=info["min_gap"], max_slope=info["max_slope"], lam=attn.lam,
        parameters=_parameters(attn, ffn),
    )


def memorize_with_positions(Xs, Ys, rng, *, lam="auto", s: int = 1) -> tuple[OneLayerTransformer, MemorizationReport]:
    """Memorize sequences that may contain duplicate tokens, using a positional encoding.

    ``E[:, k] = (k + 1) (2 r_max + 2 eps) e_1``: shifted tokens at different positions are at
    least ``2 eps`` apart, so no shifted sequence has a duplicate, and the vocabulary set of
    ``X + E`` determines ``X`` (labels only need to be a function of the whole sequence).

    Parameters
    ----------
    Xs : list of (d, n) arrays
    Ys : list of (d, n) arrays
    rng : numpy.random.Generator
    lam, s : as in :func:`memorize`

    Returns
    -------
    model : OneLayerTransformer
        With ``model.E`` set; call ``model(X)`` on the raw sequence.
    report : MemorizationReport

    Raises
    ------
    ValueError
        If two identical sequences carry different labels (naming both), or on shape errors.

    References
    ----------
    Theorem 4 of Kajitsuka & Sato (2024) (encoding derived for this book); :ref:`ch-memorization`.
    """
    Xs = as_sequences("Xs", Xs)
    rng = check_rng("rng", rng)
    Ys = _labels(Xs, Ys)
    for i, j in itertools.combinations(range(len(Xs)), 2):
        if np.array_equal(Xs[i], Xs[j]) and not np.array_equal(Ys[i], Ys[j]):
            raise ValueError(
                f"inconsistent labels: Xs[{i}] and Xs[{j}] are the same sequence but Ys[{i}] != Ys[{j}]"
            )
    rep = tokenwise_separation(Xs)
    eps = rep.eps if math.isfinite(rep.eps) else 1.0
    d, n = Xs[0].shape
    E = np.zeros((d, n))
    E[0] = (np.arange(n) + 1) * (2 * rep.r_max + 2 * eps)
    # identical sequences collapse to one training example
    uniq, uY = [], []
    for X, Y in zip(Xs, Ys):
        if not any(np.array_equal(X, U) for U in uniq):
            uniq.append(X)
            uY.append(Y)
    inner, report = memorize([X + E for X in uniq], uY, rng, lam=lam, s=s)
    model = OneLayerTransformer(attention=inner.attention, ffn=inner.ffn, E=E)
    err = max(float(np.abs(model(X) - Y).max()) for X, Y in zip(Xs, Ys))
    return model, MemorizationReport(
        n_sequences=len(Xs), n_ids=report.n_ids, width=report.width, max_error=err,
        min_gap=report.min_gap, max_slope=report.max_slope, lam=report.lam,
        parameters=report.parameters + E.size,
    )


# The old names of this module's renamed functions warn and resolve for one release
# (sattn/_deprecation.py); imported last so that no line above moves.
from .._deprecation import module_getattr as _old_names  # noqa: E402

__getattr__ = _old_names(__name__)

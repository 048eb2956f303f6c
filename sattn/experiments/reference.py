"""The reference engine of the d_min experiments: Algorithm 1 as the paper states it.

SVD factorization of ``B`` (eq. 8, :func:`~sattn.patterns.construction.logit_target` and
:func:`~sattn.patterns.construction.factorize`), a QR-based Stiefel draw
(:func:`~sattn.patterns.construction.sample_stiefel`), the input ``X`` (eqs. 13, 15), the full
``L x L`` logit matrix with the fixed weights (eqs. 16-17), and criteria (6)-(7) decided by
:func:`~sattn.patterns.criteria.check_approximation`, the one implementation of the criteria that
the whole package uses. The fast engine (:class:`~sattn.experiments.engine.FastEngine`) is tested
against this route: the same decision on the same draw, the same success frequencies.

References
----------
Algorithm 1 and Section 4 of Likhosherstov, Choromanski & Weller (2021); :prf:ref:`con-alg-1`,
:ref:`ch-computation`.
"""

from __future__ import annotations

from .._validate import MAX_DRAWS, as_matrix, check_int, check_rng, check_size
from ..attention import attention_logits
from ..patterns.construction import draw_input, factorize, fixed_weights, logit_target
from ..patterns.criteria import check_approximation, validate_tolerances

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = ["reference_level"]
# The module's public names: the flat ones, then those that stay in this module.
__all__ = [*__flat__, "reference_draw"]


def reference_draw(A, eps1, eps2, factors, weights, rng) -> bool:
    """Decide one draw of Algorithm 1 by the literal route.

    Parameters
    ----------
    A : numpy.ndarray, shape (L, L)
        Target pattern.
    eps1, eps2 : float
        Tolerances of criteria (6)-(7).
    factors : tuple (D, V)
        The factorization ``B = D V^T`` of the logit target (from
        :func:`~sattn.patterns.construction.factorize`).
    weights : tuple (W_Q, W_K)
        The fixed weights of width ``d`` (from :func:`~sattn.patterns.construction.fixed_weights`).
    rng : numpy.random.Generator
        Draws the Stiefel matrix.

    Returns
    -------
    bool
        Whether the draw's logits meet criteria (6)-(7) in every row.

    References
    ----------
    Algorithm 1 of Likhosherstov et al. (2021), one iteration; :prf:ref:`con-alg-1`.
    """
    D, V = factors
    W_Q, W_K = weights
    X = draw_input(D, V, W_Q.shape[1], rng)
    return check_approximation(attention_logits(X, W_Q, W_K), A, eps1, eps2).ok


def reference_level(A, eps1, eps2, d, n_draws, rng, *, method="svd", factors=None):
    """The paper's literal route at one width: up to ``n_draws`` draws, first success wins.

    Parameters
    ----------
    A : array_like, shape (L, L)
        Target pattern.
    eps1, eps2 : float
        Tolerances of criteria (6)-(7).
    d : int
        Width.
    n_draws : int
        Budget of draws, ``1 <= n_draws <= 10**6`` (above, a :class:`sattn.SizeTooLargeError`).
    rng : numpy.random.Generator
    method : {"svd", "direct"}
        Factorization of ``B`` (ignored when ``factors`` is given).
    factors : tuple (D, V), optional
        Precomputed factorization (the per-A set-up), to time draws separately.

    Returns
    -------
    (success, draws) : (bool, int)

    Raises
    ------
    ValueError, TypeError
        Bad tolerances, ``n_draws < 1``, or ``rng`` not a :class:`numpy.random.Generator`.

    References
    ----------
    Algorithm 1 and Section 4 of Likhosherstov et al. (2021); :ref:`ch-computation`.
    """
    A = as_matrix("A", A, square=True)
    rng = check_rng("rng", rng)
    n_draws = check_size("n_draws", n_draws, cap=MAX_DRAWS,
                         why="the most random draws one call may make")
    eps1, eps2 = validate_tolerances(eps1, eps2)
    d = check_int("d", d, low=1, high=A.shape[0])
    if factors is not None and not (isinstance(factors, (tuple, list)) and len(factors) == 2):
        raise TypeError(f"factors must be a (D, V) pair from factorize, got {type(factors).__name__}")
    if factors is None:
        factors = factorize(logit_target(A, eps1, eps2), method)
    weights = fixed_weights(d)
    for i in range(n_draws):
        if reference_draw(A, eps1, eps2, factors, weights, rng):
            return True, i + 1
    return False, n_draws

"""A predictive estimate of d_min (the book's own model, not a result of the paper).

The construction accepts a draw ``Y`` (uniform on the Stiefel manifold, ``L x d``) when every row
of the logits ``G = (L/d) B P``, ``P = Y Y^T``, meets criteria (6)-(7) (log-domain form). This
module predicts the probability ``p(d)`` that one draw is accepted, and from it the width at
which the experiments' search (ascending ladder of widths, up to ``n`` draws per width) stops.

The model
---------
Fix a row ``l`` with support ``S`` (``k_l`` columns) and logits ``b = B[l, S]``. Write
``m = L - k_l`` for the number of off-support columns.

**Exact reduction of one row (a lemma, no approximation).** The row of logits is
``g = (L/d) P[:, S] b``. Its support part is ``g_S = (L/d) P_SS b`` and depends on the draw only
through the ``k_l x k_l`` block ``P_SS``. Conditionally on the rows ``Y_S`` of ``Y``, the other
rows ``Y_R`` have a law invariant under every rotation of ``R^m`` (the law of ``Y`` is invariant
under ``diag(I, H)``), and ``Y_R^T Y_R = I - Y_S^T Y_S``. Hence the off-support logits are

    g_R = (L/d) r x,     r^2 = b^T (P_SS - P_SS^2) b,     x uniform on the unit sphere of R^m,

with ``x`` independent of ``P_SS``. The block ``P_SS`` is matrix-variate beta: with
independent Wishart matrices ``W_1 ~ W_k(d, I)`` and ``W_2 ~ W_k(L - d, I)`` and the Cholesky
factor ``T T^T = W_1 + W_2``, ``P_SS = T^{-1} W_1 T^{-T}`` in law (``T^{-1} [G_1, G_2]`` is
uniform on the Stiefel manifold of ``k x L`` matrices for a Gaussian ``[G_1, G_2]``, being
right-rotation invariant).

**Row pass probability.** Row ``l`` meets (6) iff the spread ``max - min`` of ``g_S - b`` is at
most ``ln(1 + eps1)`` (``b - ln A`` is constant on the support, so the spread of ``g_S - ln A_S``
equals that of the errors ``e_S = g_S - b``), and (7) iff ``max_j x_j <= c`` with
``c = (min g_S - ln(1/eps2)) / ((L/d) r)``. So

    pi_l(d) = E_{P_SS}[ 1{spread(e_S) <= ln(1+eps1)} F_m(c) ],   F_m(c) = P(max_j x_j <= c).

**Assumptions** (each is measured by a function of this module):

* (A1) ``F_m(c) ~= (1 - tau_m(c))^m`` with ``tau_m`` the exact tail of one coordinate of a
  uniform unit vector (``x_1^2 ~ Beta(1/2, (m-1)/2)``): the coordinates' exceedances are treated
  as independent. :func:`~sattn.check_offsupport_max` measures it.
* (A2) Rows are independent: ``p(d) = prod_l pi_l(d)``. They are not exactly (they share ``Y``,
  and e.g. the diagonal of ``P`` sums to ``d``); :func:`~sattn.check_row_dependence` measures the
  correlations and :func:`~sattn.check_success_probability` compares ``p(d)`` with the fast engine.
* (A3) The expectation over ``P_SS`` is a Monte Carlo average (``n_samples`` draws of the
  ``k x k`` block, the same random numbers for every row type and every width, so that ``p(d)``
  is smooth in ``d``); rows with the same sorted ``b`` (few types: ``k_l`` and how many entries
  equal ``gamma``) share one estimate. The standard error is reported.
* (A4) The widths of the ladder are decided independently (they use different seeds), so the
  search stops at width ``d_i`` with probability ``s_i = (1 - (1-p_i)^n) prod_{j<i} (1-p_j)^n``.
  The prediction is the median of this law (also its mean, and the first width where
  ``1 - (1-p)^n >= 1/2``).

**The Gaussian picture, and why the book does not use it for the support.** For ``d << L`` the
errors are approximately Gaussian: off-support entries with variance
``(L/d)^2 ||b||^2 E[P_ij^2] = ||b||^2 L (L-d) / (d (L-1)(L+2)) ~ ||b||^2 / d``, support entries with
``Var e_j = (L/d)^2 [b_j^2 Var P_jj + (||b||^2 - b_j^2) E P_ij^2]``. The off-support part is
Gaussian to high accuracy, but the support part is not: ``(L/d) P_jj`` is close to
``chi^2_d / d``, whose lower tail (the one that breaks (7)) is much lighter than the Gaussian's,
and a low support logit comes with a small off-support scale ``r``. :func:`~sattn.check_error_model`
measures both. The exact reduction above keeps this dependence.

**Growth in L.** The naive Gaussian picture (:func:`~sattn.naive_dmin`: exact support logits,
independent Gaussian off-support errors of variance ``||b||^2/d``) gives
``-ln p(d) ~ L^2 Phibar(ln(1+eps1) sqrt(d)/||b||)`` and so ``d ~ 4 (||b||/ln(1+eps1))^2 ln L``.
In the model a row fails mostly through an atypically small support block, an event of
probability ``~ exp(-d J)`` for a rate ``J`` of the setup; a draw succeeds once ``L exp(-d J)``
is of order ``ln n``, so ``d_min ~ (ln L - ln ln n)/J``: also logarithmic in ``L``, with a larger
slope (the chapter fits both up to ``L = 32768``). The naive estimate is 23-48% below the
measured d_min of Figure 3; the model is within one grid step.

Modules
-------
In the order in which they may import each other:

* :mod:`~sattn.experiments.prediction.results`: the result classes (a row, a draw, the search,
  a check, a comparison);
* :mod:`~sattn.experiments.prediction.row_model`: the model of one row (the block ``P_SS``,
  ``F_m``, :func:`~sattn.experiments.prediction.row_model.row_pass_probability`);
* :mod:`~sattn.experiments.prediction.row_types`: a target as a histogram of row types, at
  any length;
* :mod:`~sattn.experiments.prediction.dmin`: one target: ``p(d)``
  (:func:`~sattn.draw_success_probability`), the ladder search (:func:`~sattn.predict_dmin`,
  :func:`~sattn.predict_d50`) and the experiments' targets (:func:`~sattn.sample_target`,
  :func:`~sattn.predict_setup`);
* :mod:`~sattn.experiments.prediction.checks`: the comparison with Figure 3
  (:func:`~sattn.compare_measured`), the naive Gaussian estimate (:func:`~sattn.naive_dmin`)
  and the checks of the assumptions (:func:`~sattn.check_error_model` (a),
  :func:`~sattn.check_offsupport_max` and :func:`~sattn.check_row_dependence` (b),
  :func:`~sattn.check_success_probability` (c)).

References
----------
Theorem 1 and Section 4 of Likhosherstov, Choromanski & Weller (2021) (the construction and the
protocol); the model is the book's own (:ref:`ch-experiments`).
"""

from __future__ import annotations

from . import checks, dmin, results, row_exact, row_model, row_types

# Every public name of the modules is importable as sattn.experiments.prediction.<name>
# (the one module this package was before), built from their own lists.
__all__ = [*results.__all__, *row_model.__all__, *row_exact.__all__, *row_types.__all__, *dmin.__all__,
           *checks.__all__]
globals().update({name: getattr(module, name)
                  for module in (results, row_model, row_exact, row_types, dmin, checks)
                  for name in module.__all__})

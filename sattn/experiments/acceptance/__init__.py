"""Acceptance curves of Algorithm 1 and the pre-registered test of the log law (:ref:`ch-log-law`).

The decades experiment records, per target, the first width of a ladder at which one of 16 draws
is accepted. That is a noisy statistic of the per-draw acceptance probability ``p(d)``. This
module measures ``p(d)`` itself and analyses it by the rules fixed in
``docs/registration/acceptance.md`` *before* the data were computed:

1. **Design** (:func:`~sattn.experiments.acceptance.design.design_widths`, :func:`~sattn.experiments.acceptance.design.extend_widths`): for each (setting, L) the widths
   are fixed multiples of the decades experiment's mean first-success width; a curve whose top
   width is accepted less than 40% of the time (bottom width more than 10%) is extended by a
   fixed rule. Each target gets ``draws`` independent draws per width, seed keys
   ``(setup_key, L, 4, target, d, i)``, on the decades experiment's targets.
2. **Curves** (:func:`~sattn.experiments.acceptance.analysis.probit_fit`, :func:`~sattn.experiments.acceptance.analysis.curve_quantiles`): per (setting, L, target) a probit
   in ``d`` fitted by binomial maximum likelihood gives ``d_q`` for ``q = 5%, 25%, 50%``, with a
   bootstrap over the draws (binomial resampling of each width's count).
3. **Per length** (:func:`~sattn.experiments.acceptance.analysis.pooled_series`): the mean of the targets' ``d_q`` with the variance
   ``max(c dbar^2, mean bootstrap variance) / T``, ``c`` the relative between-target variance
   pooled over the setting's lengths: replicate variances only.
4. **Laws** (:func:`~sattn.experiments.acceptance.analysis.fit_laws`, :func:`~sattn.experiments.acceptance.analysis.boxcox_profile`): weighted least squares on the per-length
   means with those variances (known, never rescaled by a residual): ``a ln L + b``,
   ``a (ln L)^2 + b``, ``a sqrt(L) + b`` and the Box-Cox family ``a (L^p - 1)/p + c`` (the log
   law is ``p = 0``; the chapters call the exponent beta) with a profile-likelihood interval for
   ``p`` (F(1, nu) threshold); AIC = chi^2 + 2 (parameters) on the independent per-length points.
5. **Decision** (:func:`~sattn.experiments.acceptance.analysis.decide`): the log law is consistent with a setting iff the 95% profile
   interval of ``p`` on the primary window (every measured ``L >= 256``) contains 0.
6. **Calibration** (:func:`~sattn.experiments.acceptance.analysis.calibrate`): the same design and pipeline on synthetic counts drawn
   from known laws, with the noise model (probit slope, target-to-target spread) measured on the
   decades experiment's draws (:func:`~sattn.experiments.acceptance.analysis.decades_noise_model`).

References
----------
Algorithm 1 and Section 4 of Likhosherstov, Choromanski & Weller (2021); Box & Cox (1964);
Akaike (1974); Efron & Tibshirani, *An Introduction to the Bootstrap* (1993). :ref:`ch-log-law`.

Two modules hold the registered experiment: :mod:`~sattn.experiments.acceptance.design` (step 1,
the tasks, their run and their store) and :mod:`~sattn.experiments.acceptance.analysis` (steps 2
to 6). Two more were added after the data, beside it:
:mod:`~sattn.experiments.acceptance.robust` (the same test under other links and on a model-free
``d_50``, the ``a ln L + b ln ln L + c`` family, a calibration on truths the registered analysis
does not assume) and :mod:`~sattn.experiments.acceptance.out_of_sample` (the predictions and
rule registered before the curves at L = 65536 and 131072). Every public name of the four is
importable as ``sattn.experiments.acceptance.<name>``, the module the registration names.
"""

from __future__ import annotations

from . import analysis, design, out_of_sample, robust, row_model_test

__all__ = [*design.__all__, *analysis.__all__, *robust.__all__, *out_of_sample.__all__,
           *row_model_test.__all__]
globals().update({name: getattr(module, name)
                  for module in (design, analysis, robust, out_of_sample, row_model_test)
                  for name in module.__all__})

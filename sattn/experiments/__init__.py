"""The d_min experiments of Part I (:ref:`ch-experiments`), above the mathematics.

Modules, in the order in which they may import each other:

* :mod:`~sattn.experiments.target`: a target's support and logits in row form, and the generator
  of one draw;
* :mod:`~sattn.experiments.engine`: the fast engine, one draw in named stages;
* :mod:`~sattn.experiments.setups`: setups, profiles and tasks (what to compute);
* :mod:`~sattn.experiments.reference`: the literal Algorithm 1, which the fast engine is tested
  against;

then the machinery that runs them (:mod:`sattn.runs`: the store, the cluster, the benchmark),
then the protocols that use it:

* :mod:`~sattn.experiments.protocol`: the d_min protocol and :func:`~sattn.reproduce`;
* :mod:`~sattn.experiments.laws`: competing growth laws of d_min, fitted on short and judged on
  long sequences (:ref:`ch-log-law`);
* :mod:`~sattn.experiments.prediction`: the book's predictive model of d_min (acceptance
  probability of a draw, the ladder search's law) and the numerical checks of its assumptions;
* :mod:`~sattn.experiments.acceptance`: acceptance curves of Algorithm 1 and the pre-registered
  test of the log law (:ref:`ch-log-law`).

Chapters import every public name from :mod:`sattn` itself.
"""

from .._lazy import submodule_getattr

#: ``sattn.experiments.<module>`` after a plain ``import sattn``: imported on first use.
__getattr__ = submodule_getattr(__name__)

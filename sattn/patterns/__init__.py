"""Part I: sparse attention patterns with logarithmic width (Likhosherstov, Choromanski & Weller).

Modules, in the order in which they may import each other:

* :mod:`~sattn.patterns.sparse`: the pattern classes, their validators, the two-pass sampler and
  structured patterns (:ref:`ch-sparse-patterns`);
* :mod:`~sattn.patterns.criteria`: criteria (6)-(7) in the log domain (:ref:`ch-approximation`);
* :mod:`~sattn.patterns.construction`: the Theorem 1 construction, Algorithm 1 and its bound
  (:ref:`ch-construction`, :ref:`ch-why-it-works`, :ref:`ch-causal`);
* :mod:`~sattn.patterns.optimize`: optimization-based and moment-curve logits
  (:ref:`ch-beyond`).

Chapters import every public name from :mod:`sattn` itself.
"""

from .._lazy import submodule_getattr

#: ``sattn.patterns.<module>`` after a plain ``import sattn``: imported on first use.
__getattr__ = submodule_getattr(__name__)

"""Part II: one attention layer is a universal approximator (Kajitsuka & Sato).

Column convention throughout (a sequence is a ``(d, n)`` matrix, one token per column). Modules,
in the order in which they may import each other:

* :mod:`~sattn.universality.boltzmann`: the Boltzmann operator (:ref:`ch-boltzmann`);
* :mod:`~sattn.universality.contextual`: separatedness and contextual mappings
  (:ref:`ch-contextual-mappings`);
* :mod:`~sattn.universality.hardmax`: the hardmax counter-example (:ref:`ch-hardmax`);
* :mod:`~sattn.universality.rank_one`: the rank-1 construction of Theorem 2 (:ref:`ch-rank-one`);
* :mod:`~sattn.universality.memorize`: memorization with one layer (:ref:`ch-memorization`);
* :mod:`~sattn.universality.universal`: universal approximation
  (:ref:`ch-universal-approximation`).

Chapters import every public name from :mod:`sattn` itself.
"""

from .._lazy import submodule_getattr

#: ``sattn.universality.<module>`` after a plain ``import sattn``: imported on first use.
__getattr__ = submodule_getattr(__name__)

"""The book's constructions in finite precision: float32, bfloat16, float16 and p-bit formats.

Every construction of the book is built and verified in float64. This module asks whether it
survives the arithmetic Transformers run in, in two modes:

* ``"weights"`` (mode (a)): inputs and weights are rounded to the format, the arithmetic stays
  float64 -- what storing a model in the format costs;
* ``"forward"`` (mode (b)): the whole forward pass is computed in the format.

Three modules, in the order in which they may import each other:

* :mod:`~sattn.precision.formats`: the formats (named and p-bit), rounding to them and the
  elementary operations of one format, with the accumulation model of mode (b);
* :mod:`~sattn.precision.forward`: the book's forward passes computed in a format (Part I's
  attention matrix, Part II's heads, feed-forward layers and models) and models rounded to one;
* :mod:`~sattn.precision.thresholds`: per construction, the check of its criterion in a format,
  the book's estimate of the bits it needs, and the measured threshold (:func:`~sattn.smallest_bits`).

Each construction has a check returning a :class:`~sattn.PrecisionReport` (criterion, margin), a
threshold search (:func:`~sattn.smallest_bits`) and the book's a-priori estimate of the bits it needs
(``*_bits_needed``), computed from the construction's own margins. The chapter
:ref:`ch-finite-precision` explains and measures all of it.

Every public function checks its arguments (with the package's validation helpers): bad input raises a
:class:`ValueError` or :class:`TypeError` naming the argument, what was received and what was
expected (formats, modes, models, sequences, labels, tolerances, sizes); nothing is clipped.
"""

from __future__ import annotations

from . import formats, forward, thresholds

# Every public name of the three modules is importable as sattn.precision.<name> (the one module
# this package was before), built from their own lists.
__all__ = [*formats.__all__, *forward.__all__, *thresholds.__all__]
globals().update({name: getattr(module, name) for module in (formats, forward, thresholds)
                  for name in module.__all__})

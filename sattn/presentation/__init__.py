"""The book's presentation helpers, apart from the mathematics.

* :mod:`~sattn.presentation.plotting`: one figure style for the whole book, heatmaps, PNG export;
* :mod:`~sattn.presentation.widgets`: precomputed widgets for the static site, live widgets for a
  kernel;
* :mod:`~sattn.presentation.messages`: errors a chapter shows on purpose, printed as messages.

Chapters import every public name from :mod:`sattn` itself.
"""

from .._lazy import submodule_getattr

#: ``sattn.presentation.<module>`` after a plain ``import sattn``: imported on first use.
__getattr__ = submodule_getattr(__name__)

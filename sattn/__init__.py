"""sattn: the helper package of the book *The Expressive Power of Self-Attention*.

One subpackage per subject, imported in one direction only: argument validation and the result
protocol (:mod:`sattn.results`) at the bottom; then the attention matrices (:mod:`sattn.attention`,
row convention) and layers (:mod:`sattn.layers`, column convention); then the mathematics of
Part I (:mod:`sattn.patterns`) and of Part II (:mod:`sattn.universality`), which do not import each
other, beside the presentation helpers (:mod:`sattn.presentation`); then the experiments
(:mod:`sattn.experiments`) beside the constructions in finite precision (:mod:`sattn.precision`);
then the command line (``python -m sattn``). Every public function cites the equation or theorem it
implements and the chapter that explains it.

**The flat API and its rule.** Every name in ``sattn.__all__`` is importable as ``sattn.<name>``,
which is how the chapters use it. A name is *flat* when a chapter or a reader calls it or holds what
it returns: the book's functions, the classes that flat functions and methods return or take
(results, reports, models, records, formats), every exception and warning the package raises, and
the registries the chapters read (``SETUPS``, ``PROFILES``, ``LAWS``, ``FORMATS``, ``MODES``). A
name *stays in its module* when it is machinery rather than subject: the engine's tuning constants
and stages, the store, the cluster, the benchmark and the lab command, helpers that a flat function
calls for itself, and the pre-registered acceptance experiment, whose code the registration froze
and which the chapters reach as the module ``sattn.experiments.acceptance``. Each module lists its
flat names in ``__flat__`` and all its public names in ``__all__`` (the flat ones first);
``sattn.__all__`` is built from the ``__flat__`` lists below, so no name is written twice, and
``tests/package/test_layout.py`` checks every public name of every module against the rule.
"""

import importlib as _importlib

from ._version import __version__ as __version__

#: The modules whose ``__flat__`` lists make the flat API, in the order of the layers.
_ROOMS = tuple(_importlib.import_module(f"{__name__}.{_room}") for _room in (
    "errors", "results", "attention", "layers",
    "patterns.sparse", "patterns.criteria", "patterns.construction", "patterns.optimize",
    "patterns.supports",
    "universality.boltzmann", "universality.contextual", "universality.hardmax",
    "universality.rank_one", "universality.memorize", "universality.universal",
    "presentation.plotting", "presentation.widgets", "presentation.lab",
    "experiments.target", "experiments.engine", "experiments.setups", "experiments.store",
    "experiments.reference", "experiments.cluster", "experiments.protocol", "experiments.laws",
    "experiments.bench", "experiments.prediction.results", "experiments.prediction.row_model",
    "experiments.prediction.row_types", "experiments.prediction.dmin",
    "experiments.prediction.checks", "experiments.acceptance.design",
    "experiments.acceptance.analysis",
    "precision.formats", "precision.forward", "precision.thresholds", "frontier",
))

__all__ = [name for room in _ROOMS for name in room.__flat__]
globals().update({name: getattr(room, name) for room in _ROOMS for name in room.__flat__})

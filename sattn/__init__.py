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

**The naming rule for checks.** A function named ``check_*`` (or ``*_report``) *returns a report*:
an instance of :class:`sattn.Result` whose ``ok`` says whether the property holds and whose
``message`` names the first violation; it raises only on malformed input. A function named
``validate_*`` *raises on failure* (:class:`ValueError`, :class:`TypeError` or the subject's own
error, e.g. :class:`sattn.PatternError`) and returns nothing or what it validated (the cleaned
value, or the passing report). A report becomes an error with ``report.raise_if_failed()``, so
each ``validate_<property>`` beside a ``check_<property>`` is exactly that and takes the same
arguments. The one exception is :func:`sattn.check`, the chapters' assertion: it raises
:class:`sattn.ClaimFailed` when a claim a chapter states is false. The argument helpers of the
private ``sattn._validate`` keep their short ``check_int``-style names; the rule is about public
names. Report classes all derive from :class:`sattn.Result`; their suffix says what they hold:
``*Report`` (a property measured on given data), ``*Check`` (a model checked against
simulation), ``*Prediction`` (a prediction before measurement), ``Comparison`` (a prediction
against a measurement), ``*Outcome`` and ``*Result`` (one draw and one level of the engine), and
a few nouns of the subject (``Approximation``, ``WidthSearch``, ``NestedSupports``,
``OptimizedLogits``, ``LawJudgement``, and the acceptance analysis's ``Decision``,
``Calibration`` and ``BoxCoxProfile``); ``LawFit`` is a fit, not a verdict, and has no ``ok``.
``fit_law`` fits one of the named laws; ``fit_dmin_log`` fits ``d ~ a ln L + b`` to measured
minimal widths.

**Renamed names.** A renamed public function keeps its old name for one release: the old name is
in no ``__all__`` or ``__flat__`` list, is listed once in ``sattn/_deprecation.py`` (``RENAMED``;
the flat ones in ``sattn.DEPRECATED``), and resolves on attribute access with a
:class:`DeprecationWarning` naming the new function.
"""

import importlib as _importlib

from ._version import __version__ as __version__

#: The modules whose ``__flat__`` lists make the flat API, in the order of the layers.
_ROOMS = tuple(_importlib.import_module(f"{__name__}.{_room}") for _room in (
    "errors", "results", "rounding", "linalg", "attention", "layers",
    "patterns.sparse", "patterns.criteria", "patterns.construction", "patterns.optimize",
    "patterns.supports",
    "universality.boltzmann", "universality.contextual", "universality.hardmax",
    "universality.rank_one", "universality.memorize", "universality.universal",
    "presentation.plotting", "presentation.widgets", "presentation.messages", "presentation.lab",
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

from . import _deprecation as _deprecation  # noqa: E402

#: The flat old names that still resolve, with a :class:`DeprecationWarning`, for one release:
#: ``{old: new}``, both ``sattn.<name>`` (from ``sattn/_deprecation.py``'s ``RENAMED``).
DEPRECATED = {old: new for names in _deprecation.RENAMED.values() for old, new in names.items()
              if new in __all__}


def __getattr__(name):
    """``sattn.<old>`` for a name in ``DEPRECATED``: the new function, with a warning."""
    if name in DEPRECATED:
        room = next(m for m, names in _deprecation.RENAMED.items() if name in names)
        return _deprecation.resolve(room, name, shown=__name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

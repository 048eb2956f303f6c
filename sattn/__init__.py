"""sattn: the helper package of the book *The Expressive Power of Self-Attention*.

One subpackage per subject, imported in one direction only: argument validation and the result
protocol (:mod:`sattn.results`) at the bottom; then the attention matrices (:mod:`sattn.attention`,
row convention) and layers (:mod:`sattn.layers`, column convention); then the mathematics of
Part I (:mod:`sattn.patterns`) and of Part II (:mod:`sattn.universality`), which do not import each
other, beside the presentation helpers (:mod:`sattn.presentation`); then the d_min engine and
what the experiments compute (the lower modules of :mod:`sattn.experiments`) beside the
constructions in finite precision (:mod:`sattn.precision`); then the machinery that runs them
(:mod:`sattn.runs`: store, cluster, the one task loop, benchmark); then the protocols and the
science of the experiments (the rest of :mod:`sattn.experiments`) and the width x bits frontier
(:mod:`sattn.frontier`) beside the codes and bounds of the book's weights (:mod:`sattn.codes`); then the command line (``python -m sattn``). Every public function cites the equation or theorem it
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
flat names in ``__flat__`` and all its public names in ``__all__`` (the flat ones first); this
file imports the flat names explicitly, module by module, and lists them in ``__all__``, so an IDE
or a type checker sees every one; ``tests/package/test_layout.py`` checks that both equal the
union of the modules' ``__flat__`` lists, and every public name of every module against the rule.

**Imported when first used.** ``import sattn`` loads no module of the package but this one: the
explicit imports below sit under ``if TYPE_CHECKING:`` (read by type checkers, not run), and the
module's ``__getattr__`` imports a name's module on its first use, reading which module from those
same lines. So ``import sattn`` is fast, and matplotlib's pyplot, IPython and ipywidgets load only
when a plotting or widget function is used; ``sattn.<subpackage>`` (``sattn.experiments``, ...)
is imported on first use the same way, and so is ``sattn.__version__`` (reading the package
metadata takes about 0.1 s).

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

from __future__ import annotations

import ast as _ast
import importlib as _importlib
from typing import TYPE_CHECKING

from . import _deprecation as _deprecation
from ._lazy import submodule

if TYPE_CHECKING:      # the flat API, module by module (imported on first use: see __getattr__)
    from ._version import __version__ as __version__   # read from the package metadata (slow)
    from .errors import SizeTooLargeError
    from .results import ClaimFailed, Result, check
    from .rounding import (
        Certified, gamma, product_error_bound, certify, first_of_largest, below_bound,
        correctly_rounded, portable_exp, log_below
    )
    from .linalg import canonical_svd, ordered_matmul
    from .attention import attention_logits, usam, sam, self_attention, causal_mask, row_softmax
    from .layers import (
        AttentionHead, FeedForward, column_softmax, hardmax, multihead_attention, feed_forward,
        transformer_block
    )
    from .patterns.sparse import (
        PatternError, PatternReport, band_pattern, block_pattern, check_gamma_variation_bounded,
        check_k_nonzero_bounded, check_lower_triangular, check_right_stochastic,
        pattern_parameters, permutation_pattern, validate_gamma_variation_bounded,
        validate_k_nonzero_bounded, validate_lower_triangular, validate_right_stochastic,
        sample_sparse, strided_pattern
    )
    from .patterns.criteria import (
        ApproximationReport, check_approximation, check_approximation_explicit,
        check_attention_matrix, check_rows, merge_reports
    )
    from .patterns.construction import (
        Approximation, ConstructionFailed, Theorem1Constants, approximate, default_max_draws,
        draw_input, factorize, fixed_weights, logit_target, sample_stiefel, theorem1_bound,
        theorem1_constants, theorem1_crossover
    )
    from .patterns.optimize import (
        OptimizedLogits, WidthSearch, moment_curve_logits, optimize_logits, smallest_width
    )
    from .patterns.supports import (
        NestedSupports, enumerate_supports, nested_supports_example, regular_pattern,
        support_count, width_bits_lower_bound
    )
    from .universality.boltzmann import boltzmann, boltzmann_mp, boltzmann_average
    from .universality.contextual import (
        vocabulary, SeparationReport, tokenwise_separation, validate_separated, ContextualReport,
        contextual_mapping_report
    )
    from .universality.hardmax import (
        hardmax_counterexample, HardmaxReport, check_hardmax_counterexample
    )
    from .universality.rank_one import (
        ProjectionReport, projection_vector, Theorem2Constants, theorem2_constants,
        adaptive_lambda, RankOneContextualMapping, rank_one_contextual_mapping
    )
    from .universality.memorize import (
        validate_consistent_labels, interpolating_ffn, MemorizationReport, OneLayerTransformer,
        memorize, memorize_with_positions
    )
    from .universality.universal import (
        quantizer_ffn, TwoLayerModel, UniversalApproximationReport, two_layer_approximation
    )
    from .presentation.plotting import (
        apply_style, heatmap, subplots, figure_to_png, panel_figure, PanelFigure
    )
    from .presentation.widgets import (
        PrecomputedExplorer, LiveExplorer, precomputed_explorer, live_explorer, plain_text
    )
    from .presentation.messages import expected_error, ExpectedError
    from .experiments.target import draw_generator
    from .experiments.engine import FastEngine, DrawOutcome, LevelResult
    from .experiments.setups import PROFILES, SETUPS, ExperimentError, Task, make_tasks, describe_setup
    from .runs.store import StoreError, StoreWarning
    from .experiments.reference import reference_level
    from .experiments.protocol import fit_dmin_log, load_figure, reproduce, run_task
    from .experiments.laws import LAWS, LawFit, LawJudgement, fit_law, judge_laws
    from .experiments.prediction.results import (
        DrawPrediction, DminPrediction, ModelCheck, Comparison
    )
    from .experiments.prediction.row_types import (
        RowTypes, regular_row_types, stream_regular_blocks, row_types_from_blocks
    )
    from .experiments.prediction.dmin import (
        draw_success_probability, predict_dmin, predict_d50, sample_target, predict_setup
    )
    from .experiments.prediction.checks import (
        compare_measured, check_error_model, check_offsupport_max, check_row_dependence,
        check_success_probability, naive_dmin
    )
    from .precision.formats import (
        FORMATS, MODES, FloatFormat, float_format, round_to, FormatArithmetic
    )
    from .precision.forward import (
        FormatOverflow, attention_matrix_in, column_attention_in, feed_forward_in, model_in,
        round_model
    )
    from .precision.thresholds import (
        PrecisionReport, algorithm1_precision, algorithm1_bits_needed, hardmax_precision,
        hardmax_bits_needed, contextual_precision, contextual_bits_needed, memorization_precision,
        memorization_bits_needed, approximation_precision, smallest_bits, smallest_format
    )
    from .frontier import fixed_point_bits, float_format_bits, load_width_bits, round_fixed
    from .codes.bounds import (
        antichain_length, bilinear_bound, bilinear_min_bits, book_weights_bound,
        serving_obstruction
    )
    from .codes.inputs import (
        CodeInput, column_cycles, constant_weight_input, cycle_code_input, hash_code_input,
        sign_code_input
    )
    from .codes.checker import CodeReport, check_code_input
    from .codes.measure import load_width_codes

__all__ = [
    'SizeTooLargeError', 'ClaimFailed', 'Result', 'check', 'Certified', 'gamma',
    'product_error_bound', 'certify', 'first_of_largest', 'below_bound', 'correctly_rounded',
    'portable_exp', 'log_below', 'canonical_svd', 'ordered_matmul', 'attention_logits', 'usam',
    'sam', 'self_attention', 'causal_mask', 'row_softmax', 'AttentionHead', 'FeedForward',
    'column_softmax', 'hardmax', 'multihead_attention', 'feed_forward', 'transformer_block',
    'PatternError', 'PatternReport', 'band_pattern', 'block_pattern',
    'check_gamma_variation_bounded', 'check_k_nonzero_bounded', 'check_lower_triangular',
    'check_right_stochastic', 'pattern_parameters', 'permutation_pattern',
    'validate_gamma_variation_bounded', 'validate_k_nonzero_bounded', 'validate_lower_triangular',
    'validate_right_stochastic', 'sample_sparse', 'strided_pattern', 'ApproximationReport',
    'check_approximation', 'check_approximation_explicit', 'check_attention_matrix', 'check_rows',
    'merge_reports', 'Approximation', 'ConstructionFailed', 'Theorem1Constants', 'approximate',
    'default_max_draws', 'draw_input', 'factorize', 'fixed_weights', 'logit_target',
    'sample_stiefel', 'theorem1_bound', 'theorem1_constants', 'theorem1_crossover',
    'OptimizedLogits', 'WidthSearch', 'moment_curve_logits', 'optimize_logits', 'smallest_width',
    'NestedSupports', 'enumerate_supports', 'nested_supports_example', 'regular_pattern',
    'support_count', 'width_bits_lower_bound', 'boltzmann', 'boltzmann_mp', 'boltzmann_average',
    'vocabulary', 'SeparationReport', 'tokenwise_separation', 'validate_separated',
    'ContextualReport', 'contextual_mapping_report', 'hardmax_counterexample', 'HardmaxReport',
    'check_hardmax_counterexample', 'ProjectionReport', 'projection_vector', 'Theorem2Constants',
    'theorem2_constants', 'adaptive_lambda', 'RankOneContextualMapping',
    'rank_one_contextual_mapping', 'validate_consistent_labels', 'interpolating_ffn',
    'MemorizationReport', 'OneLayerTransformer', 'memorize', 'memorize_with_positions',
    'quantizer_ffn', 'TwoLayerModel', 'UniversalApproximationReport', 'two_layer_approximation',
    'apply_style', 'heatmap', 'subplots', 'figure_to_png', 'panel_figure', 'PanelFigure',
    'PrecomputedExplorer', 'LiveExplorer', 'precomputed_explorer', 'live_explorer', 'plain_text',
    'expected_error', 'ExpectedError', 'draw_generator', 'FastEngine', 'DrawOutcome',
    'LevelResult', 'PROFILES', 'SETUPS', 'ExperimentError', 'Task', 'make_tasks', 'describe_setup', 'StoreError',
    'StoreWarning', 'reference_level', 'fit_dmin_log', 'load_figure', 'reproduce', 'run_task',
    'LAWS', 'LawFit', 'LawJudgement', 'fit_law', 'judge_laws', 'DrawPrediction', 'DminPrediction',
    'ModelCheck', 'Comparison', 'RowTypes', 'regular_row_types', 'stream_regular_blocks',
    'row_types_from_blocks', 'draw_success_probability', 'predict_dmin', 'predict_d50',
    'sample_target', 'predict_setup', 'compare_measured', 'check_error_model',
    'check_offsupport_max', 'check_row_dependence', 'check_success_probability', 'naive_dmin',
    'FORMATS', 'MODES', 'FloatFormat', 'float_format', 'round_to', 'FormatArithmetic',
    'FormatOverflow', 'attention_matrix_in', 'column_attention_in', 'feed_forward_in', 'model_in',
    'round_model', 'PrecisionReport', 'algorithm1_precision', 'algorithm1_bits_needed',
    'hardmax_precision', 'hardmax_bits_needed', 'contextual_precision', 'contextual_bits_needed',
    'memorization_precision', 'memorization_bits_needed', 'approximation_precision',
    'smallest_bits', 'smallest_format', 'fixed_point_bits', 'float_format_bits', 'load_width_bits',
    'round_fixed', 'antichain_length', 'bilinear_bound', 'bilinear_min_bits',
    'book_weights_bound', 'serving_obstruction', 'CodeInput', 'column_cycles',
    'constant_weight_input', 'cycle_code_input', 'hash_code_input', 'sign_code_input',
    'CodeReport', 'check_code_input', 'load_width_codes'
]


def _flat_modules() -> dict[str, str]:
    """``{flat name: its module}``, read from the ``if TYPE_CHECKING:`` imports of this file."""
    with open(__file__, encoding="utf-8") as f:
        tree = _ast.parse(f.read())
    block, = [node for node in tree.body if isinstance(node, _ast.If)
              and isinstance(node.test, _ast.Name) and node.test.id == "TYPE_CHECKING"]
    return {alias.name: f"{__name__}.{node.module}" for node in block.body
            for alias in node.names if alias.name != "__version__"}


#: Where each flat name is defined: ``{name: module}``, in the order of ``__all__``.
_FLAT_MODULES = _flat_modules()
#: The subpackages and top-level modules of the flat API, reachable as ``sattn.<name>``.
_SUBMODULES = {module.split(".")[1] for module in _FLAT_MODULES.values()}

#: The flat old names that still resolve, with a :class:`DeprecationWarning`, for one release:
#: ``{old: new}``, both ``sattn.<name>`` (from ``sattn/_deprecation.py``'s ``RENAMED``).
DEPRECATED = {old: new for names in _deprecation.RENAMED.values() for old, new in names.items()
              if new in _FLAT_MODULES}


def __getattr__(name: str):
    """``sattn.<name>``, imported on first use: a flat name from its module, a subpackage, or an
    old name in ``DEPRECATED`` (the new function, with a warning)."""
    if name == "__version__":                # reading the package metadata takes ~0.1 s
        value = _importlib.import_module(f"{__name__}._version").__version__
        globals()[name] = value
        return value
    if name in _FLAT_MODULES:
        value = getattr(_importlib.import_module(_FLAT_MODULES[name]), name)
        globals()[name] = value              # later look-ups skip this function
        return value
    if name in _SUBMODULES:
        return submodule(__name__, name)
    if name in DEPRECATED:
        room = next(m for m, names in _deprecation.RENAMED.items() if name in names)
        _importlib.import_module(room)
        return _deprecation.resolve(room, name, shown=__name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *__all__, *_SUBMODULES})

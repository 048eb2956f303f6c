"""sattn: the helper package of the book *The Expressive Power of Self-Attention*.

One subpackage per subject, imported in one direction only: argument validation and the result
protocol (:mod:`sattn.results`) at the bottom; then the attention matrices (:mod:`sattn.attention`,
row convention) and layers (:mod:`sattn.layers`, column convention); then the mathematics of
Part I (:mod:`sattn.patterns`) and of Part II (:mod:`sattn.universality`), which do not import each
other, beside the presentation helpers (:mod:`sattn.presentation`); then the experiments
(:mod:`sattn.experiments`); then the command line (``python -m sattn``). Every public function
cites the equation or theorem it implements and the chapter that explains it.

The chapters use the flat API: every name in ``sattn.__all__`` is importable as ``sattn.<name>``.
"""

from ._version import __version__ as __version__
from .results import ClaimFailed, Result, check
from .attention import attention_logits, causal_mask, row_softmax, sam, self_attention, usam
from .layers import (
    AttentionHead,
    FeedForward,
    column_softmax,
    feed_forward,
    hardmax,
    multihead_attention,
    transformer_block,
)
from .patterns.sparse import (
    PatternError,
    PatternReport,
    band_pattern,
    block_pattern,
    check_gamma_variation_bounded,
    check_k_nonzero_bounded,
    check_lower_triangular,
    check_right_stochastic,
    pattern_parameters,
    permutation_pattern,
    require_gamma_variation_bounded,
    require_k_nonzero_bounded,
    require_lower_triangular,
    require_right_stochastic,
    sample_sparse,
    strided_pattern,
)
from .patterns.criteria import (
    ApproximationReport,
    check_approximation,
    check_approximation_explicit,
    check_rows,
    merge_reports,
)
from .patterns.construction import (
    Approximation,
    ConstructionFailed,
    Theorem1Constants,
    approximate,
    default_max_draws,
    draw_input,
    factorize,
    fixed_weights,
    logit_target,
    sample_stiefel,
    theorem1_bound,
    theorem1_constants,
)
from .patterns.optimize import (
    OptimizedLogits,
    WidthSearch,
    moment_curve_logits,
    optimize_logits,
    smallest_width,
)
from .universality.boltzmann import boltzmann, boltzmann_average, boltzmann_mp
from .universality.contextual import (
    ContextualReport,
    SeparationReport,
    check_separated,
    contextual_mapping_report,
    tokenwise_separation,
    vocabulary,
)
from .universality.hardmax import HardmaxReport, check_hardmax_counterexample, hardmax_counterexample
from .universality.rank_one import (
    ProjectionReport,
    RankOneContextualMapping,
    Theorem2Constants,
    adaptive_lambda,
    projection_vector,
    rank_one_contextual_mapping,
    theorem2_constants,
)
from .universality.memorize import (
    MemorizationReport,
    OneLayerTransformer,
    check_consistent_labels,
    interpolating_ffn,
    memorize,
    memorize_with_positions,
)
from .universality.universal import (
    TwoLayerModel,
    UniversalApproximationReport,
    quantizer_ffn,
    two_layer_approximation,
)
from .presentation.plotting import apply_style, figure_to_png, heatmap, subplots
from .presentation.widgets import live_explorer, precomputed_explorer
from .experiments.target import draw_generator
from .experiments.engine import FastEngine
from .experiments.setups import PROFILES, SETUPS, ExperimentError, make_tasks
from .experiments.reference import reference_level
from .experiments.protocol import fit_log, load_figure, reproduce, run_task

__all__ = [
    "Approximation",
    "ConstructionFailed",
    "Theorem1Constants",
    "approximate",
    "default_max_draws",
    "draw_input",
    "factorize",
    "fixed_weights",
    "logit_target",
    "sample_stiefel",
    "theorem1_bound",
    "theorem1_constants",
    "ApproximationReport",
    "check_approximation",
    "check_approximation_explicit",
    "check_rows",
    "merge_reports",
    "OptimizedLogits",
    "WidthSearch",
    "moment_curve_logits",
    "optimize_logits",
    "smallest_width",
    "PatternError",
    "PatternReport",
    "band_pattern",
    "block_pattern",
    "check_gamma_variation_bounded",
    "check_k_nonzero_bounded",
    "check_lower_triangular",
    "check_right_stochastic",
    "pattern_parameters",
    "permutation_pattern",
    "require_gamma_variation_bounded",
    "require_k_nonzero_bounded",
    "require_lower_triangular",
    "require_right_stochastic",
    "sample_sparse",
    "strided_pattern",
    "attention_logits",
    "causal_mask",
    "row_softmax",
    "sam",
    "self_attention",
    "usam",
    "AttentionHead",
    "FeedForward",
    "column_softmax",
    "feed_forward",
    "hardmax",
    "multihead_attention",
    "transformer_block",
    "ContextualReport",
    "HardmaxReport",
    "ProjectionReport",
    "RankOneContextualMapping",
    "SeparationReport",
    "Theorem2Constants",
    "adaptive_lambda",
    "boltzmann",
    "boltzmann_average",
    "boltzmann_mp",
    "check_hardmax_counterexample",
    "check_separated",
    "contextual_mapping_report",
    "hardmax_counterexample",
    "projection_vector",
    "rank_one_contextual_mapping",
    "theorem2_constants",
    "tokenwise_separation",
    "vocabulary",
    "MemorizationReport",
    "OneLayerTransformer",
    "TwoLayerModel",
    "UniversalApproximationReport",
    "check_consistent_labels",
    "interpolating_ffn",
    "memorize",
    "memorize_with_positions",
    "quantizer_ffn",
    "two_layer_approximation",
    "ClaimFailed",
    "Result",
    "check",
    "apply_style",
    "figure_to_png",
    "heatmap",
    "subplots",
    "live_explorer",
    "precomputed_explorer",
    "FastEngine",
    "draw_generator",
    "PROFILES",
    "SETUPS",
    "ExperimentError",
    "fit_log",
    "load_figure",
    "make_tasks",
    "reference_level",
    "reproduce",
    "run_task",
]

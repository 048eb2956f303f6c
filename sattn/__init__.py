"""sattn: the helper package of the book *The Expressive Power of Self-Attention*.

Each module holds one part of the book's mathematics; every public function cites the equation or
theorem it implements and the chapter that explains it.
"""

from .attention import attention_logits, causal_mask, row_softmax, sam, self_attention, usam
from .construction import (
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
from .criteria import (
    ApproximationReport,
    check_approximation,
    check_approximation_explicit,
    check_rows,
    merge_reports,
)
from .sparse import (
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

__version__ = "0.1.0"

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
]

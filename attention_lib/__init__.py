"""attention_lib: the NumPy library behind the scaled dot-product attention notebooks.

One idea per module:

* :mod:`attention_lib.attention` - forward and backward pass (chapter 19.1, 19.3)
* :mod:`attention_lib.masks` - causal and padding masks (19.2)
* :mod:`attention_lib.variance` - why divide by sqrt(d_k) (19.2)
* :mod:`attention_lib.gradcheck` - finite-difference gradient checks
"""

from .attention import (
    AttentionCache,
    attention_backward,
    attention_forward,
    attention_scores,
    masked_softmax,
    softmax_backward,
)
from .gradcheck import (
    GradCheckReport,
    check_attention_gradients,
    gradient_check,
    numerical_gradient,
    relative_error,
)
from .masks import causal_mask, combine_masks, padding_mask, valid_from_lengths, validate_mask
from .variance import (
    SaturationStats,
    dot_product_variance,
    random_scores,
    saturation_stats,
    softmax_entropy,
    softmax_jacobian_norm,
)

__all__ = [
    "AttentionCache",
    "GradCheckReport",
    "SaturationStats",
    "attention_backward",
    "attention_forward",
    "attention_scores",
    "causal_mask",
    "check_attention_gradients",
    "combine_masks",
    "dot_product_variance",
    "gradient_check",
    "masked_softmax",
    "numerical_gradient",
    "padding_mask",
    "random_scores",
    "relative_error",
    "saturation_stats",
    "softmax_backward",
    "softmax_entropy",
    "softmax_jacobian_norm",
    "valid_from_lengths",
    "validate_mask",
]

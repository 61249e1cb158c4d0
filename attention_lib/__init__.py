"""attention_lib: the NumPy library behind the scaled dot-product attention notebooks.

One idea per module:

* :mod:`attention_lib.attention` - forward and backward pass (chapter 19.1, 19.3), and
  :func:`attention_path`, which picks the readable or the fast path for a block of code
* :mod:`attention_lib.masks` - causal and padding masks (19.2)
* :mod:`attention_lib.variance` - why divide by sqrt(d_k) (19.2)
* :mod:`attention_lib.gradcheck` - finite-difference gradient checks
* :mod:`attention_lib.exercises` - checkers for exercises 19.1-19.4 that name the mistake
* :mod:`attention_lib.streaming` - the same attention in blocks with an online softmax,
  without the T x T weights (FlashAttention's idea; the chapter's "In practice"), and
  one row's online softmax traced block by block
* :mod:`attention_lib.tiny_layer`, :mod:`attention_lib.walkthrough` - a single attention
  head trained with the library's backward pass (notebook 08), and the board
  walkthrough's step-by-step numbers (notebook 06)
* :mod:`attention_lib.plots` - every figure of the series, one style, a board style
* :mod:`attention_lib.widgets` - the interactive explorers (one module each) and their shell
* :mod:`attention_lib.source` - :func:`show_source`, a library function's code on the
  notebook page (how the notebooks show the chapter's listings)
* :mod:`attention_lib.pitfalls` - deliberately WRONG variants, each documented as wrong
  (import them as ``from attention_lib import pitfalls``; never re-exported here)

``plots``, ``widgets`` and ``pitfalls`` load on first use, so ``import attention_lib``
stays light (no matplotlib or ipywidgets until a notebook draws). For the same
reason ``__all__`` leaves them out: ``from attention_lib import *`` brings in the
computations only; write ``from attention_lib import plots`` to draw.
"""

import importlib

from .attention import (
    AttentionCache,
    attention_backward,
    attention_forward,
    attention_path,
    attention_scores,
    masked_softmax,
    softmax_backward,
)
from .exercises import (
    ExerciseReport,
    Finding,
    check_exercise_19_1,
    check_exercise_19_2,
    check_exercise_19_3,
    check_exercise_19_4,
    check_exercise_19_4c,
)
from .gradcheck import (
    GradCheckReport,
    check_attention_gradients,
    gradient_check,
    numerical_gradient,
    relative_error,
)
from .masks import (
    causal_mask,
    combine_masks,
    document_ids,
    packed_causal_mask,
    padding_mask,
    valid_from_lengths,
    validate_mask,
)
from .source import show_source
from .streaming import (
    OnlineSoftmaxTrace,
    StreamingCache,
    online_softmax_trace,
    streaming_attention_backward,
    streaming_attention_forward,
)
from .variance import (
    SaturationStats,
    dot_product_variance,
    random_scores,
    saturation_stats,
    softmax_entropy,
    softmax_jacobian_norm,
    variance_standard_error,
)

_LAZY_SUBMODULES = ("pitfalls", "plots", "widgets")


def __getattr__(name):
    # PEP 562: ``attention_lib.plots`` imports the submodule on first access.
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AttentionCache",
    "ExerciseReport",
    "Finding",
    "GradCheckReport",
    "OnlineSoftmaxTrace",
    "SaturationStats",
    "StreamingCache",
    "attention_backward",
    "attention_forward",
    "attention_path",
    "attention_scores",
    "causal_mask",
    "check_attention_gradients",
    "check_exercise_19_1",
    "check_exercise_19_2",
    "check_exercise_19_3",
    "check_exercise_19_4",
    "check_exercise_19_4c",
    "combine_masks",
    "document_ids",
    "dot_product_variance",
    "gradient_check",
    "masked_softmax",
    "numerical_gradient",
    "online_softmax_trace",
    "packed_causal_mask",
    "padding_mask",
    "random_scores",
    "relative_error",
    "saturation_stats",
    "show_source",
    "softmax_backward",
    "softmax_entropy",
    "softmax_jacobian_norm",
    "streaming_attention_backward",
    "streaming_attention_forward",
    "valid_from_lengths",
    "validate_mask",
    "variance_standard_error",
]

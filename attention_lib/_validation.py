"""Input checks shared by the public functions: the library's internal checks.

Every public function calls these first, so a mistake is reported where the
user made it, in words, instead of as a broadcasting traceback from deep inside
NumPy or as a NaN that spreads silently. The module is private, but its names
are the library's shared checks: any module of the package (the exercise
checkers included) may import them, and they keep their names and messages.
"""

from __future__ import annotations

import numbers

import numpy as np

from ._contract import AttentionCache, output_shape_of, weights_shape_of

_SUPPORTED_FLOATS = (np.float32, np.float64)


def as_float_array(value, name, *, min_ndim=2, layout="(..., T, d)", check_finite=True):
    """Return ``value`` as a float32/float64 array, or raise a clear error.

    Integers and booleans are promoted to float64 (what ``np.mean`` would do);
    float16, complex and object arrays are refused: float16 overflows at 65504
    and cannot hold a softmax's -inf-free shifted exponentials reliably.
    """
    array = np.asarray(value)
    kind = array.dtype.kind
    if kind in "iu":
        array = array.astype(np.float64)
    elif kind == "f":
        if array.dtype == np.float16:
            raise TypeError(
                f"{name} has dtype float16, which attention_lib does not support "
                "(it overflows at 65504 and loses the small weights); "
                f"convert it with {name}.astype(np.float32)."
            )
        if array.dtype.type not in _SUPPORTED_FLOATS:
            raise TypeError(
                f"{name} has dtype {array.dtype}; expected float32 or float64 "
                f"(convert it with {name}.astype(np.float64))."
            )
    elif kind == "c":
        raise TypeError(
            f"{name} has complex dtype {array.dtype}; attention needs real numbers. "
            "Pass the real part explicitly if that is what you mean."
        )
    else:
        raise TypeError(
            f"{name} must be a real numeric array; got dtype {array.dtype} "
            f"(from {type(value).__name__})."
        )
    if array.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimension(s), laid out as {layout}; "
            f"got shape {array.shape}. Add a length axis, e.g. {name}[None, :]."
        )
    if check_finite:
        require_finite(array, name)
    return array


def require_finite(array, name):
    """Raise ValueError if ``array`` holds NaN or +-inf, saying where."""
    finite = np.isfinite(array)
    if not finite.all():
        bad = np.argwhere(~finite)
        first = tuple(int(i) for i in bad[0])
        raise ValueError(
            f"{name} contains {len(bad)} non-finite entries (NaN or inf), the first at "
            f"index {first} with value {array[first]}. Attention needs finite inputs; "
            "to exclude positions, pass a boolean mask instead."
        )


def require_bool_mask(mask, name="mask"):
    """Return ``mask`` as a boolean array, refusing 0/1 and additive float masks."""
    array = np.asarray(mask)
    if array.dtype != np.bool_:
        raise TypeError(
            f"{name} must be a boolean array with True where a query may read a key; "
            f"got dtype {array.dtype}. A 0/1 mask converts with {name}.astype(bool); "
            f"an additive float mask (0 = keep, -inf = block) converts with {name} == 0."
        )
    return array


def broadcast_mask(mask, weights_shape, name="mask"):
    """Check that a boolean mask broadcasts to ``weights_shape`` without enlarging it."""
    mask = require_bool_mask(mask, name)
    weights_shape = tuple(weights_shape)
    try:
        combined = np.broadcast_shapes(mask.shape, weights_shape)
    except ValueError:
        raise ValueError(
            f"{name} of shape {mask.shape} does not broadcast to weights of shape "
            f"{weights_shape}; expected a shape that lines up with (..., T_q, T_k) from "
            "the right, e.g. (T_q, T_k) for a causal mask or (B, 1, T_k) for padding."
        ) from None
    if combined != weights_shape:
        raise ValueError(
            f"{name} of shape {mask.shape} would enlarge weights of shape {weights_shape} "
            f"to {combined}; a mask may only broadcast, not add axes. For (B, H, T, d) "
            "inputs a padding mask must be (B, 1, 1, T_k): see padding_mask(valid, heads=True)."
        )
    return mask


def require_whole_number(value, name, *, minimum=1, maximum=None, why=""):
    """Return ``value`` as an int if it is a whole number >= ``minimum`` (and <= ``maximum``).

    ``why`` ends the message for a value above ``maximum``: what sets that bound.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be a whole number (int); got {value!r} of type {type(value).__name__}."
        )
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}; got {value}.")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be between {minimum} and {maximum}{why}; got {value}.")
    return int(value)


def check_qkv(Q, K, V):
    """Q, K and V as float arrays of one dtype whose shapes fit together, or a clear error."""
    Q = as_float_array(Q, "Q", layout="(..., T_q, d_k)", check_finite=False)
    K = as_float_array(K, "K", layout="(..., T_k, d_k)", check_finite=False)
    V = as_float_array(V, "V", layout="(..., T_k, d_v)", check_finite=False)
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(
            "Q and K must share their last axis d_k (each score is a dot product of a "
            f"query with a key): got Q of shape {Q.shape} (d_k={Q.shape[-1]}) and K of "
            f"shape {K.shape} (d_k={K.shape[-1]})."
        )
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(
            "K and V must have the same length T_k (one value per key, second-to-last "
            f"axis): got K of shape {K.shape} and V of shape {V.shape}."
        )
    if K.shape[-1] == 0:
        raise ValueError(
            f"Q and K have width d_k = 0 (Q of shape {Q.shape}, K of shape {K.shape}): a "
            "score is a dot product over the last axis, so it needs d_k >= 1 entries."
        )
    if K.shape[-2] == 0:
        raise ValueError(
            f"K has no keys (T_k = 0): got K of shape {K.shape} and V of shape {V.shape}. "
            "Each query's weights must share 1 over at least one key; to let a query read "
            "nothing, keep the keys and block its row with a boolean mask."
        )
    try:
        np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the leading (batch/head) axes of Q {Q.shape[:-2]}, K {K.shape[:-2]} and "
            f"V {V.shape[:-2]} do not broadcast together; expected equal axes or 1s."
        ) from None
    dtype = np.result_type(Q, K, V)
    for name, array in (("Q", Q), ("K", K), ("V", V)):
        require_finite(array, name)
    return Q.astype(dtype, copy=False), K.astype(dtype, copy=False), V.astype(dtype, copy=False)


def check_attention_inputs(Q, K, V, mask):
    """:func:`check_qkv`, and ``mask`` (or None) checked against the weights' shape."""
    Q, K, V = check_qkv(Q, K, V)
    if mask is not None:
        mask = broadcast_mask(mask, weights_shape_of(Q, K))
    return Q, K, V, mask


def check_grad_output(grad_output, cache):
    """``grad_output`` in the dtype of the forward pass that made ``cache``, or a clear error.

    ``cache`` must be the :class:`AttentionCache` of ``attention_forward``, its
    arrays still belonging together.
    """
    if isinstance(cache, np.ndarray):
        raise TypeError(
            "cache must be the AttentionCache that attention_forward(Q, K, V, mask, "
            f"return_cache=True) returns as its second value; got a NumPy array of shape "
            f"{cache.shape}, which holds neither the inputs nor the weights the gradients "
            "need. Keep both results, output, cache = attention_forward(Q, K, V, mask, "
            "return_cache=True), and pass cache."
        )
    if not isinstance(cache, AttentionCache):
        raise TypeError(
            "cache must be the AttentionCache returned by "
            "attention_forward(Q, K, V, mask, return_cache=True); got "
            f"{type(cache).__name__}. A hand-made tuple cannot be checked for consistency."
        )
    expected_weights = weights_shape_of(cache.Q, cache.K)
    expected_output = output_shape_of(cache.Q, cache.K, cache.V)
    if cache.weights.shape != expected_weights or cache.output.shape != expected_output:
        raise ValueError(
            f"cache is inconsistent: weights {cache.weights.shape} and output "
            f"{cache.output.shape} do not belong to Q {cache.Q.shape}, K {cache.K.shape}, "
            f"V {cache.V.shape} (expected weights {expected_weights} and output "
            f"{expected_output}); pass the cache exactly as attention_forward returned it."
        )
    return check_grad_output_like(grad_output, cache.output)


def check_grad_output_like(grad_output, output):
    """``grad_output`` as a float array of ``output``'s shape and dtype, or a clear error."""
    grad_output = as_float_array(grad_output, "grad_output", layout="(..., T_q, d_v)")
    if grad_output.shape != output.shape:
        raise ValueError(
            f"grad_output must have the shape of the forward output {output.shape}; "
            f"got {grad_output.shape}."
        )
    return grad_output.astype(output.dtype, copy=False)

"""Input checks shared by the public functions.

Every public function calls these first, so a mistake is reported where the
user made it, in words, instead of as a broadcasting traceback from deep inside
NumPy or as a NaN that spreads silently.
"""

from __future__ import annotations

import numbers

import numpy as np

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


def require_whole_number(value, name, *, minimum=1):
    """Return ``value`` as an int if it is a whole number >= ``minimum``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be a whole number (int); got {value!r} of type {type(value).__name__}."
        )
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}; got {value}.")
    return int(value)

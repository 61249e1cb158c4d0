"""Exercise 19.3 (b): softmax_row_backward(weights, grad_weights), as students write it."""

import math

import numpy as np

try:
    from . import reference as ref
    from .common import Attempt
except ImportError:
    import reference as ref
    from common import Attempt

F64, F32 = np.float64, np.float32


# =================================================================================== right


def srb_keepdims(weights, grad_weights):
    """The formula with keepdims."""
    row = np.sum(weights * grad_weights, axis=-1, keepdims=True)
    return weights * (grad_weights - row)


def srb_einsum(weights, grad_weights):
    """einsum for the row dot product, then put the axis back."""
    row = np.einsum("...t,...t->...", weights, grad_weights)
    return weights * (grad_weights - row[..., None])


def srb_jacobian(weights, grad_weights):
    """Explicit Jacobian diag(a) - a a^T for every row, then J^T g."""
    a = weights
    T = a.shape[-1]
    J = a[..., :, None] * np.eye(T, dtype=a.dtype) - a[..., :, None] * a[..., None, :]
    return np.einsum("...ji,...j->...i", J, grad_weights)


def srb_rows_loop(weights, grad_weights):
    """Flatten the leading axes, loop over rows, reshape back."""
    T = weights.shape[-1]
    a = weights.reshape(-1, T)
    g = grad_weights.reshape(-1, T)
    out = np.empty_like(a)
    for r in range(a.shape[0]):
        out[r] = a[r] * (g[r] - np.dot(a[r], g[r]))
    return out.reshape(weights.shape)


def srb_ndindex(weights, grad_weights):
    """Loop over every leading index with np.ndindex, math.fsum for the row dot."""
    out = np.zeros(weights.shape)  # float64 buffer: float32 input comes back float64 (noted)
    for idx in np.ndindex(weights.shape[:-1]):
        a = weights[idx]
        g = grad_weights[idx]
        dot = math.fsum(float(x) * float(y) for x, y in zip(a, g))
        out[idx] = [ai * (gi - dot) for ai, gi in zip(a.tolist(), g.tolist())]
    return out


def srb_distributed(weights, grad_weights):
    """a*g - a*(a.g), the product distributed."""
    ag = weights * grad_weights
    return ag - weights * ag.sum(axis=-1, keepdims=True)


def srb_matmul_dot(weights, grad_weights):
    """Row dot as a (..., 1, T) @ (..., T, 1) matmul."""
    dot = grad_weights[..., None, :] @ weights[..., :, None]
    return weights * (grad_weights - dot[..., 0])


def srb_float32_everywhere(weights, grad_weights):
    """Works in float32 to match the model; float64 input answered in float32 (passes with a note)."""
    a = weights.astype(np.float32)
    g = grad_weights.astype(np.float32)
    return a * (g - (a * g).sum(-1, keepdims=True))


def srb_vecdot(weights, grad_weights):
    """NumPy 2's vecdot along the last axis."""
    return weights * (grad_weights - np.expand_dims(np.vecdot(weights, grad_weights), -1))


def srb_float64_scalar(weights, grad_weights):
    """Formula with an np.float64 one in it: float32 input comes back float64 (passes with a note)."""
    one = np.float64(1.0)
    row = np.sum(weights * grad_weights, axis=-1, keepdims=True)
    return one * weights * (grad_weights - row)


# =================================================================================== wrong


def srb_sign(weights, grad_weights):
    row = np.sum(weights * grad_weights, axis=-1, keepdims=True)
    return weights * (grad_weights + row)


def srb_axis0(weights, grad_weights):
    row = np.sum(weights * grad_weights, axis=0, keepdims=True)
    return weights * (grad_weights - row)


def srb_no_keepdims(weights, grad_weights):
    row = np.sum(weights * grad_weights, axis=-1)
    return weights * (grad_weights - row)


def srb_missing_a(weights, grad_weights):
    row = np.sum(weights * grad_weights, axis=-1, keepdims=True)
    return grad_weights - row


def srb_missing_second_a(weights, grad_weights):
    row = np.sum(weights * grad_weights, axis=-1, keepdims=True)
    return weights * grad_weights - row


def srb_mean(weights, grad_weights):
    row = np.mean(weights * grad_weights, axis=-1, keepdims=True)
    return weights * (grad_weights - row)


def srb_global_sum(weights, grad_weights):
    row = np.sum(weights * grad_weights)
    return weights * (grad_weights - row)


def srb_np_dot(weights, grad_weights):
    return weights * (grad_weights - np.dot(grad_weights, weights))


def srb_jacobian_1d(weights, grad_weights):
    J = np.diag(weights) - np.outer(weights, weights)
    return J @ grad_weights


def srb_reshape_first_axis(weights, grad_weights):
    n = weights.shape[0]
    a = weights.reshape(-1, n)
    g = grad_weights.reshape(-1, n)
    out = a * (g - np.sum(a * g, axis=1, keepdims=True))
    return out.reshape(weights.shape)


def srb_first_axis_loop(weights, grad_weights):
    out = np.zeros_like(weights)
    for i in range(weights.shape[0]):
        out[i] = weights[i] * (grad_weights[i] - np.dot(weights[i], grad_weights[i]))
    return out


def srb_inplace_grad(weights, grad_weights):
    grad_weights -= np.sum(weights * grad_weights, axis=-1, keepdims=True)
    return weights * grad_weights


def srb_inplace_weights(weights, grad_weights):
    row = np.sum(weights * grad_weights, axis=-1, keepdims=True)
    weights *= grad_weights - row
    return weights


def srb_atleast_2d(weights, grad_weights):
    a = np.atleast_2d(weights)
    g = np.atleast_2d(grad_weights)
    return a * (g - np.sum(a * g, axis=1, keepdims=True))


def srb_clipped(weights, grad_weights):
    a = np.clip(weights, 1e-12, 1.0)  # "avoid zero weights"
    return a * (grad_weights - np.sum(a * grad_weights, axis=-1, keepdims=True))


def srb_sum_of_grads(weights, grad_weights):
    return weights * (grad_weights - np.sum(grad_weights, axis=-1, keepdims=True))


def srb_diagonal_only(weights, grad_weights):
    return weights * (1 - weights) * grad_weights  # d a_i / d s_i only


def srb_inner_instead_of_outer(weights, grad_weights):
    J = np.diag(weights) - np.dot(weights, weights)  # a . a, a number, not a a^T
    return J @ grad_weights


def srb_squeeze(weights, grad_weights):
    a = np.squeeze(weights)
    g = np.squeeze(grad_weights)
    return a * (g - np.sum(a * g, axis=-1, keepdims=True))


def srb_axis1(weights, grad_weights):
    return weights * (grad_weights - (grad_weights * weights).sum(axis=1, keepdims=True))


def srb_diag_matmul(weights, grad_weights):
    dots = np.diag(grad_weights @ weights.T)[:, None]
    return weights * (grad_weights - dots)


def srb_renormalise_axis0(weights, grad_weights):
    a = weights / weights.sum(axis=0)  # make sure the weights sum to one
    return a * (grad_weights - np.sum(a * grad_weights, axis=-1, keepdims=True))


def srb_threshold(weights, grad_weights):
    out = weights * (grad_weights - np.sum(weights * grad_weights, axis=-1, keepdims=True))
    return np.where(weights > 0.01, out, 0.0)  # zero the masked (tiny) keys


def srb_negated(weights, grad_weights):
    row = np.sum(weights * grad_weights, axis=-1, keepdims=True)
    return -weights * (grad_weights - row)  # "the gradient points downhill"


def srb_roles_swapped(weights, grad_weights):
    row = np.sum(weights * grad_weights, axis=-1, keepdims=True)
    return grad_weights * (weights - row)


def srb_view_inplace(weights, grad_weights):
    T = weights.shape[-1]
    g = grad_weights.reshape(-1, T)  # a view of the caller's array
    a = weights.reshape(-1, T)
    g -= np.sum(a * g, axis=1, keepdims=True)
    return (a * g).reshape(weights.shape)


def srb_out_param(weights, grad_weights):
    row = np.sum(weights * grad_weights, axis=-1, keepdims=True)
    np.subtract(grad_weights, row, out=grad_weights)  # "no temporary"
    return np.multiply(weights, grad_weights)


def srb_half_precision(weights, grad_weights):
    a = np.asarray(weights, dtype=np.float16)  # half precision, as on a GPU
    g = np.asarray(grad_weights, dtype=np.float16)
    return (a * (g - np.sum(a * g, axis=-1, keepdims=True))).astype(weights.dtype)


# =================================================================================== witnesses


def _w(f, *shapes):
    return lambda: ref.witness_19_3(f, list(shapes))


ATTEMPTS = [
    Attempt("19.3-001", "19.3", "right", "The formula a*(g - sum(a*g, -1, keepdims=True)).", srb_keepdims),
    Attempt("19.3-002", "19.3", "right", "einsum '...t,...t->...' for the row dot, axis restored with [..., None].",
            srb_einsum),
    Attempt("19.3-003", "19.3", "right",
            "Builds the full Jacobian diag(a) - a a^T per row with broadcasting and applies J^T g by einsum.",
            srb_jacobian),
    Attempt("19.3-004", "19.3", "right", "Reshapes to (rows, T), loops over rows with np.dot, reshapes back.",
            srb_rows_loop),
    Attempt("19.3-005", "19.3", "right",
            "Loops with np.ndindex and math.fsum into a float64 buffer (float32 input answered in float64: a note).",
            srb_ndindex),
    Attempt("19.3-006", "19.3", "right", "Distributes the product: a*g - a*rowsum(a*g).", srb_distributed),
    Attempt("19.3-007", "19.3", "right", "Row dot products as a (...,1,T)@(...,T,1) matmul.", srb_matmul_dot),
    Attempt("19.3-008", "19.3", "right",
            "Computes in float32 always; float64 inputs answered in float32 pass at 1e-4 with a note.",
            srb_float32_everywhere),
    Attempt("19.3-009", "19.3", "right", "np.vecdot along the last axis, expand_dims to broadcast.", srb_vecdot),
    Attempt("19.3-010", "19.3", "right",
            "Multiplies by np.float64(1.0): float32 inputs come back float64, which passes with a note.",
            srb_float64_scalar),
    Attempt("19.3-011", "19.3", "wrong", "Sign error: adds the row term.", srb_sign, _w(srb_sign, ((3, 5), F64))),
    Attempt("19.3-012", "19.3", "wrong", "Row dot summed over axis 0: right only for a single 1-D row.",
            srb_axis0, _w(srb_axis0, ((6,), F64), ((3, 5), F64))),
    Attempt("19.3-013", "19.3", "wrong",
            "keepdims forgotten: right for 1-D, broadcast error for (3, 5), silently wrong for square (4, 4).",
            srb_no_keepdims, _w(srb_no_keepdims, ((6,), F64), ((4, 4), F64))),
    Attempt("19.3-014", "19.3", "wrong", "Forgets the leading factor a: masked keys get a gradient.",
            srb_missing_a, _w(srb_missing_a, ((3, 5), F64))),
    Attempt("19.3-015", "19.3", "wrong", "a*g - rowsum: the row term is not multiplied by a.",
            srb_missing_second_a, _w(srb_missing_second_a, ((3, 5), F64))),
    Attempt("19.3-016", "19.3", "wrong", "Mean instead of sum for the row dot product.",
            srb_mean, _w(srb_mean, ((3, 5), F64))),
    Attempt("19.3-017", "19.3", "wrong", "np.sum over the whole array: right only when there is a single row.",
            srb_global_sum, _w(srb_global_sum, ((6,), F64), ((3, 5), F64))),
    Attempt("19.3-018", "19.3", "wrong", "np.dot(g, a) for the row term: right for 1-D, wrong or failing for 2-D.",
            srb_np_dot, _w(srb_np_dot, ((6,), F64), ((4, 4), F64))),
    Attempt("19.3-019", "19.3", "wrong",
            "Explicit 1-D Jacobian with np.diag/np.outer: on 2-D input np.diag extracts a diagonal instead.",
            srb_jacobian_1d, _w(srb_jacobian_1d, ((6,), F64), ((3, 5), F64))),
    Attempt("19.3-020", "19.3", "wrong",
            "reshape(-1, weights.shape[0]) mistakes the first axis for the row length: right only for 1-D and square 2-D.",
            srb_reshape_first_axis, _w(srb_reshape_first_axis, ((6,), F64), ((4, 4), F64), ((3, 5), F64))),
    Attempt("19.3-021", "19.3", "wrong",
            "Loops over the first axis with np.dot: right for 2-D only (1-D rows become scalars, 3-D rows matrices).",
            srb_first_axis_loop, _w(srb_first_axis_loop, ((3, 5), F64), ((2, 3, 6), F64))),
    Attempt("19.3-022", "19.3", "wrong", "grad_weights -= ...: writes into the caller's array.",
            srb_inplace_grad, _w(srb_inplace_grad, ((3, 5), F64))),
    Attempt("19.3-023", "19.3", "wrong", "weights *= ...: overwrites the caller's weights and returns them.",
            srb_inplace_weights, _w(srb_inplace_weights, ((3, 5), F64))),
    Attempt("19.3-024", "19.3", "wrong", "np.atleast_2d to handle 1-D rows, so a (6,) input comes back (1, 6).",
            srb_atleast_2d, _w(srb_atleast_2d, ((3, 5), F64), ((6,), F64))),
    Attempt("19.3-025", "19.3", "wrong", "Clips the weights to at least 1e-12: masked keys get a tiny nonzero gradient.",
            srb_clipped, _w(srb_clipped, ((3, 5), F64))),
    Attempt("19.3-026", "19.3", "wrong", "Subtracts the plain sum of g instead of the weighted sum a.g.",
            srb_sum_of_grads, _w(srb_sum_of_grads, ((3, 5), F64))),
    Attempt("19.3-027", "19.3", "wrong", "Keeps only the diagonal of the Jacobian: a*(1-a)*g.",
            srb_diagonal_only, _w(srb_diagonal_only, ((3, 5), F64))),
    Attempt("19.3-028", "19.3", "wrong", "Jacobian with the inner product a.a where the outer product belongs.",
            srb_inner_instead_of_outer, _w(srb_inner_instead_of_outer, ((6,), F64))),
    Attempt("19.3-029", "19.3", "wrong",
            "np.squeeze on the inputs: right unless a leading axis has length 1, then the shape changes.",
            srb_squeeze, _w(srb_squeeze, ((3, 5), F64), ((2, 3, 6), F64), ((1, 5), F64))),
    Attempt("19.3-030", "19.3", "wrong", "Row dot over axis=1: right for 2-D only.",
            srb_axis1, _w(srb_axis1, ((3, 5), F64), ((6,), F64))),
    Attempt("19.3-031", "19.3", "wrong", "Row dots as the diagonal of g @ a.T: right for 2-D only.",
            srb_diag_matmul, _w(srb_diag_matmul, ((3, 5), F64), ((4, 4), F64), ((2, 3, 6), F64))),
    Attempt("19.3-032", "19.3", "wrong",
            "Renormalises the weights over axis 0 first: harmless for one row, wrong for several.",
            srb_renormalise_axis0, _w(srb_renormalise_axis0, ((6,), F64), ((3, 5), F64))),
    Attempt("19.3-033", "19.3", "wrong", "Zeroes every key with weight below 0.01, not only the masked ones.",
            srb_threshold, _w(srb_threshold, ((3, 5), F64), ((3, 40), F64))),
    Attempt("19.3-034", "19.3", "wrong", "Negates the result (confuses gradient with descent direction).",
            srb_negated, _w(srb_negated, ((3, 5), F64))),
    Attempt("19.3-035", "19.3", "wrong", "Swaps the roles of a and g: g*(a - a.g).",
            srb_roles_swapped, _w(srb_roles_swapped, ((3, 5), F64))),
    Attempt("19.3-036", "19.3", "wrong",
            "Subtracts in place on reshape(-1, T), which is a view: the caller's grad_weights changes.",
            srb_view_inplace, _w(srb_view_inplace, ((3, 5), F64))),
    Attempt("19.3-037", "19.3", "wrong", "np.subtract(..., out=grad_weights) to avoid a temporary: mutates the input.",
            srb_out_param, _w(srb_out_param, ((3, 5), F64))),
    Attempt("19.3-038", "19.3", "wrong",
            "Computes in float16 ('half precision, as on a GPU') and casts back: about 3 digits, beyond even the float32 tolerance.",
            srb_half_precision, _w(srb_half_precision, ((3, 5), F32), ((3, 5), F64))),
]

"""Exercise 19.4 (a): masked attention, forward and backward, gradient-checked.

The student's ``forward(Q, K, V, mask=None) -> (output, cache)`` and
``backward(grad_output, cache) -> (grad_Q, grad_K, grad_V)`` run on fixed,
seeded probes. Each probe's right output comes from
:func:`attention_lib.attention_forward`, its right gradients from central
finite differences of that output (:func:`attention_lib.numerical_gradient`).
A wrong answer is compared with the answers that each typical mistake gives on
the same probe, built from the library's forward, backward and
:mod:`attention_lib.pitfalls`, with one step changed.

The probes, in order: a causal mask; an output gradient on the first two
queries only (a key none of them may read must get exactly no gradient);
scores of about 850 (overflow unless each row's maximum is subtracted); rows
whose scores lie 780 apart (underflow when one maximum serves every row); a
blocked score 800 above the readable ones (underflow unless it is blocked
before anything else touches it), these three forward and backward; a mask
with an empty row; rectangular inputs; leading batch and head axes with a
causal mask, and a batch axis with a padding mask; ``mask=None``; and float32
inputs. Wherever a mask makes an output or a
gradient exactly 0 (an empty row, a key no query with a gradient may read),
it must be exactly 0.
"""

from __future__ import annotations

import functools
import math
import re
from typing import NamedTuple

import numpy as np

from .. import pitfalls
from ..attention import (
    attention_backward,
    attention_forward,
    attention_scores,
    masked_softmax,
    softmax_backward,
)
from ..gradcheck import numerical_gradient, relative_error
from ..masks import causal_mask, padding_mask
from . import softmax_row
from ._harness import (
    FLOAT32_TOLERANCE,
    FLOAT64_TOLERANCE,
    Stop,
    accepts_keyword,
    as_result,
    constant_factor,
    first_match,
    matches,
    near_miss,
    note_float32_answers,
    permuted_match,
    require_callable,
    require_tuple,
    run,
    shape_of,
    tolerance,
)
from ._report import Finding

__all__ = ["check_exercise_19_4"]

T, D_K, D_V = 5, 4, 3
_HINT_FORWARD = "chapter 19.1-19.2, eq. 19.1 and listing 19.1; notebooks 01 and 03"
_HINT_MASK = "chapter 19.2 (masks); notebook 03_masks.ipynb"
_HINT_BACKWARD = "chapter 19.3, eqs. 19.3-19.5; notebook 04_backward.ipynb"
_HINT_NUMERICS = "chapter 19.2; notebook 02 and notebook 06 (misconception 3)"
_GRAD_NAMES = ("grad_Q", "grad_K", "grad_V")
# Scores of several hundred carry absolute rounding errors of about 1e3 * eps, which
# the softmax turns into relative errors of the same size: 1e-3 leaves float32 room.
_LARGE_SCORE_TOLERANCE = 1e-3


class Probe(NamedTuple):
    """One probe: the inputs, the right output and the right gradients (by finite differences)."""

    label: str
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    mask: np.ndarray | None
    grad_output: np.ndarray
    output: np.ndarray
    truth: tuple


def _random_inputs(batch, T_q, T_k, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((*batch, T_q, D_K))
    K = rng.standard_normal((*batch, T_k, D_K))
    V = rng.standard_normal((*batch, T_k, D_V))
    grad_output = rng.standard_normal((*batch, T_q, D_V))
    return [array.astype(dtype) for array in (Q, K, V, grad_output)]


def _make_probe(label, Q, K, V, mask, grad_output):
    output = attention_forward(Q, K, V, mask)
    inputs = {"Q": Q, "K": K, "V": V}
    grad64 = grad_output.astype(np.float64)

    def loss(Q, K, V):
        return float(np.sum(grad64 * attention_forward(Q, K, V, mask)))

    truth = tuple(numerical_gradient(loss, inputs, name) for name in ("Q", "K", "V"))
    return Probe(label, Q, K, V, mask, grad_output, output, truth)


def _causal_label(T_q, T_k=None):
    return f"with mask=causal_mask({T_q}{'' if T_k is None else f', {T_k}'})"


@functools.cache
def probe(name):
    """The probe called ``name``, computed once (the checker hands out copies)."""
    Q, K, V, grad_output = _random_inputs((), T, T, seed=194)
    causal = causal_mask(T)
    if name == "main":
        return _make_probe(_causal_label(T), Q, K, V, causal, grad_output)
    if name == "leak":
        Q, K, V, grad_output = _random_inputs((), T, T, seed=1941)
        grad_output[2:] = 0.0
        label = f"{_causal_label(T)} and an output gradient on queries 0 and 1 only"
        return _make_probe(label, Q, K, V, causal, grad_output)
    if name == "empty_row":
        Q, K, V, grad_output = _random_inputs((), T, T, seed=1942)
        mask = causal.copy()
        mask[2] = False  # query 2 may read nothing
        return _make_probe("with a mask whose row 2 is all False", Q, K, V, mask, grad_output)
    if name == "large_scores":
        # Every score is 850 plus a little: exp overflows above 709 unless each row's
        # maximum is subtracted first.
        Q[:, 0], K[:, 0] = 1700.0, 1.0
        return _make_probe(
            f"with scores of about 850, {_causal_label(T)}", Q, K, V, causal, grad_output
        )
    if name == "rows_apart":
        # Row 0 scores exactly 700 (it reads key 0 only), the other rows about -80: one
        # maximum for all rows sends them to exp(-780) = 0 (below exp(-745), float64's least).
        Q[0] = 0.0
        Q[0, 0], Q[1:, 0], K[:, 0] = 1400.0, -160.0, 1.0
        label = f"with row 0's scores at 700 and the others' at about -80, {_causal_label(T)}"
        return _make_probe(label, Q, K, V, causal, grad_output)
    if name == "blocked_high":
        # Key 4, blocked for queries 0-3, scores about 800 with them; the readable scores are
        # ordinary, and query 4 (which may read key 4) scores it like the others.
        Q[:4, 0], Q[4, 0], K[:4, 0], K[4, 0] = 1.0, 0.0, 0.0, 1600.0
        label = f"with a blocked score about 800 above the readable ones, {_causal_label(T)}"
        return _make_probe(label, Q, K, V, causal, grad_output)
    if name == "rectangular":
        Q, K, V, grad_output = _random_inputs((), 3, 6, seed=1944)
        label = f"with Q {Q.shape}, K {K.shape}, V {V.shape}, {_causal_label(3, 6)[5:]}"
        return _make_probe(label, Q, K, V, causal_mask(3, 6), grad_output)
    if name == "batch":  # batch and heads: any number of leading axes
        Q, K, V, grad_output = _random_inputs((2, 2), T, T, seed=1945)
        label = f"with Q {Q.shape}, K {K.shape}, V {V.shape}, {_causal_label(T)[5:]}"
        return _make_probe(label, Q, K, V, causal, grad_output)
    if name == "padding":
        Q, K, V, grad_output = _random_inputs((2,), T, T, seed=1946)
        mask = padding_mask(np.arange(T)[None, :] < np.array([[T], [3]]))  # example 1: 3 keys
        label = f"with Q {Q.shape} and a padding mask of shape {mask.shape} (example 1 has 3 keys)"
        return _make_probe(label, Q, K, V, mask, grad_output)
    if name == "no_mask":
        Q, K, V, grad_output = _random_inputs((), T, T, seed=1947)
        return _make_probe("with mask=None", Q, K, V, None, grad_output)
    if name == "float32":
        Q, K, V, grad_output = _random_inputs((), T, T, seed=1948, dtype=np.float32)
        return _make_probe(f"with float32 inputs, {_causal_label(T)}", Q, K, V, causal, grad_output)
    raise KeyError(name)


# --------------------------------------------------------------------------------------
# Models of the usual mistakes, each from the library's result with one step changed


def _softmax_any_axis(scores, mask, axis):
    """Softmax along ``axis`` with blocked scores at -inf (a fully blocked column gives 0)."""
    moved = masked_softmax(np.swapaxes(scores, axis, -1), np.swapaxes(mask, axis, -1))
    return np.swapaxes(moved, axis, -1)


def _scale_candidates(Q, K, V):
    """(name, scale) of the wrong divisors a student may use, the right one excluded."""
    d_k, d_v, T_q, T_k = Q.shape[-1], V.shape[-1], Q.shape[-2], K.shape[-2]
    candidates = [
        ("no_scaling", 1.0),
        ("scaled_by_d_k", 1.0 / d_k),
        ("scaled_by_sqrt_d_v", 1.0 / math.sqrt(d_v)),
        ("scaled_by_sqrt_T", 1.0 / math.sqrt(T_k)),
        ("scaled_by_sqrt_T", 1.0 / math.sqrt(T_q)),
    ]
    right = 1.0 / math.sqrt(d_k)
    return [(name, scale) for name, scale in candidates if not math.isclose(scale, right)]


def forward_models(Q, K, V, mask):
    """(name, output) that each typical forward mistake gives on these inputs.

    Without a mask only the scale and the softmax's axis can be wrong: the mask
    mistakes all give the right output then, or (inverted) zeros.
    """
    raw = attention_scores(Q, K, scaled=False)
    full = np.ones(raw.shape, dtype=bool)
    given = mask is not None
    mask = full if mask is None else np.broadcast_to(mask, raw.shape)
    scaled = raw / math.sqrt(Q.shape[-1])
    blocked = np.where(mask, scaled, -np.inf)
    models = [(name, masked_softmax(raw * c, mask) @ V) for name, c in _scale_candidates(Q, K, V)]
    whole = masked_softmax(
        scaled.reshape(*raw.shape[:-2], -1), mask.reshape(*raw.shape[:-2], -1)
    ).reshape(raw.shape)
    column_max = np.max(blocked, axis=-2, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        shifted = np.nan_to_num(np.exp(blocked - column_max))
        row_max_wrong_axis = shifted / np.where(
            shifted.sum(-1, keepdims=True) > 0, shifted.sum(-1, keepdims=True), 1
        )
    models += [
        ("softmax_wrong_axis", _softmax_any_axis(scaled, mask, -2) @ V),
        ("softmax_wrong_axis", _softmax_any_axis(scaled, full, -2) * mask @ V),
        ("softmax_whole_matrix", whole @ V),
        ("row_max_wrong_axis", row_max_wrong_axis @ V),
        ("scaled_after_softmax", masked_softmax(raw, mask) @ V / math.sqrt(Q.shape[-1])),
    ]
    if raw.shape[-1] == raw.shape[-2]:
        models += [("missing_keepdims", output) for output in _lost_keepdims(blocked, V)]
    if not given:
        return models
    models += [
        ("mask_after_softmax", pitfalls.mask_after_softmax(scaled, mask) @ V),
        ("mask_inverted", masked_softmax(scaled, ~mask) @ V),
        ("mask_ignored", masked_softmax(scaled) @ V),
        ("mask_multiplied", masked_softmax(scaled * mask) @ V),
        ("mask_added", masked_softmax(scaled + mask) @ V),
    ]
    if mask.shape[-1] == mask.shape[-2]:
        models.append(("mask_transposed", masked_softmax(scaled, np.swapaxes(mask, -1, -2)) @ V))
    return models


def _lost_keepdims(blocked, V):
    """Outputs when a row's maximum, or a row's sum, loses its axis (square scores only):
    ``(..., T)`` lines up with the last axis, so row j's number meets column j."""
    row_max = np.max(blocked, axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    with np.errstate(all="ignore"):
        exp = np.exp(blocked - np.swapaxes(row_max, -1, -2))
        max_lost = exp / exp.sum(-1, keepdims=True)
        exp = np.exp(blocked - row_max)
        sum_lost = exp / np.swapaxes(exp.sum(-1, keepdims=True), -1, -2)
        return max_lost @ V, sum_lost @ V


def _fitted_scale(output, Q, K, V, mask, tol):
    """The scale c with ``output == softmax(c Q Kᵀ) V`` within ``tol``, when there is one."""
    raw = attention_scores(Q, K, scaled=False)

    def error(log_c):
        return relative_error(output, masked_softmax(raw * math.exp(log_c), mask) @ V)

    grid = np.linspace(math.log(1e-3), math.log(1e3), 121)
    best = min(grid, key=error)
    low, high = best - (grid[1] - grid[0]), best + (grid[1] - grid[0])
    for _ in range(60):  # golden-section search around the best grid point
        a, b = high - 0.618 * (high - low), low + 0.618 * (high - low)
        low, high = (low, b) if error(a) < error(b) else (a, high)
    log_c = (low + high) / 2
    return math.exp(log_c) if error(log_c) < tol else None


_FORWARD_MISTAKES = {
    "no_scaling": "the scores are not scaled: you compute `softmax(Q Kᵀ) V`. Divide the scores by "
    "sqrt(d_k) so that their variance stays near 1 whatever the width.",
    "scaled_by_d_k": "the scores are divided by d_k instead of sqrt(d_k). The variance of q·k is "
    "d_k, so its standard deviation, the right divisor, is sqrt(d_k).",
    "scaled_by_sqrt_d_v": "the scores are divided by sqrt(d_v), the width of the VALUES: the "
    "scale belongs to the dot products q·k, whose variance is d_k, the last axis of Q and K.",
    "scaled_by_sqrt_T": "the scores are divided by the square root of a sequence length "
    "(T_q or T_k) instead of sqrt(d_k): the variance of q·k grows with the width d_k, the last "
    "axis of Q and K, not with the number of positions.",
    "scaled_after_softmax": "the scale comes after the softmax: you divide the weights (or the "
    "output) by sqrt(d_k), so a row's weights no longer sum to 1 and the scores were never "
    "scaled. Divide the SCORES, before the softmax: `softmax(Q Kᵀ / sqrt(d_k))`.",
    "softmax_wrong_axis": "the softmax runs over the wrong axis: the weights of each QUERY (a row, "
    "the last axis) must sum to 1, not the weights each key receives (a column).",
    "softmax_whole_matrix": "the softmax runs over the whole score matrix at once, so all the "
    "weights together sum to 1. Each query's row must sum to 1 on its own: normalise over the "
    "last axis only (axis=-1, keepdims=True).",
    "row_max_wrong_axis": "the maximum subtracted before exp is taken over the wrong axis (each "
    "key's column instead of each query's row). Subtracting one number from a whole ROW "
    "leaves its softmax unchanged; a different number per column does not. Use "
    "`np.max(scores, axis=-1, keepdims=True)`.",
    "missing_keepdims": "a row's maximum or sum has lost its axis: `np.max(scores, axis=-1)` "
    "without keepdims=True has shape (..., T_q), which lines up with the KEYS when it is "
    "subtracted from or divided into the (..., T_q, T_k) scores, so row j's number meets "
    "column j (and fails to broadcast when T_q != T_k). Keep the axis: `keepdims=True`.",
    "mask_after_softmax": "the mask is applied after the softmax: the blocked keys still take "
    "their share of the denominator, so each row with a blocked key sums to less than 1, and "
    "the future leaks into the normaliser. Set blocked scores to -inf before the softmax.",
    "mask_inverted": "the mask is inverted: queries read the keys the mask blocks and skip the "
    "ones it allows. True in the mask means 'may read'.",
    "mask_transposed": "the keys read are the upper triangle: query i reads keys j >= i (the "
    "future), as `np.triu` or a transposed mask gives. Apply the mask you are given as it is "
    "(True = may read, row i for query i); a causal mask is the lower triangle, key j <= i.",
    "mask_ignored": "the mask is not applied: every query reads every key, the future included.",
    "mask_multiplied": "the scores are multiplied by the mask (`scores * mask`): a blocked score "
    "becomes 0, not -inf, so a blocked key still gets weight exp(0 - max) > 0. Block with "
    "`np.where(mask, scores, -np.inf)`.",
    "mask_added": "the boolean mask is added to the scores (`scores + mask`): True counts as 1, "
    "so allowed keys gain 1 and blocked keys keep their score and their weight. Block with "
    "`np.where(mask, scores, -np.inf)` (or add `np.log(mask)`, which is 0 or -inf).",
}
_SOFTMAX_STEP_MISTAKES = (
    "row_term_sign",
    "row_term_missing",
    "weights_factor_missing",
    "row_term_mean",
    "row_term_without_weights",
    "jacobian_diagonal_only",
    "row_term_wrong_axis",
    "missing_keepdims",
)
_BACKWARD_MISTAKES = {
    **{
        name: "in the softmax step of backward: " + softmax_row._MISTAKES.get(name, "")
        for name in _SOFTMAX_STEP_MISTAKES
    },
    "row_term_wrong_axis": "in the softmax step of backward: the row term is summed over the "
    "wrong axis; `rowsum(grad_A * A)` runs over the last axis, the keys of one query.",
    "grad_K_not_transposed": "grad_K is not transposed: it must be `grad_Sᵀ Q / sqrt(d_k)` (key j "
    "collects the gradient of column j of the scores), not `grad_S Q / sqrt(d_k)`.",
    "transposes_swapped": "grad_Q and grad_K have each other's transpose: grad_Q = "
    "`grad_S K / sqrt(d_k)` (query i collects row i of the score gradients) and grad_K = "
    "`grad_Sᵀ Q / sqrt(d_k)` (key j collects column j), not `grad_Sᵀ K` and `grad_S Q`.",
    "grad_K_missing_scale": "grad_K misses the scale: the scores are `Q Kᵀ / sqrt(d_k)`, so "
    "grad_K = `grad_Sᵀ Q / sqrt(d_k)`.",
    "grad_Q_missing_scale": "grad_Q misses the scale: the scores are `Q Kᵀ / sqrt(d_k)`, so "
    "grad_Q = `grad_S K / sqrt(d_k)`.",
    "grad_QK_missing_scale": "grad_Q and grad_K both miss the scale: the scores are "
    "`Q Kᵀ / sqrt(d_k)`, so the factor 1/sqrt(d_k) comes back in both, "
    "grad_Q = `grad_S K / sqrt(d_k)` and grad_K = `grad_Sᵀ Q / sqrt(d_k)`.",
    "grad_V_not_transposed": "grad_V must be `Aᵀ grad_O` (value j collects from every query that "
    "read it), not `A grad_O`.",
    "backward_ignores_mask": "backward does not use the mask: its gradients are those of attention "
    "without a mask (are the weights recomputed from the scores without it?). Use the weights "
    "the forward pass cached, whose blocked entries are exactly 0.",
}


def backward_models(Q, K, V, mask, grad_output):
    """(name, (grad_Q, grad_K, grad_V)) that each typical backward mistake gives."""
    _, cache = attention_forward(Q, K, V, mask, return_cache=True)
    grad_Q, grad_K, grad_V = attention_backward(grad_output, cache)
    weights, scale = cache.weights, cache.scale
    grad_weights = grad_output @ np.swapaxes(V, -1, -2)
    grad_scores = softmax_backward(weights, grad_weights)
    models = [
        ("row_term_sign", pitfalls.attention_backward_with_sign_error(grad_output, cache)),
        ("grad_QK_missing_scale", (grad_Q / scale, grad_K / scale, grad_V)),
        ("grad_K_missing_scale", (grad_Q, grad_K / scale, grad_V)),
        ("grad_Q_missing_scale", (grad_Q / scale, grad_K, grad_V)),
    ]
    if Q.shape[-2] == K.shape[-2]:  # only square scores let the untransposed products run
        models += [
            ("grad_K_not_transposed", (grad_Q, grad_scores @ Q * scale, grad_V)),
            (
                "transposes_swapped",
                (np.swapaxes(grad_scores, -1, -2) @ K * scale, grad_scores @ Q * scale, grad_V),
            ),
            ("grad_V_not_transposed", (grad_Q, grad_K, weights @ grad_output)),
        ]
    for name, wrong_scores in softmax_row.softmax_backward_models(weights, grad_weights):
        if name in _SOFTMAX_STEP_MISTAKES:
            models.append(
                (
                    name,
                    (
                        wrong_scores @ K * scale,
                        np.swapaxes(wrong_scores, -1, -2) @ Q * scale,
                        grad_V,
                    ),
                )
            )
    if mask is not None:
        _, unmasked = attention_forward(Q, K, V, return_cache=True)
        models.append(("backward_ignores_mask", attention_backward(grad_output, unmasked)))
    return models


# --------------------------------------------------------------------------------------
# Calling the student's pair


class _Pair:
    """The student's forward and backward on one probe, with every array handed out watched."""

    def __init__(self, student, forward, backward):
        self.student, self.forward, self.backward = student, forward, backward

    def run_forward(self, p):
        """The raw value forward returns, on fresh copies of the probe's inputs."""
        self.student.forget()
        Q, K, V = (array.copy() for array in (p.Q, p.K, p.V))
        mask = None if p.mask is None else p.mask.copy()
        self.student.hand_out("forward", Q=Q, K=K, V=V, mask=mask)
        return self._call(self.forward, "forward", Q, K, V, mask=mask, label=p.label)

    def output(self, p, result):
        require_tuple(result, 2, "forward should return the pair (output, cache)")
        expected = np.broadcast_shapes(p.Q.shape[:-2], p.K.shape[:-2], p.V.shape[:-2])
        expected += (p.Q.shape[-2], p.V.shape[-1])
        return as_result(result[0], f"the output of forward {p.label}", expected), result[1]

    def run_backward(self, p, cache):
        grad_output = p.grad_output.copy()
        self.student.hand_out("backward", grad_output=grad_output)
        result = self._call(self.backward, "backward", grad_output, cache, label=p.label)
        require_tuple(result, 3, "backward should return the triple (grad_Q, grad_K, grad_V)")
        shapes = [shape_of(value) for value in result]
        expected = [array.shape for array in (p.Q, p.K, p.V)]
        # Shapes that fit only in another order: keep each array as it is; the values tell
        # which order it is (Q and K often share a shape).
        reordered = sorted(map(str, shapes)) == sorted(map(str, expected))
        try:
            return tuple(
                as_result(value, f"{name} from backward {p.label}", shape if reordered else want)
                for name, value, want, shape in zip(
                    _GRAD_NAMES, result, expected, shapes, strict=True
                )
            )
        except Stop as stop:
            finding = stop.findings[0]
            if finding.diagnosis != "not_finite":
                raise
            raise Stop(
                finding._replace(
                    message=f"{finding.message} Forward's output was finite, so the NaN arises "
                    "in backward: does it use a blocked score's -inf, or divide 0 by 0, where it "
                    "needs the weights?",
                    hint=_HINT_BACKWARD,
                )
            ) from None

    def _call(self, function, name, *args, **kwargs):
        try:
            return self.student.call(function, name, *args, **kwargs)
        except Stop as stop:
            raise _explain_raise(stop) from None

    def both(self, p, result=None):
        """Output and gradients; ``result`` is what forward returned, when it has already run."""
        output, cache = self.output(p, self.run_forward(p) if result is None else result)
        return output, self.run_backward(p, cache)


# The products of the two passes and their shapes, for a student whose product does not fit.
_PRODUCTS = (
    "The products and their shapes: scores = Q Kᵀ, (T_q, d_k)(d_k, T_k); output = A V, "
    "(T_q, T_k)(T_k, d_v); grad_V = Aᵀ grad_O, (T_k, T_q)(T_q, d_v); grad_A = grad_O Vᵀ, "
    "(T_q, d_v)(d_v, T_k); grad_Q = grad_S K, (T_q, T_k)(T_k, d_k); grad_K = grad_Sᵀ Q, "
    "(T_k, T_q)(T_q, d_k). A transpose is missing or one too many in the line above."
)
_FIXED_AXES = re.compile(r"transpose\([^()]*\(\s*0\s*,|transpose\(\s*0\s*,|permute\(")


def _explain_raise(stop):
    """A student's exception named when its kind says what went wrong, else as it is."""
    finding, error = stop.findings[0], stop.error
    if not isinstance(error, ValueError):
        return stop
    if "axes don't match" in str(error) and _FIXED_AXES.search(finding.message):
        return Stop(
            Finding(
                "transpose_axes_fixed",
                f"{finding.message}\n`np.transpose` with a list of axes, such as (0, 2, 1), "
                "needs exactly that many axes, so it fails without a batch axis (or with two). "
                "`np.swapaxes(K, -1, -2)` swaps the last two axes whatever comes before them.",
                _HINT_FORWARD,
            ),
            error=error,
        )
    if "matmul" in str(error) or "not aligned" in str(error):
        return Stop(
            Finding("matmul_shapes", f"{finding.message}\n{_PRODUCTS}", _HINT_BACKWARD),
            error=error,
        )
    return stop


def _wrong_output(output, p, tol):
    mask = p.mask
    mistake = first_match(output, forward_models(p.Q, p.K, p.V, mask), tol)
    own = causal_mask(p.Q.shape[-2], p.K.shape[-2])
    if mistake is None and mask is not None:
        if any(
            matches(output, attention_forward(p.Q, p.K, p.V, m), tol) for m in (own, mask & own)
        ):
            return Finding(
                "mask_replaced",
                f"forward {p.label} does not apply exactly the mask it is given: its output is "
                "that of a causal mask of its own, instead of the mask passed in or on top of "
                "it. Apply exactly the mask passed in (True = may read), and nothing else.",
                _HINT_MASK,
            )
    if mistake is None and mask is None:
        if matches(output, attention_forward(p.Q, p.K, p.V, own), tol):
            return Finding(
                "none_became_causal",
                "with mask=None your forward applies a causal mask: no mask means that every "
                "query reads every key (encoder self-attention, cross-attention). Apply a mask "
                "only when one is given.",
                _HINT_MASK,
            )
    if mistake is not None:
        hint = _HINT_MASK if mistake.startswith("mask") else _HINT_FORWARD
        return Finding(mistake, _FORWARD_MISTAKES[mistake] + f" ({p.label})", hint)
    misread = _keys_misread(output, p, tol)
    if misread is not None:
        return misread
    scale = _fitted_scale(output, p.Q, p.K, p.V, mask, tol)
    if scale is not None:
        return Finding(
            "wrong_scale",
            f"the scores are scaled by 1/{1 / scale:.3g} instead of 1/sqrt(d_k) = "
            f"1/{math.sqrt(p.Q.shape[-1]):.3g}: d_k is the last axis of Q and K (of one head, "
            "not d_model, the width of all heads together).",
            _HINT_FORWARD,
        )
    error = relative_error(output, p.output)
    imprecise = near_miss(f"the output of forward {p.label}", error, _HINT_FORWARD)
    if imprecise is not None:
        return imprecise
    return Finding(
        "wrong_output",
        f"the output of forward {p.label} differs from the right one (relative error "
        f"{error:.2g}) and matches none of the usual mistakes. The "
        "right output is `softmax(Q Kᵀ / sqrt(d_k)) V`, with blocked keys at -inf before the "
        "softmax.",
        _HINT_FORWARD,
    )


def _keys_misread(output, p, tol):
    """A finding when each output row is right attention over SOME set of keys, and some set is
    not the one the mask allows: the rows say which keys the student's forward reads."""
    scores = attention_scores(p.Q, p.K)
    lead = scores.shape[:-2]
    T_q, T_k = scores.shape[-2:]
    subsets = np.array(np.meshgrid(*[[False, True]] * T_k, indexing="ij")).reshape(T_k, -1).T
    allowed = np.broadcast_to(True if p.mask is None else p.mask, scores.shape)
    values = np.broadcast_to(p.V, lead + p.V.shape[-2:])
    wrong = []
    for index in np.ndindex(*lead, T_q):
        candidates = masked_softmax(np.broadcast_to(scores[index], subsets.shape), subsets)
        rows = candidates @ values[index[:-1]]
        errors = [relative_error(output[index], row) for row in rows]
        best = int(np.argmin(errors))
        if errors[best] >= tol:
            return None
        if not np.array_equal(subsets[best], allowed[index]):
            wrong.append((index, subsets[best], allowed[index]))
    if not wrong:
        return None

    def keys(row):
        read = np.flatnonzero(row)
        return f"key{'s' * (read.size > 1)} " + ", ".join(map(str, read)) if read.size else "no key"

    def query(index):
        return f"query {index[-1]}" + (f" of batch index {index[:-1]}" if lead else "")

    shown = "; ".join(
        f"{query(index)} reads {keys(read)} (the mask allows {keys(mask)})"
        for index, read, mask in wrong[:3]
    )
    return Finding(
        "keys_misread",
        f"forward {p.label} reads other keys than the mask allows: {shown}"
        f"{f'; and {len(wrong) - 3} more' if len(wrong) > 3 else ''}. Each of your output rows "
        "is right attention over "
        "the keys it reads, so the softmax is right and the blocking is not: apply exactly the "
        "mask you are given (True = may read, `np.where(mask, scores, -np.inf)`), or none when "
        "it is None.",
        _HINT_MASK,
    )


def _wrong_order(order, label):
    """``order[j]`` is the position at which gradient j was returned (None: unknown)."""
    if order is None:
        returned = "the shapes fit (grad_Q, grad_K, grad_V) only in another order"
    else:
        names = ", ".join(_GRAD_NAMES[order.index(i)] for i in range(3))
        returned = f"it returns ({names})"
    return Finding(
        "gradients_wrong_order",
        f"backward {label} returns the gradients in the wrong order: {returned}. The order is "
        "(grad_Q, grad_K, grad_V), like the arguments of forward(Q, K, V).",
        _HINT_BACKWARD,
    )


def _factor_finding(grads, p, tol):
    """A finding when each wrong gradient is a constant multiple of the right one."""
    wrong = {}
    for name, grad, truth in zip(_GRAD_NAMES, grads, p.truth, strict=True):
        if relative_error(grad, truth) >= tol:
            factor = constant_factor(grad, truth, tol)
            if factor is None:
                return None
            wrong[name] = factor
    scale = 1.0 / math.sqrt(p.Q.shape[-1])
    text = ", ".join(f"{name} is {factor:.3g} times" for name, factor in wrong.items())
    if all(math.isclose(factor, scale, rel_tol=1e-3) for factor in wrong.values()):
        why = "the scale 1/sqrt(d_k) is applied twice"
    else:
        why = "eqs. 19.3-19.5 carry no other constant than the scale 1/sqrt(d_k), once"
    return Finding(
        "gradient_off_by_factor",
        f"backward {p.label}: {text} the right gradient; {why}.",
        _HINT_BACKWARD,
    )


def _check_gradients(grads, p, tol):
    """Compare with the truth; when wrong, name the mistake (order, models, factors)."""
    errors = [
        relative_error(g, t) if g.shape == t.shape else np.inf
        for g, t in zip(grads, p.truth, strict=True)
    ]
    if max(errors) < tol:
        return
    order = permuted_match(grads, p.truth, tol)
    if order is not None:
        raise Stop(_wrong_order(order, p.label))
    if np.isinf(max(errors)):  # shapes that fit only in another order, values in none
        raise Stop(_wrong_order(None, p.label))
    for name, model in backward_models(p.Q, p.K, p.V, p.mask, p.grad_output):
        if all(matches(g, m, tol) for g, m in zip(grads, model, strict=True)):
            raise Stop(Finding(name, _BACKWARD_MISTAKES[name], _HINT_BACKWARD))
    factor = _factor_finding(grads, p, tol)
    if factor is not None:
        raise Stop(factor)
    imprecise = near_miss(f"backward {p.label}: the gradient", max(errors), _HINT_BACKWARD)
    if imprecise is not None:
        raise Stop(imprecise)
    wrong = ", ".join(
        f"{name} (relative error {error:.2g})"
        for name, error in zip(_GRAD_NAMES, errors, strict=True)
        if error >= tol
    )
    raise Stop(
        Finding(
            "wrong_gradient",
            f"backward {p.label}: {wrong} disagree with central finite differences (tolerance "
            f"{tol:.0e}) and match none of the usual mistakes.",
            _HINT_BACKWARD,
        )
    )


def _require_exact_zeros(output, grads, p):
    """Unreadable queries: output and grad_Q exactly 0; keys no query with a gradient may read:
    grad_K and grad_V exactly 0."""
    if p.mask is None:
        return
    mask = np.broadcast_to(p.mask, p.output.shape[:-1] + (p.K.shape[-2],))
    empty_queries = ~mask.any(axis=-1)
    wanted = np.any(p.grad_output != 0, axis=-1)
    read = np.any(mask & wanted[..., :, None], axis=-2)
    grad_Q, grad_K, grad_V = grads
    if np.any(output[empty_queries] != 0):
        raise Stop(_masked_row_not_zero(output[empty_queries], p))
    if np.any(grad_Q[empty_queries] != 0):
        raise Stop(
            Finding(
                "masked_not_exactly_zero",
                f"{_where(p)} a query with no readable key gets grad_Q of size "
                f"{np.abs(grad_Q[empty_queries]).max():.1g} instead of exactly 0: its output does "
                "not depend on it. Its weights are all exactly 0, so its score gradients are too.",
                _HINT_BACKWARD,
            )
        )
    leaked = [
        (name, np.abs(grad[~read]).max())
        for name, grad in (("grad_K", grad_K), ("grad_V", grad_V))
        if np.any(grad[~read] != 0)
    ]
    if not leaked:
        return
    size = max(np.abs(grad).max() for grad in grads)
    names = " and ".join(name for name, _ in leaked)
    largest = max(value for _, value in leaked)
    if largest < 1e-8 * size:
        raise Stop(
            Finding(
                "masked_not_exactly_zero",
                f"{_where(p)} keys that no query with an output gradient may read get {names} of "
                f"about {largest:.1g} instead of exactly 0. A blocked key's weight is exactly 0 "
                "(exp(-inf) = 0), and so is its gradient: something adds a little to the weights "
                "or the scores (an epsilon?).",
                _HINT_BACKWARD,
            )
        )
    ignores = dict(backward_models(p.Q, p.K, p.V, p.mask, p.grad_output))["backward_ignores_mask"]
    tol = tolerance(*grads)
    if all(matches(g, m, tol) for g, m in zip(grads, ignores, strict=True)):
        raise Stop(
            Finding(
                "backward_ignores_mask", _BACKWARD_MISTAKES["backward_ignores_mask"], _HINT_BACKWARD
            )
        )
    raise Stop(
        Finding(
            "gradient_into_masked",
            f"gradient flows into masked positions {p.label}: keys that no query with an output "
            f"gradient may read get {names} up to {largest:.2g}, although they cannot change the "
            "loss. A masked score has weight 0, so its score gradient A * (...) is 0.",
            _HINT_BACKWARD,
        )
    )


def _where(p):
    return f"{p.label[0].upper()}{p.label[1:]}:"


def _masked_row_not_zero(rows, p):
    values = rows[np.isfinite(rows)]
    largest = np.abs(values).max() if values.size else 0.0
    return Finding(
        "masked_row_not_zero",
        f"{_where(p)} a query with no readable key must get an output row of exactly 0, as "
        "attention_lib and PyTorch's `F.scaled_dot_product_attention` give (on the CPU; "
        "`nn.MultiheadAttention` gives NaN there); yours has entries up to "
        f"{largest:.2g}.",
        _HINT_MASK,
    )


def _nan_or_zero_rows(output):
    """Indices of output rows that are NaN or inf, and of rows that are exactly 0."""
    rows = output.reshape(-1, output.shape[-1])
    return np.flatnonzero(~np.isfinite(rows).all(axis=-1)), np.flatnonzero(~rows.any(axis=-1))


# --------------------------------------------------------------------------------------
# The probes


def _check_probe(pair, p, tol=None, result=None):
    """Output and gradients right (and exact where they must be); returns them for notes."""
    output, grads = pair.both(p, result)
    tol = tolerance(output) if tol is None else tol
    if relative_error(output, p.output) >= tol:
        raise Stop(_wrong_output(output, p, tol))
    _check_gradients(grads, p, max(tol, tolerance(*grads)))
    _require_exact_zeros(output, grads, p)
    answers = dict(zip(("output", *_GRAD_NAMES), (output, *grads), strict=True))
    note_float32_answers(pair.student, answers, p.Q.dtype)
    return output, grads


def _check_empty_row(pair):
    p = probe("empty_row")
    first = pair.run_forward(p)
    raw = _first_array(first)
    if raw is not None and raw.shape == p.output.shape:
        if not np.all(np.isfinite(raw[2])):
            raise Stop(
                Finding(
                    "masked_row_nan",
                    f"{_where(p)} a query with no readable key gives NaN: its row has no "
                    "weight to share, and 0 / 0 is NaN (as is `-inf - (-inf)`, when the maximum "
                    "of a row of -inf scores is subtracted). Such a row must give weights 0 and "
                    "output 0: subtract 0 instead of an infinite maximum, and divide by 1 where a "
                    "row sum is 0.",
                    _HINT_MASK,
                )
            )
        if np.allclose(raw[2], p.V.mean(axis=0)):
            raise Stop(
                Finding(
                    "masked_row_uniform",
                    f"{_where(p)} a query with no readable key averages every value uniformly: "
                    "the blocked scores were filled with a large negative number instead of "
                    "-inf, so a fully blocked row holds equal scores. It must give output 0.",
                    _HINT_MASK,
                )
            )
        if np.any(raw[2] != 0):
            tol = tolerance(raw)
            causal = attention_forward(p.Q, p.K, p.V, causal_mask(T))
            if np.allclose(raw[2], causal[2], rtol=tol, atol=0):
                raise Stop(_wrong_output(raw, p, tol))  # names the replaced mask
            raise Stop(_masked_row_not_zero(raw[2], p))
    _check_probe(pair, p, result=first)


def _first_array(result):
    """``result[0]`` as a float array, or None when it is not one (judged later, with a finding)."""
    if not isinstance(result, tuple | list) or not result:
        return None
    try:
        array = np.asarray(result[0])
    except ValueError:
        return None
    return array if array.dtype.kind == "f" else None


def _check_numerics(pair):
    """The three probes with extreme scores, forward first, then backward."""
    for name, diagnosis, explain in (
        ("large_scores", "no_max_subtraction", _no_max),
        ("rows_apart", "global_max_subtraction", _global_max),
        ("blocked_high", "blocked_score_underflow", _blocked_high),
    ):
        p = probe(name)
        result = pair.run_forward(p)
        raw = _first_array(result)
        if raw is not None and raw.shape == p.output.shape:
            broken, zero = _nan_or_zero_rows(raw)
            expected_zero = _nan_or_zero_rows(p.output)[1]
            bad = np.union1d(broken, np.setdiff1d(zero, expected_zero))
            if bad.size:
                raise Stop(Finding(diagnosis, explain(bad), _HINT_NUMERICS))
        output, cache = pair.output(p, result)
        tol = max(tolerance(output), _LARGE_SCORE_TOLERANCE)
        if relative_error(output, p.output) >= tol:
            raise Stop(_wrong_output(output, p, tol))
        try:
            grads = pair.run_backward(p, cache)
            _check_gradients(grads, p, max(tol, tolerance(*grads)))
        except Stop as stop:  # right on the main probe: only these scores break it
            if stop.error is not None:  # the student's exception, reported as it is
                raise
            broken = "NaN or inf" if stop.findings[0].diagnosis == "not_finite" else "wrong"
            raise Stop(
                Finding(
                    diagnosis,
                    f"{_where(p)} your forward is right, but the gradients from backward are "
                    f"{broken}: the softmax backward uses does not survive these scores (does it "
                    "recompute the weights without what makes forward safe?). Use the weights "
                    "forward cached, or compute them the same way.",
                    _HINT_NUMERICS,
                )
            ) from None


def _rows(rows):
    return ("row " if len(rows) == 1 else "rows ") + ", ".join(map(str, rows))


def _no_max(rows):
    return (
        f"with scores of about 850 the output is NaN or 0 ({_rows(rows)}): exp overflows above "
        "709 (float64) to inf, and inf / inf is NaN. Subtract each row's maximum score before "
        "exp; softmax does not change when a row is shifted."
    )


def _global_max(rows):
    return (
        f"with row 0's scores at 700 and the others' at about -80, {_rows(rows)} of the output "
        "come out as NaN or 0: you subtract one maximum for the whole matrix (700) instead of "
        "each row's own. That is exact in theory, but then every score of rows 1-4 sits 780 "
        "below its shift, and exp(-780) is 0 in float64 (nothing below exp(-745) exists), so "
        "those rows become 0 / 0. Use `np.max(scores, axis=-1, keepdims=True)`."
    )


def _blocked_high(rows):
    return (
        f"with a blocked score about 800 above the readable ones, {_rows(rows)} of the output "
        "come out as NaN or 0: the blocked score takes part before it is blocked, as when the "
        "softmax runs over every key and the blocked weights are zeroed and the row "
        "renormalised afterwards, or when the row maximum is taken before masking. That is "
        "exact in theory (the common factor cancels), but the readable keys' exponentials, "
        "exp(-800), underflow to 0 in float64, and the row becomes 0 / 0 (notebook 06 shows "
        "the wrong ratios just before). Set blocked scores to -inf first, then take each row's "
        "maximum over what is left."
    )


def _check_shapes(pair):
    """Rectangular inputs, leading axes with two kinds of mask, and no mask."""
    # the 3-D padding probe before the 4-D one: an axis counted from the front is named there
    for name in ("rectangular", "padding", "batch", "no_mask"):
        p = probe(name)
        batched = p.Q.ndim > 2
        try:
            output, grads = pair.both(p)
        except Stop as stop:
            if batched:
                raise _batch_failure(pair, p, stop) from None
            if name == "rectangular" and stop.findings[0].diagnosis in ("raised", "wrong_shape"):
                raise Stop(
                    Finding(
                        "rectangular_fails",
                        f"{stop.findings[0].message}\nWith T_q = 3 queries and T_k = 6 keys the "
                        "scores and weights are T_q × T_k, not square: nothing may assume "
                        "T_q = T_k (cross-attention, chapter 19.4).",
                        _HINT_FORWARD,
                    )
                ) from None
            if name == "no_mask" and stop.findings[0].diagnosis in ("raised", "not_finite"):
                raise Stop(_none_fails(stop.findings[0].message)) from None
            raise
        tol = tolerance(output)
        if relative_error(output, p.output) >= tol:
            if name == "no_mask" and not np.all(np.isfinite(output)):
                raise Stop(_none_fails(f"the output of forward {p.label} holds NaN"))
            finding = _wrong_output(output, p, tol)
            raise Stop(_in_batch(pair, p, finding) if batched else finding)
        try:
            _check_gradients(grads, p, max(tol, tolerance(*grads)))
        except Stop as stop:
            if name == "no_mask" and not all(np.any(grad) for grad in grads):
                raise Stop(_none_fails(f"backward {p.label} returns all-zero gradients")) from None
            raise (Stop(_in_batch(pair, p, stop.findings[0])) if batched else stop) from None
        _require_exact_zeros(output, grads, p)


def _none_fails(what):
    return Finding(
        "mask_none_fails",
        f"{what}. No mask means that every query may read every key: handle `mask is None` "
        "(for example `if mask is not None:` around the blocking) and do not use None as a "
        "mask; `np.where(None, a, b)` takes None for False and gives b everywhere.",
        _HINT_MASK,
    )


_SCALE_MISTAKES = (
    "no_scaling",
    "scaled_by_d_k",
    "scaled_by_sqrt_d_v",
    "scaled_by_sqrt_T",
    "wrong_scale",
)


def _in_batch(pair, p, finding):
    """A finding made only with a batch axis, with what a batch axis changes."""
    line = pair.student.axis_reversing_line(lambda: pair.both(p))
    if line is not None:
        return Finding("batch_axes", f"{finding.message}\n{_reverses_axes(line, p)}", _HINT_FORWARD)
    if finding.diagnosis in _SCALE_MISTAKES:
        extra = (
            "With leading axes, d_k is Q.shape[-1]: Q.shape[1] is a sequence length or a "
            "number of heads there."
        )
    else:
        extra = (
            "With a leading batch axis, use axis=-1 for the rows and np.swapaxes(x, -1, -2) "
            "for transposes (axis=1 is the last axis only for 2-D input)."
        )
    if finding.diagnosis in ("wrong_output", "wrong_gradient"):
        return Finding(
            "batch_axis_fails",
            f"{finding.message}\nYour pair is right without a batch axis but not {p.label}. "
            + extra,
            finding.hint,
        )
    return finding._replace(message=f"{finding.message} {extra}")


def _reverses_axes(line, p):
    function, source = line
    return (
        f"With leading axes, `.T` (or `np.transpose` without axes) reverses every axis, so an "
        f"array of shape {p.K.shape} becomes {p.K.shape[::-1]}: your line `{source}` (in "
        f"{function}) does that. Transpose the last two axes only: `np.swapaxes(x, -1, -2)`."
    )


def _batch_failure(pair, p, stop):
    finding = stop.findings[0]
    if finding.diagnosis not in ("raised", "wrong_shape", "matmul_shapes"):
        return stop
    finding = finding._replace(message=finding.message.replace(f"\n{_PRODUCTS}", ""))
    line = pair.student.axis_reversing_line(lambda: pair.both(p))
    if line is not None:
        return Stop(
            Finding("batch_axes", f"{finding.message}\n{_reverses_axes(line, p)}", _HINT_FORWARD)
        )
    if isinstance(stop.error, IndexError) and "boolean index" in str(stop.error):
        return Stop(
            Finding(
                "mask_not_broadcast",
                f"{finding.message}\nA boolean index (`scores[~mask] = ...`) needs the mask's "
                "full shape, but a mask only broadcasts to the scores: here the mask has shape "
                f"{p.mask.shape} and the scores {p.output.shape[:-1] + p.K.shape[-2:-1]}. Use "
                "`np.where(mask, scores, -np.inf)`, which broadcasts.",
                _HINT_MASK,
            )
        )
    return Stop(
        Finding(
            "batch_axis_fails",
            f"{finding.message}\nYour pair works without a batch axis but not {p.label}: every "
            "step must act on the last two axes only (`np.swapaxes(x, -1, -2)`, axis=-1) and "
            "let the leading axes broadcast, the mask's included.",
            finding.hint,
        )
    )


def _check_float32(pair):
    p = probe("float32")
    try:
        output, grads = _check_probe(pair, p, tol=FLOAT32_TOLERANCE)
    except Stop as stop:
        if stop.findings[0].diagnosis not in ("wrong_output", "wrong_gradient", "imprecise"):
            raise
        raise Stop(
            Finding(
                "float32_inaccurate",
                f"{stop.findings[0].message}\nYour pair is right for float64 inputs but not for "
                "float32 ones: float32 keeps about 7 digits, plenty for 1e-4, so something loses "
                "more (float16 on the way, a rounding, a constant too large for float32?).",
                _HINT_FORWARD,
            )
        ) from None
    promoted = [
        name
        for name, array in zip(("output", *_GRAD_NAMES), (output, *grads), strict=True)
        if array.dtype != np.float32
    ]
    if promoted:
        pair.student.note(
            "float32_promoted",
            f"for float32 inputs your {', '.join(promoted)} come back as float64. A NumPy "
            "float64 scalar promotes a float32 array to float64 (NumPy 2): `np.sqrt(d_k)` is "
            "one; `math.sqrt(d_k)` gives a Python float, which keeps float32, as the library "
            "does. It passes, but a float32 model would silently run in float64.",
        )
        return f"float32 inputs: output and gradients within {FLOAT32_TOLERANCE:.0e}"
    return (
        f"float32 inputs: output and gradients within {FLOAT32_TOLERANCE:.0e}, returned as float32"
    )


def _findings(student, forward, backward):
    require_callable(forward, "forward")
    require_callable(backward, "backward")
    if not accepts_keyword(forward, "mask"):
        raise Stop(
            Finding(
                "forward_signature",
                "forward takes no argument called `mask`: the checker calls "
                "forward(Q, K, V, mask=...), as the exercise states, so write "
                "`def forward(Q, K, V, mask=None):`.",
            )
        )
    pair = _Pair(student, forward, backward)
    main = probe("main")
    try:
        _check_probe(pair, main)
    except Stop as stop:
        if stop.findings[0].diagnosis == "wrong_gradient":
            _check_probe(pair, probe("leak"))  # a leak explains it better, if there is one
        raise
    _check_probe(pair, probe("leak"))
    _check_numerics(pair)  # before the empty row: no max subtraction also breaks an empty row
    _check_empty_row(pair)
    _check_shapes(pair)
    float32_line = _check_float32(pair)
    return [
        f"output equals `softmax(Q Kᵀ / sqrt(d_k)) V` {main.label}",
        f"gradients agree with central finite differences in float64 (relative error below "
        f"{FLOAT64_TOLERANCE:.0e}; {FLOAT32_TOLERANCE:.0e} if you compute in float32)",
        float32_line,
        "keys that no query with an output gradient may read get gradient exactly 0",
        "scores of about 850 do not overflow, forward or backward (each row's maximum is "
        "subtracted)",
        "rows whose scores lie 780 apart do not underflow, forward or backward (each row's own "
        "maximum)",
        "a blocked score 800 above the readable ones changes nothing, forward or backward "
        "(blocked first)",
        "a query with no readable key gets output exactly 0 and gradient exactly 0, no NaN",
        "rectangular inputs (T_q = 3, T_k = 6, causal_mask(3, 6)) work",
        f"leading axes work: batch and heads, Q {probe('batch').Q.shape} with causal_mask(5), "
        "and a batch with a padding mask of shape (2, 1, 5)",
        "mask=None reads every key",
        "Q, K, V, mask and grad_output are left unchanged",
    ]


def check_exercise_19_4(forward, backward):
    """Check a masked attention forward/backward pair by finite differences (exercise 19.4 (a)).

    ``forward(Q, K, V, mask=None) -> (output, cache)`` must apply exactly the
    mask it is given (True = may read; no mask: plain attention) and give a
    query with no readable key an output row of exactly 0;
    ``backward(grad_output, cache) -> (grad_Q, grad_K, grad_V)``. The checker
    passes ``mask=causal_mask(5)`` explicitly, compares the gradients with
    central finite differences in float64, and probes (module docstring): an
    output gradient on the first queries only, a fully masked row, extreme
    scores, rectangular inputs, leading batch and head axes with a causal mask
    and a batch axis with a padding mask, ``mask=None`` and float32 inputs (within ``1e-4``). No
    array it hands out may change.

    Parameters
    ----------
    forward, backward : callable

    Returns
    -------
    ExerciseReport
        Names the mistake: no scaling or a wrong scale, softmax over the wrong
        axis or the whole matrix, the mask after the softmax, inverted,
        multiplied, ignored or replaced, no max subtraction or a global one,
        the row term's sign, ``grad_K`` not transposed or missing the scale,
        gradient into masked positions, gradients in the wrong order, among
        others.

    Examples
    --------
    >>> def forward(Q, K, V, mask=None):
    ...     return attention_forward(Q, K, V, mask, return_cache=True)
    >>> check_exercise_19_4(forward, attention_backward).passed
    True
    >>> from attention_lib import pitfalls
    >>> check_exercise_19_4(forward, pitfalls.attention_backward_with_sign_error).diagnoses
    ('row_term_sign',)
    """
    return run(
        "19.4",
        "masked attention, forward and backward",
        lambda student: _findings(student, forward, backward),
    )

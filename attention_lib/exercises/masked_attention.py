"""Exercise 19.4 (a): masked attention, forward and backward, gradient-checked.

The student's ``forward(Q, K, V, mask=None) -> (output, cache)`` and
``backward(grad_output, cache) -> (grad_Q, grad_K, grad_V)`` run on ``PROBES``,
fixed and seeded, generated to reach every value of ``AXES``, the axes the
statement leaves free (:mod:`._attention_probes` has the table).

Each probe's right output and gradients come from the library
(:func:`attention_lib.attention_forward`, ``attention_backward``), in float64
from the probe's inputs; the first probe's gradients are central differences
(:func:`attention_lib.numerical_gradient`) themselves. Answers must agree to
1e-6 (float64) or 1e-4 (float32), scores of several hundred to 1e-3 (their
rounding). Where a mask makes an output or a gradient exactly 0 (a query with
no readable key, a key no query with a gradient may read), it must be exactly 0.

A wrong answer is named, on the first probe where it fails, by the first of
these that holds: a mistake of ``MISTAKES`` whose model (the library's result
with one step changed) it matches; what the probe adds to the ones it passed (a
leading axis, T_q != T_k, no mask, float32, extreme scores, another width or
mask form), with the student's exception or its relation to the right answer;
the relation alone (all zeros, a constant factor, right in some rows only, ...),
with the smallest probe on which it fails.
"""

from __future__ import annotations

import functools
import inspect
import math
import re

import numpy as np

from ..attention import attention_backward, attention_forward, masked_softmax
from ..gradcheck import relative_error
from . import softmax_row
from ._attention_probes import AXES, CACHE_PROBES, MAIN, PROBES, inputs, label, probe
from ._harness import (
    HINTS,
    Mistakes,
    Stop,
    accepts_keyword,
    as_result,
    constant_factor,
    error,
    near_miss,
    note_float32_answers,
    permuted_match,
    relation,
    require_callable,
    require_tuple,
    run,
    shape_of,
    tolerance,
)

__all__ = ["AXES", "PROBES", "check_exercise_19_4"]

_GRADS = ("grad_Q", "grad_K", "grad_V")
# Scores of several hundred carry absolute rounding errors of about 1e3 * eps, which
# the softmax turns into relative errors of the same size: 1e-3 leaves float32 room.
_LARGE_SCORE_TOLERANCE = 1e-3
_OVERFLOW = "exp overflows above 709 (float64) to inf, and inf / inf is NaN."
_UNDERFLOW = "exp(-900) is 0 in float64 (nothing below exp(-745) exists): every weight is 0 / 0."
_EXTREME = {  # the mistake a failure on these scores is, and why it fails there
    "about 850": ("no_max_subtraction", _OVERFLOW),
    "about -900": ("no_max_subtraction", _UNDERFLOW),
    "800 and -800": (
        "no_max_subtraction",
        "shifted by anything but its own maximum (its mean, a constant), a row whose scores "
        "lie 1600 apart overflows at the top or underflows at the bottom.",
    ),
    "rows 780 apart": ("global_max_subtraction", ""),
    "blocked 800 above": ("blocked_score_underflow", ""),
}


def _topic(spec):
    """What a probe adds to the first one, which names a failure that shows there."""
    if spec.scores in _EXTREME or spec.mask == "empty row":
        return spec.scores if spec.scores in _EXTREME else "empty row"
    if spec.mask in ("None", "omitted"):
        return "none"
    if spec.dtype == "float32" or spec.lead or spec.T_q != spec.T_k:
        return "float32" if spec.dtype == "float32" else "batch" if spec.lead else "rectangular"
    return "mask" if spec.mask != "causal" else "widths" if spec.d_k != MAIN.d_k else "main"


# --------------------------------------------------------------------------------------
# The models: what each mistake of the catalogue (catalogue.toml) gives on a probe

MISTAKES = Mistakes("19.4", "a")
_swap = functools.partial(np.swapaxes, axis1=-1, axis2=-2)


def _masked(model):
    return lambda p: None if p.mask is None else model(p)


def _square(model):
    return lambda p: model(p) if p.square else None


def _softmax_wrong_axis(p):
    masks = (p.allowed, np.ones_like(p.allowed))
    columns = [_swap(masked_softmax(_swap(p.scaled), _swap(m))) for m in masks]
    return [columns[0] @ p.V64, columns[1] * p.allowed @ p.V64]


def _softmax_whole_matrix(p):
    flat = p.raw.shape[:-2] + (-1,)
    weights = masked_softmax(p.scaled.reshape(flat), p.allowed.reshape(flat))
    return weights.reshape(p.raw.shape) @ p.V64


def _row_max_wrong_axis(p):
    blocked = np.where(p.allowed, p.scaled, -np.inf)
    shifted = np.nan_to_num(np.exp(blocked - np.max(blocked, axis=-2, keepdims=True)))
    total = shifted.sum(-1, keepdims=True)
    return shifted / np.where(total > 0, total, 1) @ p.V64


def _missing_keepdims(p):
    """A row's maximum, or sum, without keepdims: row j's number meets column j."""
    blocked = np.where(p.allowed, p.scaled, -np.inf)
    row_max = np.max(blocked, axis=-1, keepdims=True)
    exp = np.exp(blocked - _swap(np.where(np.isfinite(row_max), row_max, 0)))
    right = np.exp(blocked - row_max)
    sum_lost = right / _swap(right.sum(-1, keepdims=True))
    step = softmax_row.MISTAKES["missing_keepdims"].model(p.step)
    return [exp / exp.sum(-1, keepdims=True) @ p.V64, sum_lost @ p.V64, p.through(step)]


def _step(name):
    """The model of a mistake of 19.3 in the softmax step of backward."""

    def model(p):
        wrong = softmax_row.MISTAKES[name].model(p.step)
        return [p.through(g) for g in (wrong if isinstance(wrong, list) else [wrong])]

    return model


def _unmasked_backward(p):
    return attention_backward(p.G64, attention_forward(p.Q64, p.K64, p.V64, return_cache=True)[1])


_STEP = ("row_term_sign", "row_term_missing", "weights_factor_missing", "row_term_mean")
_STEP += ("row_term_without_weights", "jacobian_diagonal_only", "row_term_not_weighted")
MISTAKES.models(
    no_scaling=lambda p: p.attend(p.raw),
    scaled_by_d_k=lambda p: p.attend(p.raw / p.spec.d_k),
    scaled_by_sqrt_d_v=lambda p: p.attend(p.raw / math.sqrt(p.spec.d_v)),
    scaled_by_sqrt_T=lambda p: [p.attend(p.raw / math.sqrt(T)) for T in (p.spec.T_q, p.spec.T_k)],
    scaled_after_softmax=lambda p: p.attend(p.raw) / p.root,
    softmax_wrong_axis=_softmax_wrong_axis,
    softmax_whole_matrix=_softmax_whole_matrix,
    row_max_wrong_axis=_row_max_wrong_axis,
    missing_keepdims=_square(_missing_keepdims),
    mask_after_softmax=_masked(lambda p: masked_softmax(p.scaled) * p.allowed @ p.V64),
    mask_inverted=_masked(lambda p: p.attend(p.scaled, ~p.allowed)),
    mask_transposed=_masked(_square(lambda p: p.attend(p.scaled, _swap(p.allowed)))),
    mask_ignored=_masked(lambda p: p.attend(p.scaled, True)),
    mask_multiplied=_masked(lambda p: p.attend(p.scaled * p.allowed, True)),
    mask_added=_masked(lambda p: p.attend(p.scaled + p.allowed, True)),
    mask_replaced=_masked(lambda p: [p.attend(p.scaled, own) for own in p.own_masks()]),
    none_became_causal=lambda p: p.mask is None and [p.attend(p.scaled, m) for m in p.own_masks()],
    **{name: _step(name) for name in (*_STEP, "row_term_wrong_axis")},
    grad_QK_missing_scale=lambda p: p.through(p.grad_scores, p.root, p.root),
    grad_K_missing_scale=lambda p: p.through(p.grad_scores, 1, p.root),
    grad_Q_missing_scale=lambda p: p.through(p.grad_scores, p.root),
    grad_K_not_transposed=_square(
        lambda p: (p.grads[0], p.grad_scores @ p.Q64 / p.root, p.grads[2])
    ),
    transposes_swapped=_square(
        lambda p: (
            _swap(p.grad_scores) @ p.K64 / p.root,
            p.grad_scores @ p.Q64 / p.root,
            p.grads[2],
        )
    ),
    grad_V_not_transposed=_square(lambda p: (*p.grads[:2], p.weights @ p.G64)),
    backward_ignores_mask=_masked(_unmasked_backward),
)


# The findings a failure on a probe that adds something gets, by what it adds
_TOPICS = dict(widths="width_fails", mask="mask_form_fails", rectangular="rectangular_fails")
_TOPICS.update(batch="batch_axis_fails", none="mask_none_fails", float32="float32_inaccurate")
_RELATIONS = {"zero": "all_zeros", "sign": "output_off_by_factor", "factor": "output_off_by_factor"}
_RELATIONS.update(row_factors="rows_scaled", transposed="transposed_result", rows="wrong_rows")
_RELATIONS.update(some_rows="wrong_rows")
_SCALES = ("no_scaling", "scaled_by_d_k", "scaled_by_sqrt_d_v", "scaled_by_sqrt_T")
_FIXED_AXES = re.compile(r"transpose\([^()]*\(\s*0\s*,|transpose\(\s*0\s*,|permute\(")


# --------------------------------------------------------------------------------------
# Calling the student's pair, with each probe's context for the messages


class _Pair:
    """The student's forward and backward on one probe, with every array handed out watched."""

    def __init__(self, student, forward, backward):
        self.student, self.forward, self.backward, self.passed = student, forward, backward, []

    def run_forward(self, p):
        """The raw value forward returns, on fresh copies of the probe's inputs."""
        self.student.forget()
        Q, K, V = (array.copy() for array in (p.Q, p.K, p.V))
        mask = None if p.mask is None else p.mask.copy()
        self.student.hand_out("forward", Q=Q, K=K, V=V, mask=mask)
        keywords = {} if p.spec.mask == "omitted" else {"mask": mask}
        explain = functools.partial(_explain, self, p, False)
        return self.student.call(
            self.forward, "forward", Q, K, V, label=p.label, explain=explain, **keywords
        )

    def output(self, p, result):
        require_tuple(result, 2, "forward should return the pair (output, cache)")
        if shape_of(result[1]) == p.output.shape and not isinstance(result[0], np.ndarray):
            raise MISTAKES.stop("output_cache_swapped", label=p.label)
        explain = functools.partial(_explain, self, p, False)
        what = f"the output of forward {p.label}"
        return as_result(result[0], what, p.output.shape, explain), result[1]

    def run_backward(self, p, cache):
        grad_output = p.grad_output.copy()
        self.student.hand_out("backward", grad_output=grad_output)
        explain = functools.partial(_explain, self, p, True)
        result = self.student.call(
            self.backward, "backward", grad_output, cache, label=p.label, explain=explain
        )
        require_tuple(result, 3, "backward should return the triple (grad_Q, grad_K, grad_V)")
        shapes = [str(shape_of(value)) for value in result]
        wanted = [array.shape for array in (p.Q, p.K, p.V)]
        # Shapes that fit only in another order: the values say which order it is.
        reordered = sorted(shapes) == sorted(map(str, wanted))
        return tuple(
            as_result(
                value,
                f"{name} from backward {p.label}",
                np.shape(value) if reordered else want,
                explain,
            )
            for name, value, want in zip(_GRADS, result, wanted, strict=True)
        )

    def both(self, p):
        output, cache = self.output(p, self.run_forward(p))
        return output, self.run_backward(p, cache)


def _explain(pair, p, backward, name, message, error):
    """A shared finding (an exception, a shape, NaN) on probe ``p``, named by what ``p`` adds."""
    topic, text, finding = (
        _topic(p.spec),
        str(error),
        functools.partial(MISTAKES.finding, relation=message),
    )
    if p.spec.mask == "omitted" and isinstance(error, TypeError) and "mask" in text:
        return finding("forward_signature", what=f"fails without a mask ({message})")
    if name == "not_finite" and topic in _EXTREME:
        return _extreme(p, message.rstrip(".") + _BACKWARD_ONLY * backward)
    if name == "not_finite" and backward and topic not in _TOPICS:
        why = "Forward's output was finite, so the NaN arises in backward: does it use a blocked"
        why += " score's -inf, or divide 0 by 0, where it needs the weights?"
        return MISTAKES.finding(name, f"{message} {why}")._replace(hint=HINTS["backward"])
    if name not in ("raised", "wrong_shape", "not_finite"):
        return None
    if isinstance(error, ValueError) and "axes don't match" in text and _FIXED_AXES.search(message):
        return finding("transpose_axes_fixed")
    shape = re.search(r"has shape (\([^)]*\)), expected", message)
    if shape and not backward and len(re.findall(r"\d+", shape[1])) > p.output.ndim:
        return finding("extra_axes", scores=p.raw.shape)
    if p.spec.lead and name != "not_finite":
        found = _in_batch(pair, p, message)
        if isinstance(error, IndexError) and "boolean" in text and found.diagnosis != "batch_axes":
            return finding("mask_not_broadcast", mask=p.mask.shape, scores=p.raw.shape)
        return found
    if isinstance(error, ValueError) and ("matmul" in text or "not aligned" in text):
        return finding("matmul_shapes")
    if topic == "rectangular" or (topic in ("none", "float32") and name != "wrong_shape"):
        return _in_topic(pair, p, message)
    return None


_BACKWARD_ONLY = " (your forward is right here; backward does not survive these scores)"


def _in_batch(pair, p, words):
    """A failure with leading axes: a line that reverses every axis, or the axes in general."""
    line = pair.student.axis_reversing_line(lambda: pair.both(p))
    if line is None:
        return _in_topic(pair, p, words)
    shape = p.K.shape
    return MISTAKES.finding(
        "batch_axes",
        relation=words,
        shape=shape,
        reversed=shape[::-1],
        line=line[1],
        function=line[0],
    )


def _in_topic(pair, p, words):
    """A failure on a probe that adds something (a width, an axis, no mask ...), in its words."""
    right = f"on the {len(pair.passed)} probes before"
    if p.spec.lead:
        others = any(spec.lead for spec in pair.passed)
        right = "with other leading axes" if others else "without leading axes"
    return MISTAKES.finding(_TOPICS[_topic(p.spec)], relation=words, right=right, label=p.label)


def _extreme(p, words):
    name, why = _EXTREME[p.spec.scores]
    return MISTAKES.finding(name, relation=words, why=why)


# --------------------------------------------------------------------------------------
# Judging one probe


def _check(pair, spec):
    """Output and gradients of ``spec``'s probe right (and exact where they must be)."""
    p = probe(spec)
    result = pair.run_forward(p)
    _require_sound_rows(p, result)
    output, cache = pair.output(p, result)
    tol = max(tolerance(output), _LARGE_SCORE_TOLERANCE * p.extreme)
    if relative_error(output, p.output) >= tol:
        raise Stop(_diagnose(pair, p, (output,), tol))
    grads = pair.run_backward(p, cache)
    tol = max(tol, tolerance(*grads))
    if max(_errors(grads, p)) >= tol:
        raise Stop(_diagnose(pair, p, grads, tol))
    _require_exact_zeros(output, grads, p)
    answers = dict(zip(("output", *_GRADS), (output, *grads), strict=True))
    note_float32_answers(pair.student, answers, p.Q.dtype)
    promoted = [name for name, a in answers.items() if a.dtype != p.Q.dtype]
    if p.Q.dtype == np.float32 and promoted:
        pair.student.note(
            "float32_promoted",
            f"for float32 inputs your {', '.join(promoted)} come back as float64. A NumPy float64 "
            "scalar promotes a float32 array to float64 (NumPy 2): `np.sqrt(d_k)` is one; "
            "`math.sqrt(d_k)` gives a Python float, which keeps float32, as the library does. "
            "It passes, but a float32 model would silently run in float64.",
        )
    pair.passed.append(spec)


def _errors(grads, p):
    """Each gradient's relative error; a gradient that is 0 (T_k = 1) is judged against the
    others' size."""
    floor = 1e-2 * sum(np.linalg.norm(t) for t in p.grads) / 3
    return [
        error(g, t, floor) if g.shape == t.shape else np.inf
        for g, t in zip(grads, p.grads, strict=True)
    ]


def _require_sound_rows(p, result):
    """Rows of the output that are NaN, or 0 where they must not be, named by the probe."""
    raw = result[0] if isinstance(result, tuple | list) and result else None
    if not isinstance(raw, np.ndarray) or raw.dtype.kind != "f" or raw.shape != p.output.shape:
        return
    rows, right = raw.reshape(-1, raw.shape[-1]), p.output.reshape(-1, raw.shape[-1])
    empty = ~p.allowed.any(axis=-1).reshape(-1)
    mean = np.broadcast_to(p.V64.mean(axis=-2, keepdims=True), p.output.shape).reshape(rows.shape)
    if empty.any() and not np.isfinite(rows[empty]).all():
        raise MISTAKES.stop("masked_row_nan", where=p.where)
    if empty.any() and np.allclose(rows[empty], mean[empty]):
        raise MISTAKES.stop("masked_row_uniform", where=p.where)
    tol = max(tolerance(raw), _LARGE_SCORE_TOLERANCE * p.extreme)
    if np.any(rows[empty]) and np.isfinite(raw).all() and not MISTAKES.match(raw, p, tol):
        raise MISTAKES.stop("masked_row_not_zero", where=p.where, largest=np.abs(rows[empty]).max())
    broken = ~np.isfinite(rows).all(axis=-1) | (~rows.any(axis=-1) & right.any(axis=-1))
    if p.extreme and broken.any():
        rows = ", ".join(map(str, np.flatnonzero(broken)))
        raise Stop(_extreme(p, f"{p.where} rows {rows} of the output come out as NaN or 0"))


def _diagnose(pair, p, answers, tol):
    """Why the output (``answers`` of one) or the gradients (of three) are wrong on ``p``."""
    gradient, topic = len(answers) == 3, _topic(p.spec)
    truths = p.analytic if gradient else (p.output,)  # the exact gradients, for relations
    errors = _errors(answers, p) if gradient else [relative_error(answers[0], p.output)]
    order = permuted_match(answers, truths, tol) if gradient else None
    if order is not None or np.isinf(max(errors)):
        named = ", ".join(_GRADS[order.index(i)] for i in range(3)) if order else ""
        returned = f"it returns ({named})" if order else "the shapes fit only in another order"
        return MISTAKES.finding("gradients_wrong_order", label=p.label, returned=returned)
    name = MISTAKES.match(answers if gradient else answers[0], p, tol)
    scale = None if gradient or name not in (None, *_SCALES) else _fitted_scale(answers[0], p, tol)
    if scale is not None and (name is None or topic == "widths"):
        why = f" ({p.label})" + _ONE_WIDTH.format(MAIN.d_k) * (topic == "widths")
        return MISTAKES.finding(
            "wrong_scale", divisor=1 / scale, right=math.sqrt(p.spec.d_k), why=why
        )
    if name is not None:
        extra = _BATCH_SCALE if name in _SCALES else _BATCH_AXES
        message = f"{MISTAKES[name].message} ({p.label})." + extra * (topic == "batch")
        return MISTAKES.finding(name, message)
    misread = None if gradient else _keys_misread(answers[0], p, tol)
    if misread is not None and topic != "none":
        return MISTAKES.finding("keys_misread", label=p.label, shown=misread)
    parts, kinds = [], []
    names = _GRADS if gradient else ("output",)
    for n, answer, truth, err in zip(names, answers, truths, errors, strict=True):
        groups = _key_groups(p) if n in ("grad_K", "grad_V") else _query_groups(p)
        kind, words = _related(answer, truth, tol, groups) if err >= tol else ("", "is right")
        kinds.append(kind)
        parts.append(f"{n} {words}")
    words = f"{'backward' if gradient else 'forward'} {p.label}: " + "; ".join(parts)
    if misread is not None:  # with mask=None every key is readable
        words = f"forward {p.label} reads other keys than every key: {misread}"
    if topic in _EXTREME:
        return _extreme(p, words + _BACKWARD_ONLY * gradient)
    if topic in _TOPICS:
        return (
            _in_batch(pair, p, words + ".") if topic == "batch" else _in_topic(pair, p, words + ".")
        )
    factors = [
        constant_factor(a, t, tol)
        for a, t, e in zip(answers, truths, errors, strict=True)
        if e >= tol
    ]
    if gradient and None not in factors:
        twice = all(math.isclose(f, 1 / math.sqrt(p.spec.d_k), rel_tol=1e-3) for f in factors)
        return MISTAKES.finding("gradient_off_by_factor", relation=words, why=_FACTOR_WHY[twice])
    kind = next((k for k in kinds if k), None)
    hint = HINTS["backward"] if gradient else HINTS["forward"]
    imprecise = None if kind not in (None, "some_rows") else near_miss(words, max(errors), hint)
    if imprecise is not None:
        return imprecise
    name = _RELATIONS.get(kind, "wrong_gradient" if gradient else "wrong_output")
    name = "gradient_off_by_factor" if gradient and name == "output_off_by_factor" else name
    smallest = _smallest(pair, p.spec)
    if smallest != p.spec:
        words += ". It fails already " + label(smallest, *inputs(smallest)[:4])
    return MISTAKES.finding(name, relation=words, why=_FACTOR_WHY[False])._replace(hint=hint)


_ONE_WIDTH = (
    ": your scale was right at d_k = {}, so it is computed in a way that fits some widths only "
    "(a rounded square root, `math.isqrt`, a power of two, a constant kept from an earlier call?)"
)
_BATCH_SCALE = (
    " With leading axes, d_k is Q.shape[-1]: Q.shape[1] is a sequence length or a number of "
    "heads there."
)
_BATCH_AXES = (
    " With a leading batch axis, use axis=-1 for the rows and np.swapaxes(x, -1, -2) for "
    "transposes (axis=1 is the last axis only for 2-D input)."
)
_FACTOR_WHY = {
    True: "the scale 1/sqrt(d_k) is applied twice",
    False: "eqs. 19.3-19.5 carry no other constant than the scale 1/sqrt(d_k), once",
}


def _related(answer, truth, tol, groups):
    """The relation's kind and words; rows each off by a factor of their own are one too."""
    kind, words = relation(answer, truth, tol, groups) or (None, None)
    if kind is not None:
        return kind, words
    rows = zip(
        answer.reshape(-1, answer.shape[-1]), truth.reshape(-1, truth.shape[-1]), strict=True
    )
    factors = [constant_factor(a, t, tol) or 1.0 * (relative_error(a, t) < tol) for a, t in rows]
    if len(factors) > 1 and all(factors) and np.ptp(factors) > 1e-3:
        return "row_factors", (
            f"has each row a multiple of the right row, by factors from {min(factors):.3g} to "
            f"{max(factors):.3g}: is each row's normalisation (its weights' sum) missing or wrong?"
        )
    return None, f"is wrong (relative error {relative_error(answer, truth):.2g}), no known mistake"


def _query_groups(p):
    """Named sets of query rows, for saying where an output or grad_Q is wrong."""
    blocked = ~p.allowed.all(axis=-1)
    return (
        ("the queries whose mask blocks some key", blocked),
        ("the queries that may read every key", ~blocked),
        ("the queries with one readable key", p.allowed.sum(axis=-1) == 1),
    )


def _key_groups(p):
    """Named sets of key rows, for saying where grad_K or grad_V is wrong."""
    hidden = ~p.allowed.all(axis=-2)
    return (
        ("the keys some query may not read", hidden),
        ("the keys every query may read", ~hidden),
    )


def _smallest(pair, spec):
    """The smallest spec (fewer axes, positions and widths) on which the pair still fails."""
    for field, values in (("lead", [()]), ("T_q", [1, 2, 3]), ("T_k", [1, 2, 3]), ("d_k", [1, 2])):
        for value in (v for v in values if v != getattr(spec, field)):
            smaller = spec._replace(**{field: value})
            if (field != "lead" and value > getattr(spec, field)) or (
                not smaller.lead and smaller.mask in ("padding", "per example", "shared by heads")
            ):
                continue
            saved, failed = pair.student._handed_out, True
            try:
                small = probe(smaller)
                output, grads = pair.both(small)
                tol = max(tolerance(output, *grads), _LARGE_SCORE_TOLERANCE * small.extreme)
                failed = (
                    relative_error(output, small.output) >= tol or max(_errors(grads, small)) >= tol
                )
            except Stop:
                pass
            pair.student._handed_out = saved
            if failed:
                spec = smaller
                break
    return spec


def _fitted_scale(output, p, tol):
    """The scale c with ``output == softmax(c Q Kᵀ) V`` within ``tol``, when there is one."""

    def error(log_c):
        return relative_error(output, p.attend(p.raw * math.exp(log_c)))

    grid = np.linspace(math.log(1e-3), math.log(1e3), 121)
    best = min(grid, key=error)
    low, high = best - (grid[1] - grid[0]), best + (grid[1] - grid[0])
    for _ in range(60):  # golden-section search around the best grid point
        a, b = high - 0.618 * (high - low), low + 0.618 * (high - low)
        low, high = (low, b) if error(a) < error(b) else (a, high)
    return math.exp((low + high) / 2) if error((low + high) / 2) < tol else None


def _keys_misread(output, p, tol):
    """Words when each output row is right attention over SOME set of keys, and some set is
    not the one the mask allows: the rows say which keys the student's forward reads."""
    T_k = p.spec.T_k
    if T_k > 8:
        return None
    subsets = np.array(np.meshgrid(*[[False, True]] * T_k, indexing="ij")).reshape(T_k, -1).T
    values = np.broadcast_to(p.V64, p.output.shape[:-2] + p.V64.shape[-2:])
    wrong = []
    for index in np.ndindex(*p.output.shape[:-1]):
        rows = masked_softmax(np.broadcast_to(p.scaled[index], subsets.shape), subsets)
        errors = [relative_error(output[index], row) for row in rows @ values[index[:-1]]]
        best = int(np.argmin(errors))
        if errors[best] >= tol:
            return None
        if not np.array_equal(subsets[best], p.allowed[index]):
            wrong.append((index, subsets[best], p.allowed[index]))

    def keys(row):
        read = np.flatnonzero(row)
        return f"key{'s' * (read.size > 1)} " + ", ".join(map(str, read)) if read.size else "no key"

    def query(index):
        return f"query {index[-1]}" + f" of batch index {index[:-1]}" * bool(p.spec.lead)

    shown = [f"{query(i)} reads {keys(r)} (the mask allows {keys(m)})" for i, r, m in wrong[:3]]
    return "; ".join(shown) + f"; and {len(wrong) - 3} more" * (len(wrong) > 3) if wrong else None


def _require_exact_zeros(output, grads, p):
    """Unreadable queries: output and grad_Q exactly 0; keys no query with a gradient may read:
    grad_K and grad_V exactly 0."""
    if p.mask is None:
        return
    empty = ~p.allowed.any(axis=-1)
    read = np.any(p.allowed & np.any(p.grad_output != 0, axis=-1)[..., :, None], axis=-2)
    if np.any(output[empty] != 0):
        raise MISTAKES.stop(
            "masked_row_not_zero", where=p.where, largest=np.abs(output[empty]).max()
        )
    if np.any(grads[0][empty] != 0):
        size = f"{np.abs(grads[0][empty]).max():.1g}"
        raise MISTAKES.stop(
            "masked_not_exactly_zero",
            where=p.where,
            what=f"a query with no readable key gets grad_Q of size {size}",
            why="Its output does not depend on it: its weights, and score gradients, are all 0.",
        )
    leaked = {
        n: np.abs(g[~read]).max()
        for n, g in zip(_GRADS[1:], grads[1:], strict=True)
        if np.any(g[~read])
    }
    if not leaked:
        return
    names, largest = " and ".join(leaked), max(leaked.values())
    if largest < 1e-8 * max(np.abs(g).max() for g in grads):
        raise MISTAKES.stop(
            "masked_not_exactly_zero",
            where=p.where,
            what=f"keys that no query with an output gradient may read get {names} of about "
            f"{largest:.1g}",
            why="A blocked key's weight is exactly 0 (exp(-inf) = 0), and so is its gradient: "
            "something adds a little to the weights or the scores (an epsilon?).",
        )
    if MISTAKES.match(grads, p, tolerance(*grads), ("backward_ignores_mask",)):
        raise Stop(
            MISTAKES.finding("backward_ignores_mask")._replace(
                message=f"{MISTAKES['backward_ignores_mask'].message} ({p.label})."
            )
        )
    raise MISTAKES.stop("gradient_into_masked", label=p.label, names=names, largest=largest)


def _check_cache_order(pair):
    """Three forwards, then backward on the first cache: backward must use its cache alone."""
    first, *others = (probe(spec) for spec in CACHE_PROBES)
    cache = pair.output(first, pair.run_forward(first))[1]
    for other in others:
        pair.output(other, pair.run_forward(other))
    try:
        grads = pair.run_backward(first, cache)
        if max(_errors(grads, first)) < tolerance(*grads):
            return
        what = "gives other gradients than right after its own forward"
    except Stop as stop:  # a backward that fails only here fails because of the calls before
        what = f"fails ({stop.findings[0].message})"
    others = " and then ".join(other.label for other in others)
    raise MISTAKES.stop("state_between_calls", first=first.label, others=others, what=what)


def _mask_is_fourth(forward):
    """False only when the signature is known and forward(Q, K, V, mask) would not bind mask."""
    try:
        signature = inspect.signature(forward)
        arguments = signature.bind(0, 0, 0, "the mask").arguments
    except TypeError:
        return False
    except ValueError:
        return True
    variadic = any(p.kind is p.VAR_POSITIONAL for p in signature.parameters.values())
    return variadic or arguments.get("mask") == "the mask"


def _findings(student, forward, backward):
    require_callable(forward, "forward")
    require_callable(backward, "backward")
    if not accepts_keyword(forward, "mask"):
        raise MISTAKES.stop("forward_signature", what="takes no argument called `mask`")
    if not _mask_is_fourth(forward):
        raise MISTAKES.stop(
            "forward_signature", what="cannot take the mask as forward(Q, K, V, mask)"
        )
    pair = _Pair(student, forward, backward)
    for spec in PROBES:
        _check(pair, spec)
    _check_cache_order(pair)
    float32 = "float32_promoted" not in (note.diagnosis for note in student.notes)
    return MISTAKES.checked(probes=len(PROBES), returned=", returned as float32" * float32)


def check_exercise_19_4(forward, backward):
    """Check a masked attention forward/backward pair by finite differences (exercise 19.4 (a)).

    ``forward(Q, K, V, mask=None) -> (output, cache)`` must apply exactly the
    mask it is given (True = may read; no mask: plain attention) and give a
    query with no readable key an output row of exactly 0;
    ``backward(grad_output, cache) -> (grad_Q, grad_K, grad_V)``. The checker
    runs the pair on every probe of ``PROBES`` (the module docstring's table:
    widths, lengths, leading axes, mask forms, dtypes, extreme scores, calls in
    a row and caches out of order), compares the gradients with central finite
    differences in float64 on the first probe and with the library's backward
    on the others, and names the mistake. No array it hands out may change.

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
        "a",
        "masked attention, forward and backward",
        lambda student: _findings(student, forward, backward),
    )

"""The exercise checkers pass right answers, however written, and name each mistake."""

from __future__ import annotations

import exercise_mistakes as student
import numpy as np
import pytest

from attention_lib import (
    attention_backward,
    attention_forward,
    causal_mask,
    pitfalls,
    relative_error,
    softmax_backward,
)
from attention_lib import exercises as ex
from attention_lib.exercises import (
    ExerciseReport,
    check_exercise_19_1,
    check_exercise_19_2,
    check_exercise_19_3,
    check_exercise_19_4,
)

RIGHT_19_1 = {"query": "b", "key": "c", "value": "a", "values_doubled": "a", "equal_scores": "c"}


def not_implemented(*args, **kwargs):
    raise NotImplementedError()


def library_forward(Q, K, V, mask=None):
    return attention_forward(Q, K, V, mask, return_cache=True)


def drop_last_key_gradient(grad_output, cache):
    grad_Q, grad_K, grad_V = attention_backward(grad_output, cache)
    return grad_Q, grad_K[..., :-1, :], grad_V


# --------------------------------------------------------------------------------------
# 19.1


def test_19_1_right_answers_pass_whatever_the_case_or_form():
    assert check_exercise_19_1(RIGHT_19_1).passed
    shouted = {name: f" {choice.upper()} " for name, choice in RIGHT_19_1.items()}
    assert check_exercise_19_1(lambda: shouted).passed


@pytest.mark.parametrize("question", sorted(ex._QUESTIONS_19_1))
def test_19_1_every_wrong_choice_is_explained(question):
    right, explanations = ex._QUESTIONS_19_1[question]
    choices = ex._CHOICES_19_1[question]
    assert set(explanations) == set(choices) - {right}  # one explanation per wrong choice
    for choice in explanations:
        report = check_exercise_19_1({**RIGHT_19_1, question: choice})
        assert report.diagnoses == (f"{question}_choice",)
        assert explanations[choice] in " ".join(report.findings[0].message.split())


def test_19_1_untouched_scaffold_and_empty_answers_are_not_attempted():
    for answers in (not_implemented, dict.fromkeys(RIGHT_19_1)):
        report = check_exercise_19_1(answers)
        assert not report.attempted and not report.passed
        assert "not attempted yet" in str(report)


def test_19_1_partial_invalid_and_unknown_answers_are_findings():
    report = check_exercise_19_1({**RIGHT_19_1, "key": None, "value": "z", "values": "a"})
    assert report.diagnoses == ("unknown_question", "not_answered", "invalid_choice")
    assert check_exercise_19_1(["b", "c", "a"]).diagnoses == ("wrong_type",)


# --------------------------------------------------------------------------------------
# 19.2

RIGHT_ESTIMATES = [
    pytest.param(student.variance_estimate(), id="chapter-listing"),
    pytest.param(student.variance_estimate(statistic=lambda x: np.var(x, ddof=1)), id="ddof-1"),
]


@pytest.mark.parametrize("estimate", RIGHT_ESTIMATES)
def test_19_2_right_estimates_pass(estimate):
    report = check_exercise_19_2(estimate)
    assert report.passed, str(report)


def test_19_2_a_loop_passes_at_a_sample_count_it_can_afford():
    assert check_exercise_19_2(student.variance_by_loop, samples=13_000, widths=(1, 8)).passed


@pytest.mark.parametrize(
    ("estimate", "diagnosis"),
    [
        (student.variance_estimate(statistic=np.std), "std_instead_of_variance"),
        (student.variance_estimate(sum_axis=0), "sum_over_wrong_axis"),
        (student.variance_estimate(divisor=lambda width: width), "divided_by_d_k"),
        (student.variance_estimate(divisor=np.sqrt), "divided_by_sqrt_d_k"),
        (student.variance_estimate(fixed_samples=500), "too_few_samples"),
        (student.variance_unseeded, "not_reproducible"),
        (lambda width, samples, seed: None, "returned_none"),
        (lambda width, samples, seed: np.ones(3), "wrong_type"),
        (lambda width, samples, seed: float("nan"), "not_finite"),
        (lambda width, samples, seed: width + 3.0, "wrong_estimate"),
        (42, "not_a_function"),
    ],
)
def test_19_2_each_mistake_is_named(estimate, diagnosis):
    report = check_exercise_19_2(estimate)
    assert report.diagnoses == (diagnosis,), str(report)


def test_19_2_an_answer_the_checker_cannot_read_is_a_finding():
    class Stubborn:
        def __float__(self):
            raise RuntimeError("no float for you")

    report = check_exercise_19_2(lambda width, samples, seed: Stubborn())
    assert report.diagnoses == ("unreadable_answer",)
    assert "RuntimeError: no float for you" in str(report)


def test_19_2_mean_over_the_width_is_the_divided_by_d_k_mistake():
    mean_instead_of_sum = student.variance_estimate(divisor=lambda width: width)
    assert check_exercise_19_2(mean_instead_of_sum).diagnoses == ("divided_by_d_k",)


def test_19_2_too_few_samples_requested_is_named_before_anything_runs():
    calls = []

    def estimate(width, samples, seed):
        calls.append(width)
        return float(width)

    report = check_exercise_19_2(estimate, samples=500)
    assert report.diagnoses == ("too_few_samples",) and calls == []
    assert "12,800" in str(report)  # width 1: 4 * sqrt(8 / n) <= 0.1


def test_19_2_tolerance_follows_the_sample_count():
    def off_by(standard_errors):
        def estimate(width, samples, seed):
            return width + standard_errors * ex.variance_standard_error(width, samples)

        return estimate

    assert check_exercise_19_2(off_by(3.5)).passed
    assert check_exercise_19_2(off_by(4.5)).diagnoses == ("wrong_estimate",)

    # the same absolute offset, judged with four times the samples (half the error): too far
    def fixed_offset(width, samples, seed):
        return width + 3.5 * ex.variance_standard_error(width, 20_000)

    assert check_exercise_19_2(fixed_offset).passed
    assert not check_exercise_19_2(fixed_offset, samples=80_000).passed


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [({"samples": 2.5}, TypeError), ({"samples": 1}, ValueError), ({"widths": ()}, ValueError)],
)
def test_19_2_bad_checker_arguments_are_refused_clearly(kwargs, error):
    with pytest.raises(error, match=r"samples|widths"):
        check_exercise_19_2(student.variance_estimate(), **kwargs)


# --------------------------------------------------------------------------------------
# 19.3


@pytest.mark.parametrize(
    "implementation",
    [
        softmax_backward,
        student.row_backward_right,
        student.row_backward_einsum,
        student.row_backward_jacobian_loop,
        student.row_backward_float32,
    ],
)
def test_19_3_right_answers_pass(implementation):
    report = check_exercise_19_3(implementation)
    assert report.passed, str(report)


@pytest.mark.parametrize(
    ("implementation", "diagnosis"),
    [
        (pitfalls.softmax_backward_sign_error, "row_term_sign"),
        (student.row_backward_missing_row_term, "row_term_missing"),
        (student.row_backward_sum_over_axis_0, "row_term_wrong_axis"),
        (student.row_backward_axis_1, "row_term_wrong_axis"),
        (student.row_backward_missing_weights, "weights_factor_missing"),
        (lambda weights, grad_weights: None, "returned_none"),
        (lambda weights, grad_weights: weights[..., :-1], "wrong_shape"),
        (lambda weights, grad_weights: weights.astype(np.float16), "wrong_dtype"),
        (lambda weights, grad_weights: weights / 0.0, "not_finite"),
        (lambda weights, grad_weights: 2 * weights * grad_weights, "wrong_gradient"),
        (lambda weights, grad_weights: "grad", "wrong_dtype"),
        (not_implemented, None),
    ],
)
def test_19_3_each_mistake_is_named(implementation, diagnosis):
    report = check_exercise_19_3(implementation)
    if diagnosis is None:
        assert not report.attempted
    else:
        assert report.diagnoses == (diagnosis,), str(report)


def test_19_3_the_sign_error_differs_far_beyond_the_float32_tolerance():
    """The tolerance argument: each modelled mistake is >= 100x the float32 tolerance away."""
    for number, shape in enumerate(ex.SOFTMAX_PROBE_SHAPES):
        scores, mask, weights, grad_weights = ex._softmax_probe(shape, seed=193 + number)
        truth = ex._softmax_truth(scores, mask, grad_weights)
        for _, model in ex._softmax_backward_models(weights, grad_weights):
            assert relative_error(model, truth) > 100 * ex.FLOAT32_TOLERANCE


def test_19_3_a_student_exception_is_reported_with_the_line_of_student_code():
    def softmax_row_backward(weights, grad_weights):
        row_dot = np.sum(grad_weights * weights, axis=-1)
        return weights * (grad_weights - row_dot)  # no keepdims: (3, 5) - (3,) fails

    report = check_exercise_19_3(softmax_row_backward)
    assert report.diagnoses == ("raised",)
    text = str(report)
    assert "ValueError" in text and "in softmax_row_backward" in text
    assert "return weights * (grad_weights - row_dot)" in text
    assert "Traceback" not in text and "exercises.py" not in text


# --------------------------------------------------------------------------------------
# 19.4


def pair(attention):
    return attention.forward, attention.backward


@pytest.mark.parametrize(
    ("forward", "backward"),
    [
        pytest.param(library_forward, attention_backward, id="library"),
        pytest.param(*pair(student.StudentAttention()), id="plain-numpy"),
        pytest.param(*pair(student.EinsumAttention()), id="einsum"),
        pytest.param(student.loop_forward, student.loop_backward, id="loops"),
        pytest.param(*pair(student.Float32Attention()), id="float32"),
    ],
)
def test_19_4_right_answers_pass(forward, backward):
    report = check_exercise_19_4(forward, backward)
    assert report.passed, str(report)


@pytest.mark.parametrize(
    ("attention", "diagnosis"),
    [
        (student.NoScaling, "no_scaling"),
        (student.ScaledByDk, "scaled_by_d_k"),
        (student.SoftmaxOverColumns, "softmax_wrong_axis"),
        (student.MaskAfterSoftmax, "mask_after_softmax"),
        (student.MaskInverted, "mask_inverted"),
        (student.OwnTriuMask, "mask_inverted"),
        (student.MaskIgnored, "mask_ignored"),
        (student.NoMaxSubtraction, "no_max_subtraction"),
        (student.LargeNegativeFill, "masked_row_uniform"),
        (student.UnguardedNegInf, "masked_row_nan"),
        (student.ScaledBySqrtDModel, "wrong_output"),
        (student.PlainTranspose, "batch_axes"),
        (student.ReturnsOutputOnly, "wrong_type"),
        (student.SignError, "row_term_sign"),
        (student.MissingRowTerm, "row_term_missing"),
        (student.GradKNotTransposed, "grad_K_not_transposed"),
        (student.GradKMissingScale, "grad_K_missing_scale"),
        (student.GradQMissingScale, "grad_Q_missing_scale"),
        (student.GradientsInWrongOrder, "gradients_wrong_order"),
        (student.QAndKSwapped, "gradients_wrong_order"),
        (student.GradVNotTransposed, "grad_V_not_transposed"),
        (student.LeaksIntoMaskedKeys, "gradient_into_masked"),
    ],
    ids=lambda value: value if isinstance(value, str) else value.__name__,
)
def test_19_4_each_mistake_is_named(attention, diagnosis):
    report = check_exercise_19_4(*pair(attention()))
    assert report.diagnoses == (diagnosis,), str(report)


@pytest.mark.parametrize(
    ("attention", "returned"),
    [
        (student.GradientsInWrongOrder, "(grad_V, grad_K, grad_Q)"),
        (student.QAndKSwapped, "(grad_K, grad_Q, grad_V)"),
    ],
)
def test_19_4_the_wrong_order_is_spelled_out(attention, returned):
    assert f"it returns {returned}" in " ".join(
        str(check_exercise_19_4(*pair(attention()))).split()
    )


def test_19_4_the_library_pitfall_backward_is_named():
    report = check_exercise_19_4(library_forward, pitfalls.attention_backward_with_sign_error)
    assert report.diagnoses == ("row_term_sign",)


@pytest.mark.parametrize(
    ("forward", "backward", "diagnosis"),
    [
        (not_implemented, attention_backward, None),
        (library_forward, not_implemented, None),
        (library_forward, lambda grad_output, cache: None, "returned_none"),
        (lambda Q, K, V, mask=None: None, attention_backward, "returned_none"),
        (library_forward, lambda grad_output, cache: (grad_output,), "wrong_type"),
        ("forward", attention_backward, "not_a_function"),
        (library_forward, drop_last_key_gradient, "wrong_shape"),
    ],
)
def test_19_4_scaffolds_and_malformed_returns(forward, backward, diagnosis):
    report = check_exercise_19_4(forward, backward)
    if diagnosis is None:
        assert not report.attempted
    else:
        assert report.diagnoses == (diagnosis,), str(report)


def test_19_4_odd_returns_are_findings_not_tracebacks():
    def text_output(Q, K, V, mask=None):
        return [["a"] * 3] * 5, None

    def ragged_gradients(grad_output, cache):
        return [[1.0, 2.0], [3.0]], [[1.0]], [[1.0]]

    assert check_exercise_19_4(text_output, attention_backward).diagnoses == ("wrong_dtype",)
    assert check_exercise_19_4(library_forward, ragged_gradients).diagnoses == ("wrong_type",)


def test_19_4_a_forward_that_edits_the_mask_in_place_is_judged_on_the_mask_given():
    def forward(Q, K, V, mask=None):
        result = library_forward(Q, K, V, mask)
        if mask is not None:
            mask[...] = True  # vandalises its argument after using it
        return result

    assert check_exercise_19_4(forward, attention_backward).passed


def test_19_4_modelled_mistakes_differ_far_beyond_the_float32_tolerance():
    Q, K, V, grad_output = ex._probe_inputs((), 5, 5, 4, 3, seed=194)
    mask = causal_mask(5)
    reference, truth = ex._reference(Q, K, V, mask, grad_output)
    for _, output in ex._forward_models(Q, K, V, mask):
        if not np.allclose(output, reference):  # mask_ignored etc. are all different here
            assert relative_error(output, reference) > 100 * ex.FLOAT32_TOLERANCE
    for name, grads in ex._backward_models(Q, K, V, mask, grad_output):
        worst = max(relative_error(g, t) for g, t in zip(grads, truth, strict=True))
        assert worst > 100 * ex.FLOAT32_TOLERANCE, name


def test_19_4_the_checker_passes_the_causal_mask_explicitly():
    seen = []

    def forward(Q, K, V, mask=None):
        seen.append(None if mask is None else mask.shape)
        return library_forward(Q, K, V, mask)

    assert check_exercise_19_4(forward, attention_backward).passed
    assert seen[0] == (5, 5) and (3, 6) in seen and None in seen


# --------------------------------------------------------------------------------------
# The report itself


def test_reports_read_the_same_every_time_and_hold_no_addresses():
    reports = [
        check_exercise_19_3(pitfalls.softmax_backward_sign_error),
        check_exercise_19_4(*pair(student.NoScaling())),
        check_exercise_19_2(student.variance_estimate()),
        check_exercise_19_1(RIGHT_19_1),
    ]
    again = [
        check_exercise_19_3(pitfalls.softmax_backward_sign_error),
        check_exercise_19_4(*pair(student.NoScaling())),
        check_exercise_19_2(student.variance_estimate()),
        check_exercise_19_1(RIGHT_19_1),
    ]
    for report, repeat in zip(reports, again, strict=True):
        assert str(report) == str(repeat) == repr(report)
        assert "0x" not in str(report)
        assert all(len(line) <= ex.WIDTH for line in str(report).splitlines())
    assert str(reports[0]).startswith("Exercise 19.3 · softmax row backward: not yet")
    assert str(reports[3]).startswith("Exercise 19.1 · soft lookup: passed")


def test_report_passed_needs_an_attempt_and_no_findings():
    assert ExerciseReport("19.9", "t").passed
    assert not ExerciseReport("19.9", "t", attempted=False).passed
    assert not ExerciseReport("19.9", "t", (ex.Finding("x", "y"),)).passed


def test_student_warnings_do_not_escape_under_warnings_as_errors():
    # pytest turns warnings into errors here; the overflow must still be diagnosed by name
    assert check_exercise_19_4(*pair(student.NoMaxSubtraction())).diagnoses == (
        "no_max_subtraction",
    )

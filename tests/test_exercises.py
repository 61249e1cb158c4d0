"""The exercise checkers pass right answers, however written, and name each mistake.

Every wrong answer here is asserted by its diagnosis name; every ✓ line a
passing report prints has a planted answer that breaks exactly that property
and fails (CHECKED_LINES). 19.2 runs its mean test at widths (1, 8, 64) where
width 512 adds nothing but time.
"""

from __future__ import annotations

import exercise_mistakes as student
import numpy as np
import pytest

from attention_lib import (
    attention_backward,
    attention_forward,
    numerical_gradient,
    pitfalls,
    relative_error,
    softmax_backward,
    variance_standard_error,
)
from attention_lib.exercises import (
    ExerciseReport,
    Finding,
    _attention_probes,
    _report,
    check_exercise_19_1,
    check_exercise_19_2,
    check_exercise_19_3,
    check_exercise_19_4,
    check_exercise_19_4c,
    masked_attention,
    score_variance,
    soft_lookup,
    softmax_row,
)
from attention_lib.exercises._harness import FLOAT32_TOLERANCE

RIGHT_19_1 = {"query": "b", "key": "c", "value": "a", "values_doubled": "a", "equal_scores": "c"}
FAST = {"widths": (1, 8, 64)}


def not_implemented(*args, **kwargs):
    raise NotImplementedError()


def library_forward(Q, K, V, mask=None):
    return attention_forward(Q, K, V, mask, return_cache=True)


def drop_last_key_gradient(grad_output, cache):
    grad_Q, grad_K, grad_V = attention_backward(grad_output, cache)
    return grad_Q, grad_K[..., :-1, :], grad_V


def pair(attention):
    attention = attention()
    return attention.forward, attention.backward


def library_central_difference(f, X, h=None):
    return numerical_gradient(lambda X: f(X), {"X": X}, "X", eps=h or 1e-6)


RIGHT_GRADIENT_ERRORS = student.gradient_errors_with(
    student.central_right, student.symmetric_relative_error
)


def text(report):
    """The report's words with line breaks and indentation folded, for phrase searches."""
    return " ".join(str(report).split())


# --------------------------------------------------------------------------------------
# 19.1


def test_19_1_right_answers_pass_whatever_the_case_or_form():
    assert check_exercise_19_1(RIGHT_19_1).passed
    shouted = {name: f" {choice.upper()} " for name, choice in RIGHT_19_1.items()}
    assert check_exercise_19_1(lambda: shouted).passed


@pytest.mark.parametrize("question", sorted(soft_lookup._QUESTIONS))
def test_19_1_every_wrong_choice_is_explained(question):
    right, explanations = soft_lookup._QUESTIONS[question]
    choices = soft_lookup._CHOICES[question]
    assert set(explanations) == set(choices) - {right}  # one explanation per wrong choice
    for choice in explanations:
        report = check_exercise_19_1({**RIGHT_19_1, question: choice})
        assert report.diagnoses == (f"{question}_choice",)
        assert explanations[choice] in text(report)


def test_19_1_untouched_scaffold_and_empty_answers_are_not_attempted():
    for answers in (not_implemented, dict.fromkeys(RIGHT_19_1)):
        report = check_exercise_19_1(answers)
        assert not report.attempted and not report.passed
        assert "not attempted yet" in str(report)


def test_19_1_partial_invalid_and_unknown_answers_are_findings():
    report = check_exercise_19_1({**RIGHT_19_1, "key": None, "value": "z", "values": "a"})
    assert report.diagnoses == ("unknown_question", "not_answered", "invalid_choice")


def test_19_1_the_wrong_type_message_gives_no_answer_away():
    report = check_exercise_19_1(["b", "c", "a"])
    assert report.diagnoses == ("wrong_type",)
    for question, (right, _) in soft_lookup._QUESTIONS.items():
        assert f"'{question}': '{right}'" not in str(report)


# --------------------------------------------------------------------------------------
# 19.2

RIGHT_ESTIMATES = [
    pytest.param(student.variance_estimate(), id="chapter-listing"),
    pytest.param(student.variance_estimate(statistic=lambda x: np.var(x, ddof=1)), id="ddof-1"),
    pytest.param(student.variance_einsum_float32, id="einsum-float32"),
    pytest.param(student.variance_mean_of_squares, id="mean-of-squares"),
]


@pytest.mark.parametrize("estimate", RIGHT_ESTIMATES)
def test_19_2_right_estimates_pass(estimate):
    report = check_exercise_19_2(estimate, **FAST)
    assert report.passed, str(report)


def test_19_2_the_notebook_default_passes_at_every_width():
    assert check_exercise_19_2(student.variance_estimate()).passed


def test_19_2_a_loop_passes_at_a_sample_count_it_can_afford():
    assert check_exercise_19_2(student.variance_by_loop, samples=16_000, widths=(1, 8)).passed


@pytest.mark.parametrize(
    ("estimate", "diagnosis"),
    [
        (student.variance_estimate(statistic=np.std), "std_instead_of_variance"),
        (student.variance_estimate(sum_axis=0), "sum_over_wrong_axis"),
        (student.variance_estimate(divisor=lambda width: width), "divided_by_d_k"),
        (student.variance_estimate(divisor=np.sqrt), "divided_by_sqrt_d_k"),
        (student.variance_products_not_summed, "products_not_summed"),
        (student.variance_same_seed_generators, "same_vectors"),
        (student.variance_estimate(statistic=np.mean), "mean_instead_of_variance"),
        (student.variance_uniform_entries, "uniform_entries"),
        (student.variance_fixed_seed, "seed_unused"),
        (student.variance_no_sampling, "seed_unused"),
        (student.variance_one_query_reused, "one_vector_reused"),
        (student.variance_all_pairs, "all_pairs"),
        (student.variance_estimate(fixed_samples=500), "samples_ignored"),
        (student.variance_hard_coded_samples, "samples_ignored"),
        (student.variance_tenth_of_samples, "too_few_samples"),
        (student.variance_unseeded, "not_reproducible"),
        (lambda width, samples, seed: None, "returned_none"),
        (lambda width, samples, seed: np.ones(3), "wrong_type"),
        (lambda width, samples, seed: float("nan"), "not_finite"),
        (42, "not_a_function"),
    ],
)
def test_19_2_each_mistake_is_named(estimate, diagnosis):
    report = check_exercise_19_2(estimate, **FAST)
    assert report.diagnoses == (diagnosis,), str(report)


def test_19_2_an_unused_seed_is_its_own_diagnosis_in_the_issues_words():
    report = check_exercise_19_2(student.variance_no_sampling)
    assert "your estimate does not change with the seed: " in text(report)
    assert "Is `seed` used" in text(report) and "does the function sample?" in text(report)


def test_19_2_fake_noise_of_the_right_size_passes_as_the_module_docstring_admits():
    assert check_exercise_19_2(student.variance_fake_noise, **FAST).passed
    assert "cannot tell it from one" in " ".join(score_variance.__doc__.split())


def test_19_2_an_answer_that_is_not_a_float_is_named():
    class Stubborn:
        def __float__(self):
            raise RuntimeError("no float for you")

    report = check_exercise_19_2(lambda width, samples, seed: Stubborn())
    assert report.diagnoses == ("wrong_type",)
    assert "should return one number, a float, got Stubborn" in text(report)
    truncated = check_exercise_19_2(student.red2_v_int, **FAST)
    assert truncated.diagnoses == ("wrong_type",) and "`int(...)`" in text(truncated)


def test_19_2_too_few_samples_requested_is_named_before_anything_runs():
    calls = []

    def estimate(width, samples, seed):
        calls.append(width)
        return float(width)

    report = check_exercise_19_2(estimate, samples=500)
    assert report.diagnoses == ("too_few_samples",) and calls == []
    z = score_variance.mean_z(score_variance.VARIANCE_WIDTHS)
    assert f"{int(np.ceil(8 * (z / 0.1) ** 2)):,}" in str(report)  # width 1: z sqrt(8 / n) <= 0.1


def test_19_2_the_mean_tolerance_follows_the_sample_count():
    z = score_variance.mean_z((1, 8, 64))

    def off_by(standard_errors, samples=20_000):
        def estimate(width, count, seed):  # right scatter, shifted mean
            return student.variance_estimate()(width, count, seed) + standard_errors * (
                variance_standard_error(width, samples)
            )

        return estimate

    assert check_exercise_19_2(off_by(0.0), **FAST).passed
    assert check_exercise_19_2(off_by(z + 2), **FAST).diagnoses == ("estimate_biased",)
    # the same absolute offset, judged with sixteen times the samples (a quarter the error)
    assert check_exercise_19_2(off_by(z / 2), **FAST).passed
    assert not check_exercise_19_2(off_by(z / 2), samples=320_000, widths=(1, 8)).passed


def test_19_2_the_chi_square_quantiles_are_right():
    # two degrees of freedom have a closed form: P(X > x) = exp(-x / 2)
    for p in (1e-5, 0.3, 0.9):
        assert np.isclose(score_variance.chi_square_quantile(p, 2), -2 * np.log1p(-p), rtol=1e-9)
        upper = score_variance.chi_square_quantile(p, 2, upper=True)
        assert np.isclose(upper, -2 * np.log(p), rtol=1e-9)
    # Wilson-Hilferty is good to a few parts in 1e4 for the median at 31 degrees of freedom
    assert np.isclose(score_variance.chi_square_quantile(0.5, 31), 31 * (1 - 2 / 279) ** 3, 1e-3)


def test_19_2_a_right_estimator_stays_inside_the_bands_over_many_seeds():
    """The false-rejection bound rests on the estimates being near normal with the stated
    standard error; several groups of seeds per scatter probe show it, and none is rejected."""
    estimate = student.variance_estimate()
    for width, samples, seeds in score_variance.SCATTER_PROBES:
        groups = max(4, 2048 // seeds)
        values = np.array([estimate(width, samples, seed) for seed in range(groups * seeds)])
        z = (values - width) / variance_standard_error(width, samples)
        assert abs(z.mean()) < 4 / np.sqrt(z.size)  # the mean is d_k ...
        assert abs(z.var() - 1) < 4 * np.sqrt(2 / z.size)  # ... and the spread is one SE
        # near normal: the tails the band relies on are not heavier than a normal's
        kurtosis = np.mean(z**4) / np.mean(z**2) ** 2 - 3
        assert abs(kurtosis) < 0.5
        low, high = score_variance.SCATTER_BANDS[width, samples, seeds]
        ratios = [
            np.var(group, ddof=1) / variance_standard_error(width, samples) ** 2
            for group in values.reshape(groups, -1)
        ]
        assert all(low <= ratio <= high for ratio in ratios)
    assert score_variance.FALSE_REJECTION == 1e-4
    spent = score_variance.MEAN_BUDGET + 2 * len(score_variance.SCATTER_PROBES) * (
        score_variance.TAIL_BUDGET
    )
    assert spent <= 0.8 * score_variance.FALSE_REJECTION  # the rest covers the approximations


def test_19_2_the_scatter_bands_allow_for_the_estimates_kurtosis():
    """The band's degrees of freedom shrink with the excess kurtosis of (q·k)², which the
    moments give exactly: at d_k = 1 from 1,000 samples it is about 0.16."""
    assert np.isclose(score_variance.excess_kurtosis(1, 1_000), 9984 / 64 / 1_000)
    rng = np.random.default_rng(2)
    squares = np.sum(rng.standard_normal((2, 400_000, 3)).prod(axis=0), axis=1) ** 2
    centred = squares - squares.mean()
    measured = np.mean(centred**4) / np.mean(centred**2) ** 2 - 3
    assert np.isclose(measured / 1_000, score_variance.excess_kurtosis(3, 1_000), rtol=0.2)
    narrow, wide = (
        score_variance.scatter_band(1, 1_000, 512),
        score_variance.scatter_band(1, 1_000_000, 512),
    )
    assert narrow[0] < wide[0] and narrow[1] > wide[1]


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
        student.row_backward_reshaped_rows,
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
        (student.row_backward_mean_row_term, "row_term_mean"),
        (student.row_backward_row_term_without_weights, "row_term_without_weights"),
        (student.row_backward_no_keepdims, "missing_keepdims"),
        (student.row_backward_zeros, "returned_zeros"),
        (student.row_backward_in_place, "modified_input"),
        (student.row_backward_epsilon, "masked_not_zero"),
        (student.row_backward_float32_sloppy, "float32_inaccurate"),
        (lambda weights, grad_weights: None, "returned_none"),
        (lambda weights, grad_weights: weights[..., :-1], "wrong_shape"),
        (lambda weights, grad_weights: weights.astype(np.float16), "wrong_dtype"),
        (lambda weights, grad_weights: weights / 0.0, "not_finite"),
        (
            lambda weights, grad_weights: 2 * softmax_backward(weights, grad_weights),
            "scaled_by_constant",
        ),
        (lambda weights, grad_weights: grad_weights, "returned_an_input"),
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


def test_19_3_an_answer_kept_from_an_earlier_call_of_the_same_shape_fails():
    answers = {}

    def memoised(weights, grad_weights):
        key = (np.shape(weights), np.asarray(weights).dtype)
        return answers.setdefault(key, softmax_backward(weights, grad_weights))

    report = check_exercise_19_3(memoised)
    assert not report.passed, str(report)


def test_19_3_hints_are_true_in_context():
    # axis=1 is wrong only with a leading axis: the message says so, and names axis=-1
    assert "with a leading batch axis, use axis=-1" in text(
        check_exercise_19_3(student.row_backward_axis_1)
    )
    assert "leading batch axis" not in text(
        check_exercise_19_3(student.row_backward_sum_over_axis_0)
    )
    # a placeholder of zeros is not praised for rows that sum to zero
    assert "as it should" not in text(check_exercise_19_3(student.row_backward_zeros))
    # the in-place edit names the argument that changed
    assert "`softmax_row_backward` changed its argument `grad_weights` in place" in text(
        check_exercise_19_3(student.row_backward_in_place)
    )


def test_19_3_a_float64_scalar_promotes_float32_and_passes_with_a_note():
    report = check_exercise_19_3(student.row_backward_float64_scalar)
    assert report.passed and report.note_names == ("float32_promoted",)
    assert "returned as float32" not in str(report)
    assert "returned as float32" in str(check_exercise_19_3(student.row_backward_right))


def test_19_3_modelled_mistakes_differ_far_beyond_the_float32_tolerance():
    """A model either gives the right answer on a probe (rows of one key) or misses it by far
    more than the float32 tolerance: no right answer can match a mistake."""
    for spec in softmax_row.PROBES:
        p = softmax_row.probe(spec)
        for record in softmax_row.MISTAKES.values():
            models = record.model(p.step) if record.model else None
            for model in models if isinstance(models, list) else [models]:
                if model is not None and model is not False:
                    error = relative_error(model, p.truth)
                    assert error < 1e-9 or error > 20 * FLOAT32_TOLERANCE, (spec, record.name)


def test_19_3_a_student_exception_is_reported_with_the_line_of_student_code():
    def softmax_row_backward(weights, grad_weights):
        row_dot = np.sum(grad_weights * weights, axis=-1, keepdims=True)  # noqa: F841
        return weights * (grad_weights - row_dots)  # noqa: F821 - the typo is the point

    report = check_exercise_19_3(softmax_row_backward)
    assert report.diagnoses == ("raised",)
    assert "NameError" in str(report) and "in softmax_row_backward" in str(report)
    assert "return weights * (grad_weights - row_dots)" in str(report)
    assert "Traceback" not in str(report) and "exercises" not in str(report)


# --------------------------------------------------------------------------------------
# 19.4 (a)

RIGHT_PAIRS = [
    pytest.param(library_forward, attention_backward, id="library"),
    pytest.param(*pair(student.StudentAttention), id="plain-numpy"),
    pytest.param(*pair(student.MathSqrt), id="math-sqrt"),
    pytest.param(*pair(student.EinsumAttention), id="einsum-explicit-mask"),
    pytest.param(student.loop_forward, student.loop_backward, id="loops"),
    pytest.param(*pair(student.Float32Attention), id="float32"),
    pytest.param(*pair(student.RowDotFromOutput), id="row-term-from-output"),
    pytest.param(*pair(student.LogMaskAdded), id="log-mask"),
    pytest.param(*pair(student.RecomputesWithMask), id="recomputes-weights"),
]


@pytest.mark.parametrize(("forward", "backward"), RIGHT_PAIRS)
def test_19_4_right_answers_pass(forward, backward):
    report = check_exercise_19_4(forward, backward)
    assert report.passed, str(report)


@pytest.mark.parametrize(
    ("attention", "diagnosis"),
    [
        (student.NoScaling, "no_scaling"),
        (student.ScaledByDk, "scaled_by_d_k"),
        (student.ScaledBySqrtDv, "scaled_by_sqrt_d_v"),
        (student.ScaledBySqrtTk, "scaled_by_sqrt_T"),
        (student.ScaledBySqrtDModel, "wrong_scale"),
        (student.SoftmaxOverColumns, "softmax_wrong_axis"),
        (student.SoftmaxWholeMatrix, "softmax_whole_matrix"),
        (student.SoftmaxAxis1, "softmax_wrong_axis"),
        (student.MaskAfterSoftmax, "mask_after_softmax"),
        (student.RenormalisedAfterMask, "blocked_score_underflow"),
        (student.MaskInverted, "mask_inverted"),
        (student.OwnTriuMask, "mask_transposed"),
        (student.MaskIgnored, "mask_ignored"),
        (student.MaskMultiplied, "mask_multiplied"),
        (student.NoneBecomesCausal, "none_became_causal"),
        (student.BooleanIndexMask, "mask_not_broadcast"),
        (student.NoMaxSubtraction, "no_max_subtraction"),
        (student.GlobalMaxSubtraction, "global_max_subtraction"),
        (student.LargeNegativeFill, "masked_row_uniform"),
        (student.UnguardedNegInf, "masked_row_nan"),
        (student.EpsilonWeights, "masked_not_exactly_zero"),
        (student.PlainTranspose, "batch_axes"),
        (student.SquareOnly, "rectangular_fails"),
        (student.Float32Sloppy, "float32_inaccurate"),
        (student.ReturnsOutputOnly, "wrong_type"),
        (student.ScalesQInPlace, "modified_input"),
        (student.SignError, "row_term_sign"),
        (student.MissingRowTerm, "row_term_missing"),
        (student.GradKNotTransposed, "grad_K_not_transposed"),
        (student.GradKMissingScale, "grad_K_missing_scale"),
        (student.GradQMissingScale, "grad_Q_missing_scale"),
        (student.GradQKMissingScale, "grad_QK_missing_scale"),
        (student.GradientsInWrongOrder, "gradients_wrong_order"),
        (student.QAndKSwapped, "gradients_wrong_order"),
        (student.GradVNotTransposed, "grad_V_not_transposed"),
        (student.LeaksIntoMaskedKeys, "backward_ignores_mask"),
    ],
    ids=lambda value: value if isinstance(value, str) else value.__name__,
)
def test_19_4_each_mistake_is_named(attention, diagnosis):
    report = check_exercise_19_4(*pair(attention))
    assert report.diagnoses == (diagnosis,), str(report)


def test_19_4_a_padding_mask_needs_each_example_its_own_row_of_the_mask():
    report = check_exercise_19_4(student.loop_forward_2d_masks, student.loop_backward)
    assert report.diagnoses == ("batch_axis_fails",)
    assert "padding mask of shape (2, 1, 5)" in text(report)


@pytest.mark.parametrize(
    ("attention", "returned"),
    [
        (student.GradientsInWrongOrder, "(grad_V, grad_K, grad_Q)"),
        (student.QAndKSwapped, "(grad_K, grad_Q, grad_V)"),
    ],
)
def test_19_4_the_wrong_order_is_spelled_out(attention, returned):
    assert f"it returns {returned}" in text(check_exercise_19_4(*pair(attention)))


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
        (
            lambda Q, K, V, m=None: library_forward(Q, K, V, m),
            attention_backward,
            "forward_signature",
        ),
        (
            lambda Q, K, V, *, mask=None: library_forward(Q, K, V, mask),
            attention_backward,
            "forward_signature",
        ),
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

    assert check_exercise_19_4(text_output, attention_backward).diagnoses == ("wrong_type",)
    assert check_exercise_19_4(library_forward, ragged_gradients).diagnoses == ("wrong_type",)


def test_19_4_a_forward_that_edits_the_mask_in_place_is_named():
    def forward(Q, K, V, mask=None):
        result = library_forward(Q, K, V, mask)
        if mask is not None:
            mask[...] = True  # vandalises its argument after using it
        return result

    report = check_exercise_19_4(forward, attention_backward)
    assert report.diagnoses == ("modified_input",)
    assert "`forward` changed its argument `mask` in place" in text(report)


def test_19_4_a_backward_that_edits_the_cached_inputs_is_named_as_such():
    def backward(grad_output, cache):
        grads = attention_backward(grad_output, cache)
        cache.Q[...] = 0.0  # the cache holds the caller's Q
        return grads

    report = check_exercise_19_4(library_forward, backward)
    assert report.diagnoses == ("modified_input",)
    assert "`backward` changed `Q` in place, the array given to `forward`" in text(report)


def test_19_4_not_implemented_names_the_function_that_raised():
    report = check_exercise_19_4(student.StudentAttention().forward, student.unfinished_backward)
    assert not report.attempted
    assert "`softmax_row_backward_scaffold`, which `unfinished_backward` calls" in text(report)


def test_19_4_a_case_left_unwritten_is_not_called_unattempted():
    def forward(Q, K, V, mask=None):
        if mask is None:
            raise NotImplementedError()
        return library_forward(Q, K, V, mask)

    assert check_exercise_19_4(forward, attention_backward).diagnoses == ("unfinished",)


def test_19_4_hints_are_true_in_context():
    transposed = text(check_exercise_19_4(*pair(student.PlainTranspose)))
    assert "your line `return array.T` (in transpose)" in transposed
    for attention in (student.BooleanIndexMask, student.SoftmaxAxis1):
        assert ".T" not in str(check_exercise_19_4(*pair(attention)))
    assert "with a leading batch axis, use axis=-1" in text(
        check_exercise_19_4(*pair(student.SoftmaxAxis1))
    ).replace("With", "with")
    uniform = text(check_exercise_19_4(*pair(student.MaskAfterSoftmax)))
    assert "each row with a blocked key sums to less than 1" in uniform
    renormalised = text(check_exercise_19_4(*pair(student.RenormalisedAfterMask)))
    assert "sums to less than 1" not in renormalised and "underflow" in renormalised
    tiny = check_exercise_19_4(*pair(student.EpsilonWeights))
    assert "instead of exactly 0" in text(tiny)


def test_19_4_the_pytorch_claim_says_which_pytorch_function():
    def forward(Q, K, V, mask=None):
        output, cache = library_forward(Q, K, V, mask)
        return output + 1e-3 * (mask is not None and not mask.any(axis=-1).all()), cache

    words = text(check_exercise_19_4(forward, attention_backward))
    assert "`F.scaled_dot_product_attention`" in words and "`nn.MultiheadAttention`" in words


def test_19_4_float32_results_keep_float32_or_get_a_note():
    promoted = check_exercise_19_4(*pair(student.StudentAttention))
    assert promoted.passed and promoted.note_names == ("float32_promoted",)
    assert "`math.sqrt(d_k)`" in text(promoted)
    kept = check_exercise_19_4(*pair(student.MathSqrt))
    assert kept.passed and kept.notes == ()
    assert "returned as float32" in str(kept) and "returned as float32" not in str(promoted)


def test_19_4_modelled_mistakes_differ_far_beyond_the_float32_tolerance():
    # scores of several hundred saturate every row: there a scale changes nothing
    for spec in (s for s in masked_attention.PROBES if s.scores == "ordinary"):
        p = _attention_probes.probe(spec)
        for record in masked_attention.MISTAKES.values():
            with np.errstate(all="ignore"):  # a model may divide by a row sum of 0
                models = record.model(p) if record.model else None
            for model in models if isinstance(models, list) else [models]:
                if model is None or model is False:
                    continue
                pairs = (
                    zip(model, p.grads, strict=True)
                    if isinstance(model, tuple)
                    else [(model, p.output)]
                )
                with np.errstate(all="ignore"):
                    error = max(relative_error(np.nan_to_num(m), t) for m, t in pairs)
                assert error < 1e-9 or error > 20 * FLOAT32_TOLERANCE, (spec, record.name)


def test_19_4_the_checker_passes_the_causal_mask_explicitly():
    seen = []

    def forward(Q, K, V, mask=None):
        seen.append(None if mask is None else mask.shape)
        return library_forward(Q, K, V, mask)

    assert check_exercise_19_4(forward, attention_backward).passed
    assert seen[0] == (5, 5) and (3, 6) in seen and (2, 1, 5) in seen and None in seen


# --------------------------------------------------------------------------------------
# 19.4 (c)


@pytest.mark.parametrize(
    "central_difference",
    [
        student.central_right,
        student.central_on_copies,
        student.central_flat_view,
        library_central_difference,
    ],
)
def test_19_4c_right_answers_pass(central_difference):
    report = check_exercise_19_4c(central_difference)
    assert report.passed and report.notes == (), str(report)


def test_19_4c_a_plus_minus_nudge_is_named_for_its_round_off():
    # the statement asks for X back exactly; gradient_errors would hand the drift on to Q, K, V
    report = check_exercise_19_4c(student.central_plus_minus)
    assert report.diagnoses == ("restored_with_roundoff",)
    assert "0.1 + 1e-5 - 1e-5 is not 0.1" in text(report)


@pytest.mark.parametrize(
    ("central_difference", "diagnosis"),
    [
        (student.central_not_restored, "not_restored"),
        (student.central_one_sided, "one_sided"),
        (student.central_float32, "float32_arithmetic"),
        (student.central_step(1e-2), "step_too_large"),
        (student.central_step(1e-10), "step_too_small"),
        (student.central_ignores_h, "ignores_h"),
        (student.central_divided_by_h, "divided_by_h"),
        (student.central_all_at_once, "all_entries_at_once"),
        (student.central_rows, "whole_row_nudged"),
        (lambda f, X, h: student.central_right(f, X, h), "no_default_step"),
        (lambda f, X, h=None: np.zeros_like(X), "f_not_called"),
        (lambda f, X, h=None: -student.central_right(f, X, h), "sign_flipped"),
        (lambda f, X, h=None: 3 * student.central_right(f, X, h), "off_by_factor"),
        (
            lambda f, X, h=None: student.central_right(lambda Y: f(Y.ravel()), X, h),
            "f_called_with_wrong_shape",
        ),
        (lambda f, X, h=None: float(np.sum(student.central_right(f, X, h))), "wrong_shape"),
        (not_implemented, None),
    ],
)
def test_19_4c_each_mistake_is_named(central_difference, diagnosis):
    report = check_exercise_19_4c(central_difference)
    if diagnosis is None:
        assert not report.attempted
    else:
        assert report.diagnoses == (diagnosis,), str(report)


@pytest.mark.parametrize(
    "error", [student.symmetric_relative_error, student.max_relative_error, relative_error]
)
def test_19_4c_right_gradient_errors_pass_and_judge_the_students_own_pair(error):
    gradient_errors = student.gradient_errors_with(student.central_right, error)
    forward, backward = pair(student.MathSqrt)
    report = check_exercise_19_4c(
        student.central_right, gradient_errors, forward=forward, backward=backward
    )
    assert report.passed and report.note_names == ("own_pair_judged",), str(report)
    assert "they agree with finite differences" in text(report)


def test_19_4c_the_own_pair_is_judged_without_counting():
    forward, backward = pair(student.SignError)
    wrong = check_exercise_19_4c(
        student.central_right, RIGHT_GRADIENT_ERRORS, forward=forward, backward=backward
    )
    assert wrong.passed and "your backward is wrong" in text(wrong)
    unwritten = check_exercise_19_4c(
        student.central_right, RIGHT_GRADIENT_ERRORS, forward=not_implemented, backward=backward
    )
    assert unwritten.passed and unwritten.note_names == ("own_pair_not_attempted",)


def _q_and_k_swapped(*args):
    errors_q, errors_k, errors_v = student.gradient_errors_with(
        student.central_right, relative_error
    )(*args)
    return errors_k, errors_q, errors_v


@pytest.mark.parametrize(
    ("gradient_errors", "diagnosis"),
    [
        (
            student.gradient_errors_with(student.central_right, student.absolute_error),
            "not_relative",
        ),
        (student.gradient_errors_self, "misses_planted_bug"),
        (student.gradient_errors_sum_loss, "rejects_correct_backward"),
        (student.gradient_errors_in_place, "modified_input"),
        (lambda *args: {"Q": 0.0}, "wrong_type"),
        (lambda *args: _q_and_k_swapped(*args), "errors_wrong_order"),
        (lambda *args: (0.0, -1.0, 0.0), "not_finite"),
        (not_implemented, None),
    ],
)
def test_19_4c_gradient_errors_mistakes_are_named(gradient_errors, diagnosis):
    report = check_exercise_19_4c(student.central_right, gradient_errors)
    if diagnosis is None:
        assert not report.attempted
    else:
        assert report.diagnoses == (diagnosis,), str(report)


def test_float64_inputs_answered_in_float32_pass_with_a_note():
    for report in (
        check_exercise_19_3(student.red2_r_always_float32),
        check_exercise_19_4(*pair(student.Red2Float32Always)),
    ):
        assert report.passed and "float64_demoted" in report.note_names, str(report)
        assert "keeps about 7 digits where float64 keeps 16" in text(report)
    assert check_exercise_19_3(student.row_backward_right).notes == ()


def test_the_global_generator_is_named_and_left_as_it_was():
    np.random.seed(7)  # noqa: NPY002 - the state a notebook would have
    before = np.random.get_state()[1].copy()  # noqa: NPY002
    report = check_exercise_19_2(student.red_v_legacy, **FAST)
    assert report.diagnoses == ("global_rng",)
    assert "`red_v_legacy` draws from NumPy's global generator" in text(report)
    assert np.array_equal(np.random.get_state()[1], before)  # noqa: NPY002


def test_second_pass_messages_are_true_for_the_answer_they_judge():
    dot_t = text(check_exercise_19_4(*pair(student.Red2ScoreGradientDotT)))
    assert "your line `return (grad_scores.T @ Q) * scale` (in grad_K)" in dot_t
    assert "turns K" not in dot_t
    misread = text(check_exercise_19_4(*pair(student.Red2StrictCausalLoop)))
    assert "query 0 reads no key (the mask allows key 0)" in misread
    skipped = text(check_exercise_19_3(student.red2_r_last_row_skipped))
    assert "is wrong in row 2 (all zero)" in skipped
    assert "look at the product" not in skipped
    same = text(check_exercise_19_2(student.red2_v_generator_per_sample, **FAST))
    assert "np.mean" not in same and "made again for each sample" in same
    mirrored = text(check_exercise_19_2(student.red2_v_mirrored_keys, **FAST))
    assert "or some reused" in mirrored
    arrays = text(check_exercise_19_4c(student.central_right, student.red2_ge_elementwise))
    assert "of arrays of shapes (5, 4), (5, 4), (5, 3)" in arrays and "broadcast" not in arrays
    forward, backward = pair(student.MathSqrt)
    keyed = check_exercise_19_4c(
        student.central_right, student.red2_ge_dict, forward=forward, backward=backward
    )
    assert keyed.note_names == ("own_pair_judged",)
    unhandled = text(check_exercise_19_4c(student.red2_c_h_none_unhandled))
    assert "fails when h is None" in unhandled and "`if h is None: h = ...`" in unhandled


# --------------------------------------------------------------------------------------
# Every ✓ line: a planted answer that breaks exactly that property fails


def _19_2(estimate):
    return lambda: check_exercise_19_2(estimate, **FAST)


def _shifted_mean(width, samples, seed):
    return student.variance_estimate()(width, samples, seed) + 6 * variance_standard_error(
        width, 20_000
    )


CHECKED_LINES = {
    "19.1": (
        lambda: check_exercise_19_1(RIGHT_19_1),
        {
            "the query asks, the key is what is found": [
                (lambda: check_exercise_19_1({**RIGHT_19_1, "key": "a"}), "key_choice")
            ],
            "doubling the values doubles the output": [
                (
                    lambda: check_exercise_19_1({**RIGHT_19_1, "values_doubled": "d"}),
                    "values_doubled_choice",
                )
            ],
            "equal scores give equal weights": [
                (
                    lambda: check_exercise_19_1({**RIGHT_19_1, "equal_scores": "d"}),
                    "equal_scores_choice",
                )
            ],
        },
    ),
    "19.2": (
        _19_2(student.variance_estimate()),
        {
            "standard errors of d_k at d_k": [(_19_2(_shifted_mean), "estimate_biased")],
            "changes with the seed": [(_19_2(student.variance_fixed_seed), "seed_unused")],
            "scatter as much as their sample counts imply": [
                (_19_2(student.variance_hard_coded_samples), "samples_ignored"),
                (_19_2(student.variance_tenth_of_samples), "too_few_samples"),
            ],
            "the same seed gives the same estimate": [
                (_19_2(student.variance_unseeded), "not_reproducible")
            ],
        },
    ),
    "19.3": (
        lambda: check_exercise_19_3(student.row_backward_right),
        {
            "agrees with central finite differences": [
                (lambda: check_exercise_19_3(pitfalls.softmax_backward_sign_error), "row_term_sign")
            ],
            "rows of length 1-6, 8 and 64, no, one or two leading axes": [
                (lambda: check_exercise_19_3(student.row_backward_axis_1), "row_term_wrong_axis"),
                (lambda: check_exercise_19_3(student.row_backward_squeezed), "wrong_shape"),
            ],
            "saturated and nearly uniform rows": [
                (
                    lambda: check_exercise_19_3(student.row_backward_small_weights_zeroed),
                    "some_entries_wrong",
                )
            ],
            "float32 weights: within 1e-04": [
                (
                    lambda: check_exercise_19_3(student.row_backward_float32_sloppy),
                    "float32_inaccurate",
                )
            ],
            "and returned as float32": [
                (
                    lambda: check_exercise_19_3(student.row_backward_float64_scalar),
                    "float32_promoted",
                )
            ],
            "gets gradient exactly 0": [
                (lambda: check_exercise_19_3(student.row_backward_epsilon), "masked_not_zero")
            ],
            "are left unchanged": [
                (lambda: check_exercise_19_3(student.row_backward_in_place), "modified_input")
            ],
        },
    ),
    "19.4": (
        lambda: check_exercise_19_4(*pair(student.MathSqrt)),
        {
            "output equals": [
                (lambda: check_exercise_19_4(*pair(student.NoScaling)), "no_scaling")
            ],
            "gradients agree with central finite differences": [
                (lambda: check_exercise_19_4(*pair(student.SignError)), "row_term_sign")
            ],
            "float32 inputs: output and gradients within": [
                (lambda: check_exercise_19_4(*pair(student.Float32Sloppy)), "float32_inaccurate")
            ],
            ", returned as float32": [
                (lambda: check_exercise_19_4(*pair(student.StudentAttention)), "float32_promoted")
            ],
            "may read get gradient exactly 0": [
                (
                    lambda: check_exercise_19_4(*pair(student.EpsilonWeights)),
                    "masked_not_exactly_zero",
                ),
                (
                    lambda: check_exercise_19_4(*pair(student.LeaksIntoMaskedKeys)),
                    "backward_ignores_mask",
                ),
            ],
            "do not overflow": [
                (
                    lambda: check_exercise_19_4(*pair(student.NoMaxSubtraction)),
                    "no_max_subtraction",
                ),
                (
                    lambda: check_exercise_19_4(*pair(student.Red2BackwardWithoutMax)),
                    "no_max_subtraction",
                ),
            ],
            "do not underflow": [
                (
                    lambda: check_exercise_19_4(*pair(student.GlobalMaxSubtraction)),
                    "global_max_subtraction",
                ),
                (
                    lambda: check_exercise_19_4(
                        *pair(student.backward_recomputing_with(student.GlobalMaxSubtraction))
                    ),
                    "global_max_subtraction",
                ),
            ],
            "changes nothing, forward or backward": [
                (
                    lambda: check_exercise_19_4(*pair(student.RenormalisedAfterMask)),
                    "blocked_score_underflow",
                ),
                (
                    lambda: check_exercise_19_4(
                        *pair(student.backward_recomputing_with(student.RenormalisedAfterMask))
                    ),
                    "blocked_score_underflow",
                ),
            ],
            "gets output exactly 0 and gradient exactly 0, no NaN": [
                (
                    lambda: check_exercise_19_4(*pair(student.LargeNegativeFill)),
                    "masked_row_uniform",
                ),
                (lambda: check_exercise_19_4(*pair(student.UnguardedNegInf)), "masked_row_nan"),
            ],
            "d_k and d_v 1-9, 16 and 64": [
                (lambda: check_exercise_19_4(*pair(student.IsqrtScale)), "wrong_scale")
            ],
            "T_q and T_k from 1 to 8": [
                (lambda: check_exercise_19_4(*pair(student.SquareOnly)), "rectangular_fails")
            ],
            "every mask form": [
                (lambda: check_exercise_19_4(*pair(student.BooleanIndexMask)), "mask_not_broadcast")
            ],
            "no, one or two leading axes": [
                (lambda: check_exercise_19_4(*pair(student.Red2ThreeAxesAtMost)), "batch_axes"),
                (lambda: check_exercise_19_4(*pair(student.PlainTranspose)), "batch_axes"),
                (
                    lambda: check_exercise_19_4(
                        student.loop_forward_2d_masks, student.loop_backward
                    ),
                    "batch_axis_fails",
                ),
            ],
            "mask=None and no mask argument": [
                (lambda: check_exercise_19_4(*pair(student.MaskRequired)), "forward_signature"),
                (
                    lambda: check_exercise_19_4(*pair(student.NoneBecomesCausal)),
                    "none_became_causal",
                ),
            ],
            "backward uses only its cache": [
                (lambda: check_exercise_19_4(*pair(student.GlobalCache)), "state_between_calls")
            ],
            "are left unchanged": [
                (lambda: check_exercise_19_4(*pair(student.ScalesQInPlace)), "modified_input")
            ],
        },
    ),
    "19.4 (c)": (
        lambda: check_exercise_19_4c(student.central_right, RIGHT_GRADIENT_ERRORS),
        {
            "agrees with attention_lib's numerical_gradient": [
                (lambda: check_exercise_19_4c(student.central_divided_by_h), "divided_by_h")
            ],
            "central: each entry is moved by +h and by -h": [
                (lambda: check_exercise_19_4c(student.central_one_sided), "one_sided"),
                (lambda: check_exercise_19_4c(student.central_all_at_once), "all_entries_at_once"),
            ],
            "uses the step h it is given": [
                (lambda: check_exercise_19_4c(student.central_ignores_h), "ignores_h"),
                (lambda: check_exercise_19_4c(student.central_step(1e-2)), "step_too_large"),
            ],
            "computes in float64": [
                (lambda: check_exercise_19_4c(student.central_float32), "float32_arithmetic")
            ],
            "X comes back exactly as it was given": [
                (lambda: check_exercise_19_4c(student.central_not_restored), "not_restored"),
                (
                    lambda: check_exercise_19_4c(student.central_plus_minus),
                    "restored_with_roundoff",
                ),
            ],
            "the errors are relative": [
                (
                    lambda: check_exercise_19_4c(
                        student.central_right,
                        student.gradient_errors_with(student.central_right, student.absolute_error),
                    ),
                    "not_relative",
                ),
                (
                    lambda: check_exercise_19_4c(
                        student.central_right, student.gradient_errors_self
                    ),
                    "misses_planted_bug",
                ),
            ],
            "gradient_errors leaves Q, K, V, mask and grad_output unchanged": [
                (
                    lambda: check_exercise_19_4c(
                        student.central_right, student.gradient_errors_in_place
                    ),
                    "modified_input",
                )
            ],
        },
    ),
}


@pytest.mark.parametrize("exercise", sorted(CHECKED_LINES))
def test_every_checked_line_has_a_planted_answer(exercise):
    passing, lines = CHECKED_LINES[exercise]
    report = passing()
    assert report.passed and report.notes == (), str(report)
    printed = [" ".join(line.split()) for line in report.checked]
    for line in printed:
        assert sum(fragment in line for fragment in lines) >= 1, line
    for fragment in lines:
        assert any(fragment in line for line in printed), fragment


PLANTED = [
    pytest.param(run, diagnosis, id=f"{exercise}: {fragment[:40]} -> {diagnosis}")
    for exercise, (_, lines) in CHECKED_LINES.items()
    for fragment, planted in lines.items()
    for run, diagnosis in planted
]


@pytest.mark.parametrize(("run", "diagnosis"), PLANTED)
def test_each_planted_answer_breaks_its_line(run, diagnosis):
    report = run()
    if diagnosis in ("float32_promoted",):  # a note: the answer passes, the line changes
        assert report.passed and diagnosis in report.note_names
    else:
        assert report.diagnoses == (diagnosis,), str(report)


# --------------------------------------------------------------------------------------
# Red team: attempts written from the statements alone, after the checkers (see the mistakes
# file). "pass" marks an answer that is right; anything else is the diagnosis it must get.

CATCH_ALL = {
    "wrong_estimate",
    "wrong_gradient",
    "wrong_output",
    "unreadable_answer",
    "raised",
    "not_finite",
}
RED_TEAM = [
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_einsum_ddof, **FAST),
        "pass",
        id="19.2 v_einsum_ddof",
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_loop_dot, **FAST), "pass", id="19.2 v_loop_dot"
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_legacy, **FAST),
        "global_rng",
        id="19.2 v_legacy",
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_transposed_layout, **FAST),
        "pass",
        id="19.2 v_transposed_layout",
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_cov, **FAST), "wrong_type", id="19.2 v_cov"
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_normalised, **FAST),
        "divided_by_sqrt_d_k",
        id="19.2 v_normalised",
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_squared_norm, **FAST),
        "same_vectors",
        id="19.2 v_squared_norm",
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_seed_plus_width, **FAST),
        "pass",
        id="19.2 v_seed_plus_width",
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_std_squared, **FAST),
        "pass",
        id="19.2 v_std_squared",
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_list, **FAST), "wrong_type", id="19.2 v_list"
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_sample_var_of_q, **FAST),
        "variance_of_entries",
        id="19.2 v_sample_var_of_q",
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_var_per_dim_sum, **FAST),
        "variances_summed",
        id="19.2 v_var_per_dim_sum",
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_mean_sq_minus, **FAST),
        "pass",
        id="19.2 v_mean_sq_minus",
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_scaled_by_dk, **FAST),
        "divided_by_d_k",
        id="19.2 v_scaled_by_dk",
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_int_seed_kw, **FAST),
        "pass",
        id="19.2 v_int_seed_kw",
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red_r_two_terms), "pass", id="19.3 r_two_terms"
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red_r_einsum_newaxis),
        "pass",
        id="19.3 r_einsum_newaxis",
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red_r_diagflat_loop),
        "only_2d",
        id="19.3 r_diagflat_loop",
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red_r_colon_none), "only_2d", id="19.3 r_colon_none"
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red_r_matmul_dot),
        "row_term_matmul",
        id="19.3 r_matmul_dot",
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red_r_in_place_sum), "pass", id="19.3 r_in_place_sum"
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red_r_negated),
        "scaled_by_constant",
        id="19.3 r_negated",
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red_r_forgot_grad),
        "grad_weights_missing",
        id="19.3 r_forgot_grad",
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red_r_full_jacobian_einsum),
        "pass",
        id="19.3 r_full_jacobian_einsum",
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red_r_dot_1d), "row_term_matmul", id="19.3 r_dot_1d"
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red_r_softmax_of_grad),
        "wrong_gradient",
        id="19.3 r_softmax_of_grad",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_finite_fill, student.red_bw),
        "no_max_subtraction",
        id="19.4 finite_fill",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_eq_false, student.red_bw),
        "pass",
        id="19.4 eq_false",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_float_mask, student.red_bw),
        "masked_row_uniform",
        id="19.4 float_mask",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_dotT, student.red_bw),
        "batch_axes",
        id="19.4 dotT_forward",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_eq_false, student.red_b_dotT),
        "batch_axes",
        id="19.4 dotT_backward",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_nan_to_num, student.red_bw),
        "pass",
        id="19.4 nan_to_num",
    ),
    pytest.param(
        lambda: check_exercise_19_4(
            student.red_f_keeps_mask, student.red_b_where_mask_unconditional
        ),
        "mask_none_fails",
        id="19.4 where_mask_unconditional",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_shape1, student.red_bw),
        "scaled_by_sqrt_T",
        id="19.4 shape1",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_transpose_3axes, student.red_bw),
        "transpose_axes_fixed",
        id="19.4 transpose_3axes",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_eq_false, student.red_b_list),
        "pass",
        id="19.4 backward_list",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_eq_false, student.red_b_scale_twice),
        "gradient_off_by_factor",
        id="19.4 scale_twice",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_logsumexp, student.red_bw),
        "pass",
        id="19.4 logsumexp",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_eq_false, student.red_b_grad_weights_no_T),
        "matmul_shapes",
        id="19.4 grad_weights_no_T",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_mask_plus_tril, student.red_bw),
        "mask_replaced",
        id="19.4 mask_plus_tril",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_out_float32, student.red_bw),
        "pass",
        id="19.4 out_float32",
    ),
    pytest.param(lambda: check_exercise_19_4c(student.red_c_nditer), "pass", id="19.4c c_nditer"),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_onehot), "no_default_step", id="19.4c c_onehot"
    ),
    pytest.param(lambda: check_exercise_19_4c(student.red_c_h_or), "pass", id="19.4c c_h_or"),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_precedence),
        "operator_precedence",
        id="19.4c c_precedence",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_no_h), "not_divided_by_h", id="19.4c c_no_h"
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_relative_step),
        "uneven_step",
        id="19.4c c_relative_step",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_copy_first),
        "no_default_step",
        id="19.4c c_copy_first",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_int_zeros),
        "integer_result",
        id="19.4c c_int_zeros",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_only_plus_twice),
        "one_sided",
        id="19.4c c_only_plus_twice",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_ravel_loop),
        "no_default_step",
        id="19.4c c_ravel_loop",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_returns_list),
        "wrong_type",
        id="19.4c c_returns_list",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(
            student.red_c_nditer, student.red_ge_norm_over_n(student.red_c_nditer)
        ),
        "pass",
        id="19.4c ge_norm_over_n",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_nditer, student.red_ge_allclose),
        "returns_verdicts",
        id="19.4c ge_allclose",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_nditer, student.red_ge_no_copy_nudges_inputs),
        "pass",
        id="19.4c ge_no_copy",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_nditer, student.red_ge_mean_abs),
        "not_relative",
        id="19.4c ge_mean_abs",
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_one_product_times_width, **FAST),
        "one_product_scaled",
        id="19.2 v_one_product_times_width",
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red_v_ddof_by_hand, **FAST),
        "pass",
        id="19.2 v_ddof_by_hand",
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red_r_sum_all), "row_term_all_axes", id="19.3 r_sum_all"
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red_r_factor_swapped),
        "factors_swapped",
        id="19.3 r_factor_swapped",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_scale_after_softmax, student.red_bw),
        "scaled_after_softmax",
        id="19.4 scale_after_softmax",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_eq_false, student.red_b_divide_by_scale),
        "gradient_off_by_factor",
        id="19.4 divide_by_scale",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_eq_false, student.red_b_grad_V_order),
        "matmul_shapes",
        id="19.4 grad_V_order",
    ),
    pytest.param(
        lambda: check_exercise_19_4(student.red_f_global_max_before_mask, student.red_bw),
        "blocked_score_underflow",
        id="19.4 global_max_before_mask",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_aliased), "aliased_copies", id="19.4c c_aliased"
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_returns_tuple_per_row),
        "wrong_type",
        id="19.4c c_flat_list",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_nditer, student.red_ge_swapped_order),
        "errors_wrong_order",
        id="19.4c ge_swapped_order",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_nditer, student.red_ge_max_rel),
        "pass",
        id="19.4c ge_max_rel",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red_c_nditer, student.red_ge_loss_sum_of_squares),
        "rejects_correct_backward",
        id="19.4c ge_sum_of_squares",
    ),
    # ---- second pass (red2_*): each exposed a defect, or is an unusual right answer
    pytest.param(
        lambda: check_exercise_19_2(student.red2_v_int, **FAST), "wrong_type", id="19.2 v2_int"
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red2_v_array, **FAST), "wrong_type", id="19.2 v2_array"
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red2_v_generator_per_sample, **FAST),
        "samples_identical",
        id="19.2 v2_generator_per_sample",
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red2_v_mirrored_keys, **FAST),
        "too_few_samples",
        id="19.2 v2_mirrored_keys",
    ),
    pytest.param(
        lambda: check_exercise_19_2(student.red2_v_chunked, **FAST), "pass", id="19.2 v2_chunked"
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red2_r_last_row_skipped),
        "some_rows_wrong",
        id="19.3 r2_last_row_skipped",
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red2_r_float16), "imprecise", id="19.3 r2_float16"
    ),
    pytest.param(lambda: check_exercise_19_3(student.red2_r_list), "wrong_type", id="19.3 r2_list"),
    pytest.param(
        lambda: check_exercise_19_3(student.red2_r_always_float32),
        "pass",
        id="19.3 r2_always_float32",
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red2_r_jacobian_times_weights),
        "wrong_gradient",
        id="19.3 r2_jacobian_times_weights",
    ),
    pytest.param(
        lambda: check_exercise_19_3(student.red2_r_ones_column), "pass", id="19.3 r2_ones_column"
    ),
    pytest.param(
        lambda: check_exercise_19_4(*pair(student.Red2BackwardWithoutMax)),
        "no_max_subtraction",
        id="19.4 Red2BackwardWithoutMax",
    ),
    pytest.param(
        lambda: check_exercise_19_4(*pair(student.Red2ScoreGradientDotT)),
        "batch_axes",
        id="19.4 Red2ScoreGradientDotT",
    ),
    pytest.param(
        lambda: check_exercise_19_4(*pair(student.Red2ThreeAxesAtMost)),
        "batch_axes",
        id="19.4 Red2ThreeAxesAtMost",
    ),
    pytest.param(
        lambda: check_exercise_19_4(*pair(student.Red2MaxWithoutKeepdims)),
        "missing_keepdims",
        id="19.4 Red2MaxWithoutKeepdims",
    ),
    pytest.param(
        lambda: check_exercise_19_4(*pair(student.Red2SumWithoutKeepdims)),
        "missing_keepdims",
        id="19.4 Red2SumWithoutKeepdims",
    ),
    pytest.param(
        lambda: check_exercise_19_4(*pair(student.Red2TransposesSwapped)),
        "transposes_swapped",
        id="19.4 Red2TransposesSwapped",
    ),
    pytest.param(
        lambda: check_exercise_19_4(*pair(student.Red2StrictCausalLoop)),
        "keys_misread",
        id="19.4 Red2StrictCausalLoop",
    ),
    pytest.param(
        lambda: check_exercise_19_4(*pair(student.Red2Float32Always)),
        "pass",
        id="19.4 Red2Float32Always",
    ),
    pytest.param(
        lambda: check_exercise_19_4(*pair(student.Red2Float16Scores)),
        "imprecise",
        id="19.4 Red2Float16Scores",
    ),
    pytest.param(
        lambda: check_exercise_19_4(*pair(student.Red2CachesExponentials)),
        "wrong_rows",
        id="19.4 Red2CachesExponentials",
    ),
    pytest.param(
        lambda: check_exercise_19_4(*pair(student.Red2LogSumExpCache)),
        "pass",
        id="19.4 Red2LogSumExpCache",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red2_c_h_none_unhandled),
        "no_default_step",
        id="19.4c c2_h_none_unhandled",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.red2_c_sqrt_eps),
        "step_too_small",
        id="19.4c c2_sqrt_eps",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(student.central_right, student.red2_ge_elementwise),
        "wrong_type",
        id="19.4c ge2_elementwise",
    ),
    pytest.param(
        lambda: check_exercise_19_4c(
            student.central_right,
            student.red2_ge_dict,
            forward=pair(student.MathSqrt)[0],
            backward=pair(student.MathSqrt)[1],
        ),
        "pass",
        id="19.4c ge2_dict",
    ),
]


@pytest.mark.parametrize(("run", "verdict"), RED_TEAM)
def test_red_team_attempts_get_their_verdict(run, verdict):
    report = run()
    if verdict == "pass":
        assert report.passed, str(report)
    else:
        assert report.diagnoses == (verdict,), str(report)


def test_red_team_tally_meets_the_issue_targets():
    """0 wrong passed, 0 right rejected (the table's verdicts), at most 15% catch-alls."""
    wrong = [verdict for _, verdict in (param.values for param in RED_TEAM) if verdict != "pass"]
    assert len(wrong) >= 30
    assert sum(verdict in CATCH_ALL for verdict in wrong) <= 0.15 * len(wrong)


# --------------------------------------------------------------------------------------
# The report itself


def test_reports_read_the_same_every_time_and_hold_no_addresses():
    def reports():
        return [
            check_exercise_19_3(pitfalls.softmax_backward_sign_error),
            check_exercise_19_4(*pair(student.NoScaling)),
            check_exercise_19_4(*pair(student.StudentAttention)),
            check_exercise_19_4c(student.central_plus_minus),
            check_exercise_19_2(student.variance_estimate(), **FAST),
            check_exercise_19_1(RIGHT_19_1),
        ]

    for report, repeat in zip(reports(), reports(), strict=True):
        assert str(report) == str(repeat) == repr(report)
        assert "0x" not in str(report)
        assert all(len(line) <= _report.WIDTH for line in str(report).splitlines())
    first = reports()
    assert str(first[0]).startswith("Exercise 19.3 (b) · softmax row backward: not yet")
    assert str(first[5]).startswith("Exercise 19.1 (b) · soft lookup: passed")


def test_no_message_uses_the_phrases_a_student_could_not_parse():
    words = " ".join(
        text(report)
        for report in (
            check_exercise_19_3(lambda weights, grad_weights: weights / 0.0),
            check_exercise_19_4(*pair(student.UnguardedNegInf)),
            check_exercise_19_4(
                lambda Q, K, V, mask=None: library_forward(Q, K, V, None), attention_backward
            ),
            check_exercise_19_4(*pair(student.NoneBecomesCausal)),
        )
    )
    assert "on ordinary inputs" not in words
    assert "with mask=None differs" not in words and "(as the library and PyTorch do)" not in words


def test_report_passed_needs_an_attempt_and_no_findings():
    assert ExerciseReport("19.9", "t").passed
    assert not ExerciseReport("19.9", "t", attempted=False).passed
    assert not ExerciseReport("19.9", "t", (Finding("x", "y"),)).passed
    noted = ExerciseReport("19.9", "t", notes=(Finding("n", "a remark"),))
    assert noted.passed and "Note: a remark [n]" in str(noted)


def test_student_warnings_do_not_escape_under_warnings_as_errors():
    # pytest turns warnings into errors here; the overflow must still be diagnosed by name
    assert check_exercise_19_4(*pair(student.NoMaxSubtraction)).diagnoses == ("no_max_subtraction",)

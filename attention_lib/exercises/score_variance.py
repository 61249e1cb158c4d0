"""Exercise 19.2: the variance of a dot product, estimated by Monte Carlo.

The student's ``estimate(width, samples, seed)`` is judged from outside, by
what it returns for chosen arguments, with two tests whose tolerances follow
from the Monte Carlo standard error ``d_k * sqrt((2 + 6 / d_k) / n)`` of an
estimate from ``n`` samples (:func:`attention_lib.variance_standard_error`):

* **the mean**: at each width of ``widths`` the estimate with ``samples``
  samples lies within ``z`` standard errors of ``d_k``;
* **the scatter**: for each of ``SCATTER_PROBES`` (d_k = 8 with 250 and with
  4,000 samples, d_k = 64 with 1,000), the estimates of 32 seeds scatter as
  much as that sample count implies. Their sample variance divided by the
  squared standard error, times 31, is chi-square with 31 degrees of freedom
  for a right estimator (its estimates are close to normal at these counts),
  and must lie between that distribution's two tail quantiles. Far more
  scatter means fewer independent samples than asked for (or one query reused
  against every key), far less means more (or the dot products of every query
  with every key), none means the seed is not used.

A right estimator fails with probability at most ``FALSE_REJECTION`` = 1e-4:
``MEAN_BUDGET`` (3e-5) is shared by the means, ``TAIL_BUDGET`` (7.5e-6) goes to
each tail of each scatter probe, and the remaining 2.5e-5 cover the normal
approximation (tests/test_exercises.py runs a right estimator over many seeds
and measures how close it is). One seed gives one verdict, so a student who
reruns the checker sees the same report.

The answer must be a float (an int or a one-element list is refused, by name)
drawn from its own ``np.random.default_rng(seed)``: drawing from NumPy's
global generator is named too (the harness sees its state change).

What cannot be caught from outside: an answer that returns ``d_k`` plus noise
of exactly the right size, drawn from the seed, behaves like a right estimator
in every test above. The checker cannot tell it from one, and does not claim to.

A wrong answer is named by the model it matches: the mean of a typical mistake
(``np.std``, a division by ``d_k`` or ``sqrt(d_k)``, the products not summed,
``q`` and ``k`` the same vectors, ...) at every width, or the pattern of its
scatter.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from .._validation import require_whole_number
from ..variance import variance_standard_error
from ._harness import Stop, function_name, require_callable, run
from ._report import Finding

__all__ = ["check_exercise_19_2"]

VARIANCE_WIDTHS = (1, 8, 64, 512)
FALSE_REJECTION = 1e-4
# (width, samples) of the scatter probes: two sample counts 16 times apart, more than the
# band is wide, so no fixed count fits both; and a second width for the patterns that grow.
# The small probes run first: an answer that builds samples² numbers (every query with every
# key) is recognised on them, before it is asked for 4,000 or 20,000 samples.
SCATTER_PROBES = ((8, 250), (64, 1_000), (8, 4_000))
SCATTER_SEEDS = 32
# FALSE_REJECTION shared out: 3e-5 for the means (over the widths), 7.5e-6 for each tail of
# each scatter probe, and 2.5e-5 left for the normal approximation.
MEAN_BUDGET = 3e-5
TAIL_BUDGET = 7.5e-6
# The tolerance must stay within 10% of d_k at every width, or the check cannot tell d_k
# from a nearby wrong value.
MIN_RELATIVE_PRECISION = 0.1
_HINT = "chapter 19.2, eq. 19.2; notebook 02_why_sqrt_dk.ipynb"


def _chi_square_tail(x, dof, upper):
    """P(X <= x), or P(X > x) with ``upper``, for X chi-square with ``dof`` degrees of freedom.

    The regularised incomplete gamma function, by its series below the mean and
    its continued fraction above (Numerical Recipes, 6.2), so each tail is
    accurate on its own far out.
    """
    a, y = dof / 2, x / 2
    if y <= 0:
        return 0.0 if not upper else 1.0
    log_front = a * math.log(y) - y - math.lgamma(a)
    if y < a + 1:
        term = total = 1 / a
        n = a
        while abs(term) > 1e-17 * abs(total):
            n += 1
            term *= y / n
            total += term
        lower = math.exp(log_front) * total
        return 1 - lower if upper else lower
    b, c, d = y + 1 - a, 1 / 1e-300, 1 / (y + 1 - a)
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = 1e-300 if abs(d) < 1e-300 else d
        c = b + an / c
        c = 1e-300 if abs(c) < 1e-300 else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-16:
            break
    upper_tail = math.exp(log_front) * h
    return upper_tail if upper else 1 - upper_tail


def chi_square_quantile(p, dof, *, upper=False):
    """x with P(X <= x) = p (or P(X > x) = p with ``upper``), by bisection."""
    low, high = 0.0, 10.0 * dof + 100.0
    for _ in range(200):
        middle = (low + high) / 2
        beyond = _chi_square_tail(middle, dof, upper) > p
        if beyond == upper:  # lower tail: too much mass below, or upper: too much above
            low = middle
        else:
            high = middle
    return (low + high) / 2


def mean_z(widths):
    """Standard errors allowed at each width: a right estimate misses one with probability
    ``MEAN_BUDGET / len(widths)``."""
    return NormalDist().inv_cdf(1 - MEAN_BUDGET / len(widths) / 2)


_DOF = SCATTER_SEEDS - 1
# Bounds on (sample variance of the seeds' estimates) / (standard error)^2.
SCATTER_BAND = (
    chi_square_quantile(TAIL_BUDGET, _DOF) / _DOF,
    chi_square_quantile(TAIL_BUDGET, _DOF, upper=True) / _DOF,
)
_COUNTS_BY_WIDTH = {
    width: sorted(count for other, count in SCATTER_PROBES if other == width)
    for width, _ in SCATTER_PROBES
}
_PROBES_TEXT = f"{SCATTER_SEEDS} seeds each at " + " and at ".join(
    f"d_k = {width} with {' and '.join(f'{count:,}' for count in counts)} samples"
    for width, counts in _COUNTS_BY_WIDTH.items()
)
# The two mistakes whose estimates are about 1 at every width; only the scatter differs.
_ONE_AT_EVERY_WIDTH = ("divided_by_sqrt_d_k", "products_not_summed", "variance_of_entries")


def _estimate(student, estimate, width, samples, seed):
    label = f"estimate({width}, {samples}, {seed})"
    value = student.call(estimate, function_name(estimate, "estimate"), width, samples, seed)
    if value is None:
        raise Stop(Finding("returned_none", f"{label} returned None: a missing `return`?"))
    if isinstance(value, int | np.integer):  # bool included
        raise Stop(
            Finding(
                "wrong_type",
                f"{label} returned the whole number {value!r}: a variance is a real number, and "
                "`int(...)` (or `//`) cuts off its fraction. Return `float(...)`.",
            )
        )
    if not isinstance(value, float | np.floating) and not (
        isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind == "f"
    ):
        raise Stop(
            Finding(
                "wrong_type",
                f"{label} should return one number, a float, got {type(value).__name__}"
                + (f" of shape {np.shape(value)}" if np.ndim(value) else "")
                + ": `float(np.var(...))`.",
            )
        )
    number = float(value)
    if not np.isfinite(number):
        raise Stop(Finding("not_finite", f"{label} is {number}."))
    return number


def _mean_models(width, samples):
    """(name, expected value, standard error) for the right answer and each typical mistake."""
    error = variance_standard_error(width, samples)
    if width == 1:
        wrong_axis = (0.0, 1e-9 * samples)  # the variance of a single sum is 0
    else:
        # Summing over the samples gives `width` numbers of variance `samples`; the
        # variance of those few numbers is itself noisy: sd about samples * sqrt(2 / width).
        wrong_axis = ((width - 1) / width * samples, 1.2 * samples * np.sqrt(2 / width))
    return [
        ("right", width, error),
        ("std_instead_of_variance", np.sqrt(width), error / (2 * np.sqrt(width))),
        ("divided_by_d_k", 1 / width, error / width**2),
        ("products_not_summed", 1.0, np.sqrt(8 / (samples * width))),
        ("variance_of_entries", 1.0, np.sqrt(2 / (samples * width))),
        ("divided_by_sqrt_d_k", 1.0, error / width),
        ("same_vectors", 2.0 * width, np.sqrt((8 * width**2 + 48 * width) / samples)),
        ("samples_identical", 0.0, 1e-9 * width),
        ("mean_instead_of_variance", 0.0, np.sqrt(width / samples)),
        ("uniform_entries", 7 * width / 144, 7 * width / 144 * 2 / np.sqrt(samples)),
        ("one_product_scaled", width**2, width**2 * np.sqrt(8 / samples)),
        ("sum_over_wrong_axis", *wrong_axis),
    ]


_MISTAKES = {
    "std_instead_of_variance": "your estimates are close to sqrt(d_k), the standard deviation of "
    "q·k, not its variance d_k (np.std instead of np.var?).",
    "divided_by_d_k": "your estimates are close to 1/d_k: the dot products were divided by d_k "
    "(or averaged over the width with np.mean) before taking the variance. The exercise asks "
    "for the variance of the raw sum q·k.",
    "divided_by_sqrt_d_k": "your estimates are close to 1 at every width, and vary from seed to "
    "seed as the SCALED score `q·k / sqrt(d_k)` does: that is its variance. The exercise asks "
    "for the raw q·k, whose variance d_k is what the scale corrects.",
    "products_not_summed": "your estimates are close to 1 at every width, and vary from seed to "
    "seed as little as a variance over samples × d_k numbers does: `np.var(q * k)` is the "
    "variance of one product q_l k_l, which is 1. Sum the products over the width first (one "
    "dot product per sample: `np.sum(q * k, axis=1)`), then take the variance.",
    "variance_of_entries": "your estimates are close to 1 at every width, and vary from seed to "
    "seed as little as a variance over samples × d_k single entries does: you take the variance "
    "of the entries of q (or k), not of the dot products q·k.",
    "same_vectors": "your estimates are close to 2 d_k: q and k are the same vectors, so q·k is "
    "|q|², whose variance is 2 d_k. Two generators made with the same seed give the same "
    "numbers: draw q and k from one generator, one after the other.",
    "samples_identical": "your estimates are 0 at every width, up to rounding: every sample gives "
    "the same dot product. Is the generator made again for each sample "
    "(`np.random.default_rng(seed)` inside the loop restarts the same numbers)? Make it once, "
    "then draw every sample from it.",
    "mean_instead_of_variance": "your estimates are close to 0 at every width: that is the mean "
    "of q·k (np.mean?), not its variance.",
    "uniform_entries": "your estimates are close to 7 d_k / 144: the entries are uniform on "
    "[0, 1) (rng.random?), with mean 1/2 and variance 1/12. The exercise needs standard-normal "
    "entries, mean 0 and variance 1: rng.standard_normal.",
    "one_product_scaled": "your estimates are close to d_k²: one product q_1 k_1 multiplied by "
    "d_k has variance d_k², but a sum of d_k independent products has variance d_k. Variances "
    "of independent terms add; draw all d_k coordinates and sum their products.",
    "sum_over_wrong_axis": "your estimates track the sample count, not d_k: the products were "
    "summed over the samples instead of over the width (axis=0 instead of axis=1 for arrays "
    "of shape (samples, width), or arrays of shape (width, samples)).",
}


def _scatter_ratios(seed_estimates):
    """Each probe's sample variance over the seeds / the right estimator's variance."""
    return {
        (width, samples): float(np.var(values, ddof=1))
        / variance_standard_error(width, samples) ** 2
        for (width, samples), values in seed_estimates.items()
    }


def _scatter_finding(ratios):
    """A finding when a probe's scatter lies outside the band, named by the pattern.

    How many samples a right estimator would need to scatter as much (the
    effective count, ``samples / ratio``) tells the mistakes apart: a fixed count
    stays the same at every probe; a fraction of the samples asked for keeps
    their proportion; one reused vector (``|q|²``, effective count about
    ``d_k + 3``) ignores the count and grows with the width; every query with
    every key keeps the proportion and grows with the width.
    """
    low, high = SCATTER_BAND
    if all(low <= ratio <= high for ratio in ratios.values()):
        return None
    effective = {probe: probe[1] / max(ratio, 1e-300) for probe, ratio in ratios.items()}
    (narrow, few), wide_probe, (_, many) = SCATTER_PROBES
    follows_count = effective[(narrow, many)] / effective[(narrow, few)] > 4  # 16 if it does
    at_narrow = (effective[(narrow, few)] * effective[(narrow, many)]) ** 0.5
    if follows_count:
        at_narrow /= (few * many) ** 0.5  # per sample asked for
        at_wide = effective[wide_probe] / wide_probe[1]
    else:
        at_wide = effective[wide_probe]
    grows = at_wide / at_narrow > 2.5  # about 6 for the two mistakes that grow
    probes = _PROBES_TEXT
    if not follows_count and grows:
        return Finding(
            "one_vector_reused",
            f"your estimates ({probes}) vary from seed to seed as much as |q|² does, about "
            "sqrt(2 d_k), whatever the sample count: one query (or one key) is drawn once and "
            "reused against every key, so the estimate is |q|², not Var(q·k). Draw a fresh pair "
            "for every sample: two arrays of shape (samples, width).",
            _HINT,
        )
    if not follows_count:
        return Finding(
            "samples_ignored",
            f"your estimates ({probes}) vary from seed to seed as much as about "
            f"{_round(at_narrow)} samples would, whatever the number asked for: is the "
            "`samples` argument used for the number of pairs?",
            _HINT,
        )
    if grows:
        return _ALL_PAIRS if at_narrow > 3.9 else _VARIANCES_SUMMED
    more = at_narrow > 1
    return Finding(
        "too_many_samples" if more else "too_few_samples",
        f"your estimates ({probes}) vary from seed to seed as much as about "
        f"{at_narrow:.2g} times the number of samples asked for would: the function uses "
        f"{'more' if more else 'fewer'} independent samples than it is asked for (are "
        f"{'more' if more else 'fewer'} drawn{'' if more else ', or some reused'}? how is "
        "`samples` used?).",
        _HINT,
    )


_VARIANCES_SUMMED = Finding(
    "variances_summed",
    "your estimates are near d_k but vary from seed to seed far less than the variance of "
    "`samples` dot products allows, and the less the wider the vectors: you add up the variance "
    "of each coordinate's products (`np.var(q * k, axis=0).sum()`), which takes for granted that "
    "the variances of independent terms add, the very step of eq. 19.2 the measurement is to "
    "check. Take the variance of the dot products themselves: `np.var(np.sum(q * k, axis=1))`.",
    _HINT,
)
_ALL_PAIRS = Finding(
    "all_pairs",
    "your estimates are near d_k but vary from seed to seed far less than `samples` "
    "independent pairs allow, and the less the wider the vectors: you take the dot product of "
    "every query with every key (`q @ k.T`: samples² products that share their vectors), not "
    "of `samples` pairs. That also needs samples² numbers of memory (3.2 GB at 20,000). Use "
    "`np.sum(q * k, axis=1)`.",
    _HINT,
)


def _too_precise(seed_estimates):
    """The finding when the first two probes scatter too little, less so the wider, around d_k.

    Every query with every key scatters like about (d_k / 2 + 1.5) samples per sample asked
    for, the coordinates' variances added up like (d_k / 4 + 0.75): at d_k = 8, 5.5 and 2.75.
    """
    ratios = _scatter_ratios(seed_estimates)
    narrow_ratio, wide_ratio = ratios.values()
    pooled_right = all(
        abs(np.mean(values) - width)
        <= mean_z(ratios) * variance_standard_error(width, count) / np.sqrt(SCATTER_SEEDS)
        for (width, count), values in seed_estimates.items()
    )
    if not (
        pooled_right
        and max(narrow_ratio, wide_ratio) < SCATTER_BAND[0]
        and narrow_ratio / wide_ratio > 2.5  # the effective count per sample grows with d_k
    ):
        return None
    return _ALL_PAIRS if 1 / narrow_ratio > 3.9 else _VARIANCES_SUMMED


def _round(count):
    """A sample count to two significant digits, as the report prints it."""
    digits = max(0, math.floor(math.log10(max(count, 1))) - 1)
    return f"{round(count, -digits):,.0f}"


def _closest_in_scatter(candidates, seed_estimates):
    """The candidate mistake whose own seed-to-seed scatter is closest to the student's."""

    def distance(name):
        total = 0.0
        for (width, samples), values in seed_estimates.items():
            expected = {model[0]: model[2] for model in _mean_models(width, samples)}[name]
            total += abs(math.log(max(np.std(values, ddof=1), 1e-300) / expected))
        return total

    return min(candidates, key=distance)


def _findings(student, estimate, samples, widths, seed):
    require_callable(estimate, "estimate")
    z = mean_z(widths)
    worst = max(variance_standard_error(width, samples) / width for width in widths)
    if z * worst > MIN_RELATIVE_PRECISION:
        needed = max(
            int(np.ceil((2 + 6 / width) * (z / MIN_RELATIVE_PRECISION) ** 2)) for width in widths
        )
        raise Stop(
            Finding(
                "too_few_samples",
                f"with {samples:,} samples the estimate's standard error is up to "
                f"{100 * worst:.0f}% of d_k, so {z:.1f} standard errors cannot tell d_k from a "
                f"value 10% away. Use at least {needed:,} samples.",
                "variance_standard_error(width, samples) in attention_lib.variance",
            )
        )
    seed_estimates = {}
    for width, count in SCATTER_PROBES:
        values = [
            _estimate(student, estimate, width, count, seed + 1 + number)
            for number in range(SCATTER_SEEDS)
        ]
        if np.ptp(values) == 0:
            raise Stop(
                Finding(
                    "seed_unused",
                    f"your estimate does not change with the seed: estimate({width}, {count}, "
                    f"seed) gives {values[0]:.6g} for all {SCATTER_SEEDS} seeds. Is `seed` used "
                    "(np.random.default_rng(seed)), and does the function sample?",
                    _HINT,
                )
            )
        seed_estimates[width, count] = values
        precise = len(seed_estimates) == 2 and _too_precise(seed_estimates)
        if precise:
            raise Stop(precise)
    first = SCATTER_PROBES[0]
    if _estimate(student, estimate, *first, seed + 1) != seed_estimates[first][0]:
        raise Stop(
            Finding(
                "not_reproducible",
                "two calls with the same seed gave different estimates: draw the numbers from "
                "np.random.default_rng(seed), so that Restart and Run All gives the same result.",
                _HINT,
            )
        )
    scatter = _scatter_finding(_scatter_ratios(seed_estimates))
    estimates = {width: _estimate(student, estimate, width, samples, seed) for width in widths}
    within = {}
    for width in widths:
        for name, expected, error in _mean_models(width, samples):
            inside = abs(estimates[width] - expected) <= z * error
            within[name] = within.get(name, True) and inside
    if not within["right"]:
        named = [name for name in _MISTAKES if within[name]]
        if named:
            mistake = named[0]
            if mistake in _ONE_AT_EVERY_WIDTH:
                family = [name for name in named if name in _ONE_AT_EVERY_WIDTH]
                mistake = _closest_in_scatter(family, seed_estimates)
            raise Stop(Finding(mistake, _MISTAKES[mistake], _HINT))
    if scatter is not None:
        raise Stop(scatter)
    if not within["right"]:
        table = ", ".join(f"d_k={w}: {estimates[w]:.3g}" for w in widths)
        raise Stop(
            Finding(
                "wrong_estimate",
                f"your estimates ({table}) are not within {z:.1f} standard errors of d_k, and "
                "they match none of the usual mistakes. Estimate Var(q·k) for q, k with "
                "independent standard-normal entries.",
                _HINT,
            )
        )
    return [
        f"within {z:.1f} standard errors of d_k at d_k = {', '.join(map(str, widths))} "
        f"({samples:,} samples)",
        f"changes with the seed, and the estimates of {_PROBES_TEXT} scatter as much as their "
        "sample counts imply, neither much more nor much less",
        "the same seed gives the same estimate",
    ]


def check_exercise_19_2(estimate, *, samples=20_000, widths=VARIANCE_WIDTHS, seed=0):
    """Check a Monte Carlo estimate of ``Var(q · k)`` (exercise 19.2).

    ``estimate(width, samples, seed)`` must return the variance of ``q · k``
    over ``samples`` pairs of vectors with ``width`` independent
    standard-normal entries, drawn from ``np.random.default_rng(seed)``.

    It passes when it lies within 4.5 standard errors of ``d_k`` at every
    width (the standard error following from ``samples``,
    :func:`attention_lib.variance_standard_error`), when the estimates of 32
    seeds scatter as much as the sample counts of the scatter probes imply,
    and when one seed gives one answer; a right estimator fails with
    probability below 1e-4. Otherwise the usual mistakes are named (module
    docstring).

    Parameters
    ----------
    estimate : callable
        ``estimate(width, samples, seed) -> float``.
    samples : int, default 20_000
        Passed to ``estimate`` for the mean test; at least about 16,000 at width
        1, or 4.5 standard errors cannot tell ``d_k`` from a value 10% away.
    widths : tuple of int, default (1, 8, 64, 512)
    seed : int, default 0
        The mean test uses this seed, the scatter test the 32 after it.

    Returns
    -------
    ExerciseReport

    Examples
    --------
    >>> def std_by_mistake(width, samples, seed):
    ...     rng = np.random.default_rng(seed)
    ...     q, k = rng.standard_normal((2, samples, width))
    ...     return float(np.std(np.sum(q * k, axis=1)))
    >>> check_exercise_19_2(std_by_mistake, widths=(1, 8, 64)).diagnoses
    ('std_instead_of_variance',)
    """
    samples = require_whole_number(samples, "samples", minimum=2)
    seed = require_whole_number(seed, "seed", minimum=0)
    widths = tuple(require_whole_number(width, "widths", minimum=1) for width in widths)
    if not widths:
        raise ValueError("widths must name at least one width, got an empty tuple.")
    low, high = np.sqrt(SCATTER_BAND)
    note = (
        f"Tolerances: {mean_z(widths):.1f} standard errors, d_k * sqrt((2 + 6 / d_k) / samples), "
        "for each width's estimate; for the scatter, a sample standard deviation over the seeds "
        f"between {low:.2f} and {high:.2f} standard errors. A right estimate fails with "
        "probability below 1e-4."
    )
    return run(
        "19.2",
        "dot-product variance",
        lambda student: _findings(student, estimate, samples, widths, seed),
        note,
    )

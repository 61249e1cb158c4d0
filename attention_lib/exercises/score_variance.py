"""Exercise 19.2: the variance of a dot product, estimated by Monte Carlo.

The student's ``estimate(width, samples, seed)`` is judged from outside, by
what it returns for chosen arguments, with two tests whose tolerances follow
from the Monte Carlo standard error ``d_k * sqrt((2 + 6 / d_k) / n)`` of an
estimate from ``n`` samples (:func:`attention_lib.variance_standard_error`):

=================  ===================================================================
axis               values the probes cover
=================  ===================================================================
d_k (width)        1, 3, 8, 64, 512 (the mean); 1, 8, 64 (the scatter)
samples            250, 1,000, 4,000, 20,000, 50,000
seed               0 to 512, and one seed twice
=================  ===================================================================

* **the mean**: at each width of ``widths`` the estimate with ``samples``
  samples (seed 0) lies within ``z`` standard errors of ``d_k``;
* **the scatter**: for each of ``SCATTER_PROBES`` (d_k, samples, seeds), the
  estimates of that many seeds scatter as much as the sample count implies.
  Their sample variance over the squared standard error is close to a
  chi-square variable over its degrees of freedom for a right estimator, and
  must lie between two tail quantiles. The degrees of freedom are the seeds'
  less one, reduced for the estimates' own excess kurtosis (computed exactly
  from the moments of ``(q·k)²``: a variance of ``V`` has variance
  ``σ⁴ (2 / (S - 1) + γ / S)``, matched by a chi-square). Far more scatter
  means fewer independent samples than asked for (half of them, a cap on the
  count, pairs that share vectors, entries with heavier tails than a normal's),
  far less means more (every query with every key) or entries with lighter
  tails (uniform, ±1: visible at d_k = 1, where the scatter is ``E[x⁴]² - 1``),
  none means the seed is not used.

A right estimator fails with probability at most ``FALSE_REJECTION`` = 1e-4:
``MEAN_BUDGET`` (2.5e-5) is shared by the means, ``TAIL_BUDGET`` (4e-6) goes to
each tail of each scatter probe (10 tails), and the remaining 3.5e-5 cover the
approximations (tests/test_exercises.py runs a right estimator over many seeds
and measures how close they are). One seed gives one verdict, so a student who
reruns the checker sees the same report. The 512 seeds at d_k = 1 give a
right estimator's scatter to about 6% (one standard deviation): an estimator
with 1.5 times its variance (pairs that share a vector with their neighbours)
lands 2 such deviations above that probe's band and fails about 98 times in 100;
half the samples (twice the variance) fails it nearly always. The other probes,
with fewer seeds, have wider bands and catch either only now and then.

The answer must be a float (an int or a one-element list is refused, by name)
drawn from its own ``np.random.default_rng(seed)``: drawing from NumPy's
global generator is named too (the harness sees its state change).

What cannot be caught from outside: an answer that returns ``d_k`` plus noise
of exactly the right size, drawn from the seed, behaves like a right estimator
in every test above. The checker cannot tell it from one, and does not claim to.

A wrong answer is named by the model it matches: the mean of a typical mistake
(``np.std``, a division by ``d_k`` or ``sqrt(d_k)``, the products not summed,
``q`` and ``k`` the same vectors, ...) at every width, or the pattern of its
scatter; otherwise by how its estimates relate to ``d_k`` (a constant factor,
a power of ``d_k``, an offset).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from .._validation import require_whole_number
from ..variance import variance_standard_error
from ._harness import Mistakes, Stop, function_name, require_callable, run

__all__ = ["check_exercise_19_2"]

VARIANCE_WIDTHS = (1, 3, 8, 64, 512)
FALSE_REJECTION = 1e-4
# (width, samples, seeds) of the scatter probes: two sample counts 16 times apart at d_k = 8,
# more than the band is wide, so no fixed count fits both; a second width for the patterns
# that grow with it; many seeds at d_k = 1, where the entries' distribution shows; and 50,000
# samples, beyond the mean test's count, where a capped count shows. The small probes run
# first: an answer that builds samples² numbers (every query with every key) is recognised on
# them, before it is asked for more.
SCATTER_PROBES = ((8, 250, 32), (64, 1_000, 32), (8, 4_000, 32), (1, 1_000, 512), (1, 50_000, 40))
MEAN_BUDGET = 2.5e-5
TAIL_BUDGET = 4e-6
# The tolerance must stay within 10% of d_k at every width, or the check cannot tell d_k
# from a nearby wrong value.
MIN_RELATIVE_PRECISION = 0.1


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


def excess_kurtosis(width, samples):
    """The excess kurtosis of a right estimate from ``samples`` samples: that of ``(q·k)²``
    over ``samples``, from its raw moments ``E[s^2m] = (2m-1)!! d (d+2) ... (d+2m-2)``."""
    d = width
    m1, m2, m3, m4 = (
        d,
        3 * d * (d + 2),
        15 * d * (d + 2) * (d + 4),
        105 * d * (d + 2) * (d + 4) * (d + 6),
    )
    mu2 = m2 - m1**2
    mu4 = m4 - 4 * m3 * m1 + 6 * m2 * m1**2 - 3 * m1**4
    return (mu4 - 3 * mu2**2) / (samples * mu2**2)


def scatter_band(width, samples, seeds):
    """Bounds on (sample variance of the seeds' estimates) / (standard error)²: chi-square
    quantiles over degrees of freedom reduced for the estimates' excess kurtosis."""
    dof = 2 / (2 / (seeds - 1) + excess_kurtosis(width, samples) / seeds)
    return (
        chi_square_quantile(TAIL_BUDGET, dof) / dof,
        chi_square_quantile(TAIL_BUDGET, dof, upper=True) / dof,
    )


SCATTER_BANDS = {probe: scatter_band(*probe) for probe in SCATTER_PROBES}
_PROBES_TEXT = ", ".join(f"d_k = {w} with {n:,} samples ({s} seeds)" for w, n, s in SCATTER_PROBES)
# The mistakes whose estimates are about 1 at every width; only the scatter differs.
_ONE_AT_EVERY_WIDTH = ("divided_by_sqrt_d_k", "products_not_summed", "variance_of_entries")


def _estimate(student, estimate, width, samples, seed):
    label = f"estimate({width}, {samples}, {seed})"
    value = student.call(estimate, function_name(estimate, "estimate"), width, samples, seed)
    if value is None:
        raise MISTAKES.stop("returned_none", f"{label} returned None: a missing `return`?")
    if isinstance(value, int | np.integer):  # bool included
        raise MISTAKES.stop(
            "wrong_type",
            f"{label} returned the whole number {value!r}: a variance is a real number, and "
            "`int(...)` (or `//`) cuts off its fraction. Return `float(...)`.",
        )
    if not isinstance(value, float | np.floating):  # a 0-d array is an array, as the statement says
        raise MISTAKES.stop(
            "wrong_type",
            f"{label} should return one number, a float, got {type(value).__name__}"
            + (f" of shape {np.shape(value)}" if isinstance(value, np.ndarray) else "")
            + ": `float(np.var(...))`.",
        )
    number = float(value)
    if not np.isfinite(number):
        raise MISTAKES.stop("not_finite", f"{label} is {number}.")
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


MISTAKES = Mistakes("19.2", "b")


def _ratios(seed_estimates):
    """Each probe's sample variance over the seeds / the right estimator's variance."""
    return {
        probe: float(np.var(values, ddof=1)) / variance_standard_error(*probe[:2]) ** 2
        for probe, values in seed_estimates.items()
    }


def _outside(ratios):
    return {
        probe: ratio
        for probe, ratio in ratios.items()
        if not SCATTER_BANDS[probe][0] <= ratio <= SCATTER_BANDS[probe][1]
    }


def _scatter_finding(ratios):
    """A finding when a probe's scatter lies outside its band, named by the pattern.

    How many samples a right estimator would need to scatter as much (the
    effective count, ``samples / ratio``) tells the mistakes apart: a fixed count
    stays the same at every probe; a fraction of the samples asked for keeps
    their proportion; a cap keeps the count below it and stops above; one reused
    vector (``|q|²``, effective count about ``d_k + 3``) ignores the count and
    grows with the width; every query with every key keeps the proportion and
    grows with the width; entries that are not normal show at d_k = 1 alone.
    """
    outside = _outside(ratios)
    if not outside:
        return None
    effective = {probe: probe[1] / max(ratio, 1e-300) for probe, ratio in ratios.items()}
    few, wide, many, ones, huge = SCATTER_PROBES
    follows_count = effective[many] / effective[few] > 4  # 16 if it does
    at_narrow = (effective[few] * effective[many]) ** 0.5
    if follows_count:
        at_narrow /= (few[1] * many[1]) ** 0.5  # per sample asked for
        at_wide = effective[wide] / wide[1]
    else:
        at_wide = effective[wide]
    grows = at_wide / at_narrow > 2.5  # about 6 for the two mistakes that grow
    if not follows_count and grows:
        return MISTAKES.finding("one_vector_reused", probes=_PROBES_TEXT)
    if not follows_count:
        return MISTAKES.finding("samples_ignored", probes=_PROBES_TEXT, count=_round(at_narrow))
    if grows:
        return MISTAKES.finding("all_pairs" if at_narrow > 3.9 else "variances_summed")
    if set(outside) == {huge}:
        return MISTAKES.finding(
            "samples_capped", small=many[1], large=huge[1], count=_round(effective[huge])
        )
    if (
        set(outside) <= {ones, huge}
        and ones in outside
        and abs(math.log(ratios[ones])) > abs(math.log(ratios[huge]))
    ):
        kurtosis = math.sqrt(max(8 * ratios[ones] + 1, 0))
        light = ratios[ones] < 1
        how = f"{'less' if light else 'more'} than standard-normal entries allow"
        how += f" ({ratios[ones]:.2g} times their variance)"
        why = (
            "Lighter tails than a normal's: uniform entries scaled to variance 1 give 1.8, "
            "±1 entries give 1. Draw `rng.standard_normal`."
            if light
            else "Heavier tails than a normal's, or pairs that share a vector (each dot product "
            "then depends on the next, as when keys are the queries shifted by one): draw "
            "independent standard-normal q and k for every pair."
        )
        return MISTAKES.finding("entries_not_normal", how=how, kurtosis=kurtosis, why=why)
    ratio = 1 / at_narrow
    if ratio < 1:
        return MISTAKES.finding("too_many_samples", probes=_PROBES_TEXT, ratio=1 / ratio)
    return MISTAKES.finding(
        "too_few_samples",
        f"your estimates ({_PROBES_TEXT}) vary from seed to seed as much as about "
        f"{1 / ratio:.2g} times the number of samples asked for would: the function uses fewer "
        "independent samples than it is asked for (are fewer drawn, or some reused? how is "
        "`samples` used?).",
    )


def _too_precise(seed_estimates):
    """The finding when the first two probes scatter too little, less so the wider, around d_k.

    Every query with every key scatters like about (d_k / 2 + 1.5) samples per sample asked
    for, the coordinates' variances added up like (d_k / 4 + 0.75): at d_k = 8, 5.5 and 2.75.
    """
    ratios = _ratios(seed_estimates)
    (narrow, narrow_ratio), (wide, wide_ratio) = ratios.items()
    pooled_right = all(
        abs(np.mean(values) - width)
        <= mean_z(ratios) * variance_standard_error(width, count) / np.sqrt(seeds)
        for (width, count, seeds), values in seed_estimates.items()
    )
    if not (
        pooled_right
        and narrow_ratio < SCATTER_BANDS[narrow][0]
        and wide_ratio < SCATTER_BANDS[wide][0]
        and narrow_ratio / wide_ratio > 2.5  # the effective count per sample grows with d_k
    ):
        return None
    return MISTAKES.finding("all_pairs" if 1 / narrow_ratio > 3.9 else "variances_summed")


def _round(count):
    """A sample count to two significant digits, as the report prints it."""
    digits = max(0, math.floor(math.log10(max(count, 1))) - 1)
    return f"{round(count, -digits):,.0f}"


def _closest_in_scatter(candidates, seed_estimates):
    """The candidate mistake whose own seed-to-seed scatter is closest to the student's."""

    def distance(name):
        total = 0.0
        for (width, samples, _), values in list(seed_estimates.items())[:3]:
            expected = {model[0]: model[2] for model in _mean_models(width, samples)}[name]
            total += abs(math.log(max(np.std(values, ddof=1), 1e-300) / expected))
        return total

    return min(candidates, key=distance)


def _relation(estimates, samples, z):
    """How the estimates relate to d_k when they miss it: a factor, a power, an offset."""
    widths = np.array(list(estimates))
    values = np.array(list(estimates.values()))
    errors = np.array([variance_standard_error(w, samples) for w in widths])
    table = ", ".join(f"d_k={w}: {v:.3g}" for w, v in estimates.items())
    far = np.any(np.abs(values / widths - 1) > 0.25)  # nearer, "biased" says more
    if len(widths) >= 2 and np.all(values > 0) and far:
        power, log_c = np.polyfit(np.log(widths), np.log(values), 1)
        fitted = np.exp(log_c) * widths**power
        if np.all(np.abs(values - fitted) <= z * errors * np.maximum(fitted / widths, 1)):
            c = math.exp(log_c)
            if abs(power - 1) < 0.02:
                return "estimate_off_by_factor", (
                    f"your estimates ({table}) are {c:.3g} times d_k at every width: Var(q·k) is "
                    "d_k itself. Something multiplies or divides by a constant (a variance of 2 "
                    "in the entries, a factor of 2 in the sum, ddof=samples?)."
                )
            return "estimate_power", (
                f"your estimates ({table}) grow like {c:.3g} × d_k^{power:.2g}, not like d_k: "
                "Var(q·k) is d_k, the sum of d_k products of variance 1. Which step changes "
                "with the width in your code?"
            )
    side = np.sign(values - widths)
    if np.all(side == side[0]) and np.all(np.abs(values - widths) > errors):
        shares = ", ".join(f"{abs(v / w - 1):.0%} at d_k = {w}" for w, v in estimates.items())
        return "estimate_biased", (
            f"your estimates ({table}) are {'below' if side[0] < 0 else 'above'} d_k at every "
            f"width, by {shares}: the estimator is biased. Does it drop, clip or add samples "
            "(outliers removed, a range cut off)? The variance of every dot product drawn is "
            "what is asked."
        )
    offset = np.mean(values - widths)
    if np.all(np.abs(values - widths - offset) <= z * errors) and abs(offset) > 0:
        return "estimate_offset", (
            f"your estimates ({table}) are d_k {'+' if offset > 0 else '-'} {abs(offset):.3g} at "
            "every width: something adds a constant (a mean not subtracted, a term of its own?)."
        )
    return "wrong_estimate", (
        f"your estimates ({table}) are not within {z:.1f} standard errors of d_k, and they match "
        "none of the usual mistakes. Estimate Var(q·k) for q, k with independent standard-normal "
        "entries."
    )


def _scatter(student, estimate, probe, seed):
    width, count, seeds = probe
    values = [_estimate(student, estimate, width, count, seed + 1 + n) for n in range(seeds)]
    if np.ptp(values) == 0:
        raise MISTAKES.stop("seed_unused", width=width, count=count, value=values[0], seeds=seeds)
    return values


def _findings(student, estimate, samples, widths, seed):
    require_callable(estimate, "estimate")
    z = mean_z(widths)
    worst = max(variance_standard_error(width, samples) / width for width in widths)
    if z * worst > MIN_RELATIVE_PRECISION:
        needed = max(
            int(np.ceil((2 + 6 / width) * (z / MIN_RELATIVE_PRECISION) ** 2)) for width in widths
        )
        message = (
            f"with {samples:,} samples the estimate's standard error is up to "
            f"{100 * worst:.0f}% of d_k, so {z:.1f} standard errors cannot tell d_k from a value "
            f"10% away. Use at least {needed:,} samples."
        )
        hint = "variance_standard_error(width, samples) in attention_lib.variance"
        raise Stop(MISTAKES.finding("too_few_samples", message)._replace(hint=hint))
    seed_estimates = {}
    for probe in SCATTER_PROBES[:3]:
        seed_estimates[probe] = _scatter(student, estimate, probe, seed)
        precise = len(seed_estimates) == 2 and _too_precise(seed_estimates)
        if precise:
            raise Stop(precise)
    first = SCATTER_PROBES[0]
    if _estimate(student, estimate, *first[:2], seed + 1) != seed_estimates[first][0]:
        raise MISTAKES.stop("not_reproducible")
    estimates = {width: _estimate(student, estimate, width, samples, seed) for width in widths}
    within = {}
    for width in widths:
        for name, expected, error in _mean_models(width, samples):
            inside = abs(estimates[width] - expected) <= z * error
            within[name] = within.get(name, True) and inside
    if not within["right"]:
        named = [name for name in MISTAKES if within.get(name)]
        if named:
            mistake = named[0]
            if mistake in _ONE_AT_EVERY_WIDTH:
                family = [name for name in named if name in _ONE_AT_EVERY_WIDTH]
                mistake = _closest_in_scatter(family, seed_estimates)
            raise MISTAKES.stop(mistake)
        scatter = _scatter_finding(_ratios(seed_estimates))
        if scatter is not None and scatter.diagnosis != "too_few_samples":
            raise Stop(scatter)
        name, message = _relation(estimates, samples, z)
        raise MISTAKES.stop(name, message)
    for probe in SCATTER_PROBES[3:]:
        seed_estimates[probe] = _scatter(student, estimate, probe, seed)
    scatter = _scatter_finding(_ratios(seed_estimates))
    if scatter is not None:
        raise Stop(scatter)
    return MISTAKES.checked(
        z=z, widths=", ".join(map(str, widths)), samples=samples, probes=_PROBES_TEXT
    )


def check_exercise_19_2(estimate, *, samples=20_000, widths=VARIANCE_WIDTHS, seed=0):
    """Check a Monte Carlo estimate of ``Var(q · k)`` (exercise 19.2).

    ``estimate(width, samples, seed)`` must return the variance of ``q · k``
    over ``samples`` pairs of vectors with ``width`` independent
    standard-normal entries, drawn from ``np.random.default_rng(seed)``.

    It passes when it lies within about 4.5 standard errors of ``d_k`` at every
    width (the standard error following from ``samples``,
    :func:`attention_lib.variance_standard_error`), when the estimates of many
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
    widths : tuple of int, default (1, 3, 8, 64, 512)
    seed : int, default 0
        The mean test uses this seed, the scatter test the ones after it.

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
    low = min(np.sqrt(band[0]) for band in SCATTER_BANDS.values())
    high = max(np.sqrt(band[1]) for band in SCATTER_BANDS.values())
    note = (
        f"Tolerances: {mean_z(widths):.1f} standard errors, d_k * sqrt((2 + 6 / d_k) / samples), "
        "for each width's estimate; for the scatter, a sample standard deviation over the seeds "
        f"between {low:.2f} and {high:.2f} standard errors (by probe). A right estimate fails "
        "with probability below 1e-4."
    )
    return run(
        "19.2",
        "b",
        "dot-product variance",
        lambda student: _findings(student, estimate, samples, widths, seed),
        note,
    )

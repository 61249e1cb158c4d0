"""Independent reference for exercises 19.1-19.4 (red-team set 1).

Written from the exercise statements and chapter 19 only (NumPy, float64); nothing here is taken
from attention_lib.  Besides the reference implementations, this module holds the checks that prove
labels: each ``check_*`` returns ``None`` when an answer does what the statement asks on one input,
or a one-line description of how it breaks the statement.  ``right_*`` run a whole battery (and raise
``AssertionError`` on the first problem); ``witness_*`` run a chosen part of it on a wrong answer and
return the problem found (or raise ``AssertionError`` if there is none).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import warnings
import zlib

import numpy as np

# =====================================================================================  generic


def rel_err(a, r):
    """||a - r|| / (||a|| + ||r||), 0 when both are 0."""
    a = np.asarray(a, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    num = float(np.linalg.norm((a - r).ravel()))
    den = float(np.linalg.norm(a.ravel()) + np.linalg.norm(r.ravel()))
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def found(problem, what="a violation"):
    """Witness helper: return the problem string, or fail if there is none."""
    if problem is None:
        raise AssertionError(f"witness found no {what}")
    return problem


def _call(fn, *args, **kwargs):
    """Call an answer; an exception becomes a description (an allowed input must not raise)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                return True, fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any exception on an allowed input is a failure
        return False, f"raised {type(exc).__name__}: {str(exc)[:120]}"


def never_returns(module, func, args_src, timeout=3.0, control=None):
    """Run ``module.func(*args)`` in a fresh interpreter; prove it is still running after ``timeout``.

    ``control`` names a function of the same module that must return under the same harness
    (so a hang of the harness itself cannot pass for an infinite loop).
    """
    here = os.path.dirname(os.path.abspath(__file__))

    def run(name):
        code = (
            f"import sys; sys.path.insert(0, {here!r}); import numpy as np; "
            f"import {module} as m; m.{name}(*{args_src}); print('RETURNED')"
        )
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        try:
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True,
                timeout=timeout, env=env,
            )
            return "RETURNED" in out.stdout, out.stderr[-300:]
        except subprocess.TimeoutExpired:
            return None, ""

    if control is not None:
        ok, err = run(control)
        assert ok, f"harness control {control} did not return: {err}"
    ok, err = run(func)
    if ok is None:
        return f"{func}{args_src} still running after {timeout:.0f} s (the control returned at once)"
    raise AssertionError(f"{func} returned or failed instead of looping: {err}")


# =====================================================================================  19.1

ANSWERS_19_1 = {
    "query": "b",
    "key": "c",
    "value": "a",
    "values_doubled": "a",
    "equal_scores": "c",
}


def check_19_1(answer):
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):  # a student's print() is not the answer
        ok, got = (True, answer) if not callable(answer) else _call(answer)
    if not ok:
        return got
    if not isinstance(got, dict):
        return f"answer is a {type(got).__name__}, not a dict of letters"
    if set(got) != set(ANSWERS_19_1):
        missing = sorted(set(ANSWERS_19_1) - set(got))
        extra = sorted(set(got) - set(ANSWERS_19_1))
        return f"dict keys differ from the statement's: missing {missing}, unexpected {extra}"
    for key, letter in ANSWERS_19_1.items():
        if got[key] is None:
            return f"question {key!r} skipped (None)"
        if not isinstance(got[key], str) or got[key] != letter:
            return f"{key!r}: answered {got[key]!r}, the right letter is {letter!r}"
    return None


def right_19_1(answer):
    problem = check_19_1(answer)
    assert problem is None, problem
    return "all five letters right"


# =====================================================================================  19.2


def variance_se(d, n):
    """Monte Carlo standard error of a variance estimate of q.k from n pairs (statement's formula)."""
    return d * math.sqrt((2.0 + 6.0 / d) / n)


def reference_variance(width, samples, seed):
    """My own estimator (ddof=0), one generator per seed."""
    rng = np.random.default_rng(seed)
    pairs = rng.standard_normal((2, samples, width))
    return float(np.var(np.einsum("nd,nd->n", pairs[0], pairs[1])))


def _norm_sf(z):
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def chi2_two_sided_p(stat, dof):
    """Two-sided p-value of a chi-square statistic (Wilson-Hilferty normal approximation)."""
    if stat <= 0:
        return 0.0
    z = ((stat / dof) ** (1.0 / 3.0) - (1.0 - 2.0 / (9.0 * dof))) / math.sqrt(2.0 / (9.0 * dof))
    return min(1.0, 2.0 * _norm_sf(abs(z)))


def _estimates(f, width, samples, seeds):
    out = []
    for s in seeds:
        ok, v = _call(f, width, samples, int(s))
        if not ok:
            raise _AnswerError(v)
        try:
            out.append(float(v))
        except Exception:  # noqa: BLE001
            raise _AnswerError(f"returned {v!r}, not a float") from None
    return np.array(out)


class _AnswerError(Exception):
    pass


def scatter(f, width, samples, n_seeds, first_seed=1000):
    """Seed-to-seed variance of the estimates against the variance the sample count implies.

    Returns (ratio observed/expected, two-sided p-value with n_seeds - 1 degrees of freedom).
    """
    est = _estimates(f, width, samples, range(first_seed, first_seed + n_seeds))
    if not np.all(np.isfinite(est)):
        return math.nan, 0.0
    expected = variance_se(width, samples) ** 2
    observed = float(np.var(est, ddof=1))
    ratio = observed / expected
    return ratio, chi2_two_sided_p(ratio * (n_seeds - 1), n_seeds - 1)


def mean_z(f, width, samples, n_seeds, first_seed=5000):
    """z-score of the average estimate over n_seeds seeds against d_k."""
    est = _estimates(f, width, samples, range(first_seed, first_seed + n_seeds))
    if not np.all(np.isfinite(est)):
        return math.inf
    return float((est.mean() - width) / (variance_se(width, samples) / math.sqrt(n_seeds)))


def check_19_2_type(f, width=8, samples=500, seed=3):
    ok, v = _call(f, width, samples, seed)
    if not ok:
        return f"f({width}, {samples}, {seed}) {v}"
    if isinstance(v, bool) or not isinstance(v, float):
        return f"f({width}, {samples}, {seed}) returned a {type(v).__name__} ({v!r}), not one float"
    if not math.isfinite(v):
        return f"f({width}, {samples}, {seed}) returned {v}"
    return None


def check_19_2_deterministic(f):
    a = _call(f, 8, 500, 3)
    b = _call(f, 64, 200, 4)
    c = _call(f, 8, 500, 3)
    if not (a[0] and c[0]):
        return f"call failed: {a[1] if not a[0] else c[1]}"
    if not np.array_equal(np.asarray(a[1], dtype=float), np.asarray(c[1], dtype=float)):
        return f"seed 3 gave {a[1]!r}, then {c[1]!r} after another call: one seed, two answers"
    return None


def check_19_2_seed_used(f):
    vals = [_call(f, 8, 500, s) for s in (1, 2, 3)]
    if not all(ok for ok, _ in vals):
        return "call failed"
    numbers = [float(np.asarray(v, dtype=float).ravel()[0]) for _, v in vals]
    if len(set(numbers)) < 3:
        return f"seeds 1, 2, 3 give {numbers}: the seed does not change the draw"
    return None


def check_19_2_global_rng(f):
    np.random.seed(4321)
    before = np.random.get_state()
    ok, v = _call(f, 8, 300, 7)
    after = np.random.get_state()
    touched = not (np.array_equal(before[1], after[1]) and before[2] == after[2])
    if touched:
        return "the call moved NumPy's global random state (np.random.seed / np.random.* used)"
    return None


def check_19_2_mean(f, widths=(1, 8, 64, 512), samples=20_000, seed=2024, k=4.5):
    for d in widths:
        ok, v = _call(f, d, samples, seed)
        if not ok:
            return f"f({d}, {samples}, {seed}) {v}"
        v = float(np.asarray(v, dtype=float).ravel()[0])
        se = variance_se(d, samples)
        if not (abs(v - d) <= k * se):
            return f"f({d}, {samples}, {seed}) = {v:.4g}, {abs(v - d) / se:.1f} standard errors from {d}"
    return None


def check_19_2_scatter(f, cases=((8, 250), (8, 4000), (64, 1000)), n_seeds=48, alpha=1e-6):
    for d, n in cases:
        try:
            ratio, p = scatter(f, d, n, n_seeds)
        except _AnswerError as exc:
            return f"f({d}, {n}, seed) {exc}"
        if not p >= alpha:
            return (
                f"d_k={d}, n={n}: seed-to-seed variance is {ratio:.3g} times what {n} samples imply "
                f"(chi-square, {n_seeds} seeds, two-sided p = {p:.1e} < {alpha:g})"
            )
    return None


def right_19_2(f):
    for check in (
        check_19_2_type,
        check_19_2_deterministic,
        check_19_2_seed_used,
        check_19_2_global_rng,
        check_19_2_mean,
        lambda f: check_19_2_mean(f, widths=(3, 100), samples=3001, seed=77),
        check_19_2_scatter,
    ):
        problem = check(f)
        assert problem is None, problem
    return "float, deterministic per seed, own generator, mean within 4.5 SE, scatter in band"


def witness_scatter(f, width, samples, n_seeds, alpha=1e-6, first_seed=1000):
    """Statistical witness: the scatter over n_seeds seeds is outside the chi-square band."""
    try:
        ratio, p = scatter(f, width, samples, n_seeds, first_seed)
    except _AnswerError as exc:
        return f"f({width}, {samples}, seed) {exc}"
    if not p < alpha:
        raise AssertionError(f"scatter ratio {ratio:.3g}, p = {p:.2g}: not significant")
    return (
        f"d_k={width}, n={samples}: estimates vary {ratio:.3g} times as much as n pairs imply "
        f"({n_seeds} seeds, chi-square two-sided p = {p:.1e} < {alpha:g})"
    )


def witness_mean(f, width, samples, n_seeds, k=6.0, first_seed=5000):
    """Statistical witness: the average over n_seeds estimates is more than k SE from d_k."""
    try:
        z = mean_z(f, width, samples, n_seeds, first_seed)
    except _AnswerError as exc:
        return f"f({width}, {samples}, seed) {exc}"
    if not abs(z) > k:
        raise AssertionError(f"mean only {z:.2f} SE from d_k")
    p = 2 * _norm_sf(abs(z)) if math.isfinite(z) else 0.0
    return (
        f"d_k={width}, n={samples}: average of {n_seeds} estimates is {z:+.1f} standard errors "
        f"from d_k (two-sided p = {p:.1e}): biased"
    )


# =====================================================================================  19.3


def softmax_backward_ref(weights, grad_weights):
    a = np.asarray(weights, dtype=np.float64)
    g = np.asarray(grad_weights, dtype=np.float64)
    return a * (g - np.sum(a * g, axis=-1, keepdims=True))


def softmax_rows(scores):
    """Stable softmax along the last axis; -inf entries get weight exactly 0 (rows need one finite)."""
    s = np.asarray(scores, dtype=np.float64)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def case_19_3(shape, dtype=np.float64, seed=0, masked=True, spread=2.0):
    rng = np.random.default_rng(seed)
    s = spread * rng.standard_normal(shape)
    T = shape[-1]
    if masked and T > 1:
        rows = s.reshape(-1, T)
        for r in range(rows.shape[0]):
            rows[r, rng.integers(T)] = -np.inf  # one masked key per row, as the checker does
            if T > 3 and rng.random() < 0.5:
                rows[r, rng.integers(T)] = -np.inf
            if np.all(np.isneginf(rows[r])):
                rows[r, 0] = 0.0
        s = rows.reshape(shape)
    w = softmax_rows(s).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    return w, g


def check_19_3_case(f, weights, grad_weights):
    w0, g0 = weights.copy(), grad_weights.copy()
    ok, out = _call(f, weights, grad_weights)
    where = f"shape {weights.shape} {weights.dtype}"
    if not (np.array_equal(weights, w0) and weights.dtype == w0.dtype):
        return f"{where}: weights changed by the call"
    if not (np.array_equal(grad_weights, g0) and grad_weights.dtype == g0.dtype):
        return f"{where}: grad_weights changed by the call (in-place update of the caller's array)"
    if not ok:
        return f"{where}: {out}"
    if not isinstance(out, np.ndarray):
        return f"{where}: returned a {type(out).__name__}, not a NumPy array"
    if out.shape != weights.shape:
        return f"{where}: returned shape {out.shape}"
    if out.dtype not in (np.float32, np.float64):
        return f"{where}: returned dtype {out.dtype}"
    if not np.all(np.isfinite(out)):
        return f"{where}: non-finite entries"
    ref = softmax_backward_ref(weights, grad_weights)
    tol = 1e-4 if np.float32 in (weights.dtype, out.dtype) else 1e-6
    err = rel_err(out, ref)
    if not err < tol:
        return f"{where}: relative error {err:.2e} >= {tol:g}"
    blocked = weights == 0
    if np.any(out[blocked] != 0):
        return f"{where}: masked key (weight 0) got gradient {out[blocked][out[blocked] != 0][0]:.3g}, not exactly 0"
    return None


BATTERY_19_3 = [
    ((3, 5), np.float64),
    ((4, 4), np.float64),
    ((2, 3, 6), np.float64),
    ((6,), np.float64),
    ((3, 5), np.float32),
    ((5,), np.float64),
    ((1, 5), np.float64),
    ((2, 1, 4), np.float64),
    ((2, 2, 3, 4), np.float64),
    ((3, 40), np.float64),
    ((7, 2), np.float64),
    ((4, 1), np.float64),
    ((2, 3, 6), np.float32),
    ((6,), np.float32),
    ((4, 4), np.float32),
]


def run_19_3(f, battery=BATTERY_19_3, seed=11):
    for i, (shape, dtype) in enumerate(battery):
        w, g = case_19_3(shape, dtype, seed + i)
        problem = check_19_3_case(f, w, g)
        if problem is not None:
            return problem
    # unmasked rows and a second call with other values
    for i, (shape, dtype) in enumerate([((3, 5), np.float64), ((2, 4), np.float32)]):
        w, g = case_19_3(shape, dtype, 99 + i, masked=False)
        problem = check_19_3_case(f, w, g)
        if problem is not None:
            return problem
    return None


def right_19_3(f):
    problem = run_19_3(f)
    assert problem is None, problem
    return f"{len(BATTERY_19_3) + 2} shapes/dtypes within tolerance, masked keys exactly 0, no mutation"


def witness_19_3(f, shapes):
    """Run the 19.3 checks on the listed (shape, dtype) pairs; return the first violation."""
    return found(run_19_3(f, shapes, seed=31))


# =====================================================================================  19.4


def causal(Tq, Tk, offset=0):
    """Query i may read key j when j <= i + offset."""
    return np.arange(Tk)[None, :] <= np.arange(Tq)[:, None] + offset


def attn_forward_ref(Q, K, V, mask=None):
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    d = Q.shape[-1]
    S = np.matmul(Q, np.swapaxes(K, -1, -2)) / math.sqrt(d)
    m = np.ones(S.shape, dtype=bool) if mask is None else np.broadcast_to(np.asarray(mask, bool), S.shape)
    Sm = np.where(m, S, -np.inf)
    top = np.max(Sm, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.where(m, np.exp(np.where(m, Sm - top, 0.0)), 0.0)
    den = np.sum(e, axis=-1, keepdims=True)
    A = np.where(den > 0, e / np.where(den > 0, den, 1.0), 0.0)
    return A @ V, (Q, K, V, A, m)


def attn_backward_ref(G, cache):
    Q, K, V, A, m = cache
    G = np.asarray(G, dtype=np.float64)
    c = 1.0 / math.sqrt(Q.shape[-1])
    gV = np.swapaxes(A, -1, -2) @ G
    gA = G @ np.swapaxes(V, -1, -2)
    gS = A * (gA - np.sum(gA * A, axis=-1, keepdims=True))
    return (gS @ K) * c, (np.swapaxes(gS, -1, -2) @ Q) * c, gV


def _normal_case(rng, lead, Tq, Tk, dk, dv, dtype=np.float64):
    Q = rng.standard_normal((*lead, Tq, dk))
    K = rng.standard_normal((*lead, Tk, dk))
    V = rng.standard_normal((*lead, Tk, dv))
    G = rng.standard_normal((*lead, Tq, dv))
    return [x.astype(dtype) for x in (Q, K, V, G)]


def _tied_case(rng, lead, Tq, Tk, dk, dv, level, signs=None):
    """Scores near +-level with O(1) differences between keys (so the gradients are O(1))."""
    u = rng.standard_normal(dk)
    u /= np.linalg.norm(u)
    a = math.sqrt(abs(level) * math.sqrt(dk))
    sign = np.ones(Tq) if signs is None else np.asarray(signs, float)
    Q = (sign * math.copysign(1.0, level))[:, None] * a * u + 0.05 * rng.standard_normal((*lead, Tq, dk))
    K = a * u + 0.05 * rng.standard_normal((*lead, Tk, dk))
    V = rng.standard_normal((*lead, Tk, dv))
    G = rng.standard_normal((*lead, Tq, dv))
    return Q, K, V, G


def make_case_19_4(kind, seed=0):
    """Inputs the statement allows, by name. Returns dict(Q, K, V, mask, G, call)."""
    rng = np.random.default_rng(zlib.crc32(kind.encode()) % 10_000 + 7919 * seed)
    call = "positional"
    if kind == "causal5":
        Q, K, V, G = _normal_case(rng, (), 5, 5, 4, 3)
        mask = causal(5, 5)
    elif kind == "first_queries":
        Q, K, V, G = _normal_case(rng, (), 5, 5, 4, 3)
        G[2:] = 0.0
        mask = causal(5, 5)
    elif kind == "square_dk_eq_dv":
        Q, K, V, G = _normal_case(rng, (), 4, 4, 4, 4)
        mask = causal(4, 4)
    elif kind == "large":
        Q, K, V, G = _tied_case(rng, (), 5, 5, 4, 3, 850.0)
        mask = causal(5, 5)
    elif kind == "large_negative":
        Q, K, V, G = _tied_case(rng, (), 5, 5, 4, 3, -850.0)
        mask = causal(5, 5)
    elif kind == "far_rows":
        Q, K, V, G = _tied_case(rng, (), 6, 6, 4, 3, 850.0, signs=[1, -1, 1, -1, 1, -1])
        mask = causal(6, 6, offset=2)
    elif kind == "spread_keys":
        # within one row, readable scores near +850 and near -850
        Q, K, V, G = _tied_case(rng, (), 5, 6, 4, 3, 850.0)
        K[1::2] *= -1.0
        mask = causal(5, 6, offset=1)
    elif kind == "blocked_high":
        Q, K, V, G = _normal_case(rng, (), 4, 5, 6, 3)
        K[4] = np.linalg.pinv(Q) @ np.full(4, 900.0 * math.sqrt(6))  # score 900 with every query
        mask = causal(4, 5)  # key 4 is never readable
    elif kind == "empty_row":
        Q, K, V, G = _normal_case(rng, (), 5, 5, 4, 3)
        mask = causal(5, 5)
        mask[2] = False
        mask[4, 1] = False
    elif kind == "all_masked":
        Q, K, V, G = _normal_case(rng, (2,), 3, 4, 4, 2)
        mask = np.array([[[True, True, False, False]], [[False, False, False, False]]])
    elif kind == "very_negative_readable":
        # readable scores around -300: a finite fill such as -100 is not a block any more
        Q, K, V, G = _tied_case(rng, (), 5, 5, 4, 3, -300.0)
        mask = causal(5, 5)
    elif kind == "rect":
        Q, K, V, G = _normal_case(rng, (), 3, 6, 4, 3)
        mask = causal(3, 6, offset=3)
    elif kind == "rect_plain":
        Q, K, V, G = _normal_case(rng, (), 3, 6, 4, 3)
        mask = causal(3, 6)
    elif kind == "tall":
        Q, K, V, G = _normal_case(rng, (), 6, 3, 4, 2)
        mask = causal(6, 3)
    elif kind == "heads":
        Q, K, V, G = _normal_case(rng, (2, 2), 5, 5, 4, 3)
        mask = causal(5, 5)
    elif kind == "batch_causal":
        Q, K, V, G = _normal_case(rng, (3,), 5, 5, 4, 2)
        mask = causal(5, 5)
    elif kind == "padding":
        Q, K, V, G = _normal_case(rng, (3,), 4, 6, 4, 3)
        valid = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 1, 1, 0, 1]], bool)
        mask = valid[:, None, :]
    elif kind == "padding_self":
        Q, K, V, G = _normal_case(rng, (2,), 5, 5, 4, 4)
        valid = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], bool)
        mask = valid[:, None, :]
    elif kind == "padding_heads":
        Q, K, V, G = _normal_case(rng, (2, 3), 4, 5, 4, 3)
        valid = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
        mask = valid[:, None, None, :]
    elif kind == "full_mask":
        Q, K, V, G = _normal_case(rng, (2,), 4, 5, 3, 2)
        mask = rng.random((2, 4, 5)) < 0.6
        mask[1, 2] = False
    elif kind == "row_mask":
        Q, K, V, G = _normal_case(rng, (), 4, 5, 4, 3)
        mask = np.array([[True], [False], [True], [True]])
    elif kind == "key_mask_1d":
        Q, K, V, G = _normal_case(rng, (2,), 3, 5, 4, 3)
        mask = np.array([True, False, True, True, False])
    elif kind == "none":
        Q, K, V, G = _normal_case(rng, (2,), 4, 6, 4, 3)
        mask = None
        call = "keyword"
    elif kind == "none_omitted":
        Q, K, V, G = _normal_case(rng, (), 5, 5, 4, 3)
        mask = None
        call = "omit"
    elif kind == "none_2d":
        Q, K, V, G = _normal_case(rng, (), 4, 5, 4, 3)
        mask = None
    elif kind == "dk5":
        Q, K, V, G = _normal_case(rng, (2,), 4, 7, 5, 2)
        mask = causal(4, 7, offset=3)
    elif kind == "dk8":
        Q, K, V, G = _normal_case(rng, (2,), 4, 4, 8, 3)
        mask = causal(4, 4)
    elif kind == "dk6_2d":
        Q, K, V, G = _normal_case(rng, (), 5, 5, 6, 3)
        mask = causal(5, 5)
    elif kind == "dk1":
        Q, K, V, G = _normal_case(rng, (), 4, 4, 1, 2)
        mask = causal(4, 4)
    elif kind == "single_key":
        Q, K, V, G = _normal_case(rng, (2,), 3, 1, 4, 3)
        mask = None
    elif kind == "three_lead":
        Q, K, V, G = _normal_case(rng, (2, 2, 2), 4, 3, 3, 2)
        mask = causal(4, 3)
    elif kind == "float32":
        Q, K, V, G = _normal_case(rng, (2,), 5, 5, 4, 3, np.float32)
        mask = causal(5, 5)
    elif kind == "float32_padding":
        Q, K, V, G = _normal_case(rng, (2,), 3, 6, 6, 2, np.float32)
        mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0]], bool)[:, None, :]
    elif kind == "float32_empty":
        Q, K, V, G = _normal_case(rng, (), 4, 4, 4, 3, np.float32)
        mask = causal(4, 4)
        mask[1] = False
    else:
        raise KeyError(kind)
    Q, K, V, G = (np.ascontiguousarray(x) for x in (Q, K, V, G))
    return {"kind": kind, "Q": Q, "K": K, "V": V, "mask": mask, "G": G, "call": call}


KINDS_19_4 = [
    "causal5", "first_queries", "square_dk_eq_dv", "large", "large_negative", "far_rows", "spread_keys",
    "blocked_high", "empty_row", "all_masked", "very_negative_readable", "rect", "rect_plain",
    "tall", "heads", "batch_causal", "padding", "padding_self", "padding_heads", "full_mask",
    "row_mask", "key_mask_1d", "none", "none_omitted", "none_2d", "dk5", "dk8", "dk6_2d", "dk1",
    "single_key", "three_lead", "float32", "float32_padding", "float32_empty",
]


def _fwd(fwd, c):
    Q, K, V, mask = c["Q"], c["K"], c["V"], c["mask"]
    if c["call"] == "omit":
        return _call(fwd, Q, K, V)
    if c["call"] == "keyword":
        return _call(fwd, Q, K, V, mask=mask)
    return _call(fwd, Q, K, V, mask)


def _mask_desc(mask):
    return "mask=None" if mask is None else f"mask {np.shape(mask)}"


def check_19_4_case(fwd, bwd, c):
    """One case: forward, then backward on its cache; every rule of the statement."""
    Q, K, V, mask, G = c["Q"], c["K"], c["V"], c["mask"], c["G"]
    where = f"[{c['kind']}] Q{Q.shape} K{K.shape} V{V.shape} {Q.dtype} {_mask_desc(mask)}"
    saved = {n: (None if x is None else x.copy()) for n, x in
             (("Q", Q), ("K", K), ("V", V), ("mask", mask), ("grad_output", G))}
    current = {"Q": Q, "K": K, "V": V, "mask": mask, "grad_output": G}

    def mutated():
        for n, x0 in saved.items():
            x = current[n]
            if x0 is not None and not (np.array_equal(x, x0) and x.dtype == x0.dtype):
                return f"{where}: the caller's {n} was changed"
        return None

    ok, res = _fwd(fwd, c)
    if not ok:
        return f"{where}: forward {res}"
    if mutated():
        return mutated() + " by forward"
    if not (isinstance(res, tuple) and len(res) == 2):
        return f"{where}: forward returned {type(res).__name__}, not (output, cache)"
    out, cache = res
    ref_out, ref_cache = attn_forward_ref(Q, K, V, mask)
    ref_grads = attn_backward_ref(G, ref_cache)
    low = Q.dtype == np.float32
    problem = _compare(where, "output", out, ref_out, low)
    if problem:
        return problem
    A_ref, m = ref_cache[3], ref_cache[4]
    empty = ~np.any(m, axis=-1)  # (..., T_q): queries with no readable key
    if np.any(np.asarray(out)[empty] != 0):
        return f"{where}: a query with no readable key has output {np.asarray(out)[empty].ravel()[:3]}, not exactly 0"
    ok, grads = _call(bwd, G, cache)
    if not ok:
        return f"{where}: backward {grads}"
    if mutated():
        return mutated() + " by backward"
    if not (isinstance(grads, (tuple, list)) and len(grads) == 3):
        return f"{where}: backward returned {type(grads).__name__}, not (grad_Q, grad_K, grad_V)"
    for name, g, r in zip(("grad_Q", "grad_K", "grad_V"), grads, ref_grads):
        problem = _compare(where, name, g, r, low)
        if problem:
            return problem
    gQ, gK, gV = (np.asarray(g) for g in grads)
    if np.any(gQ[empty] != 0):
        return f"{where}: a query with no readable key has grad_Q {gQ[empty].ravel()[:3]}, not exactly 0"
    live = np.any(G != 0, axis=-1)  # (..., T_q)
    read = np.any(m & live[..., :, None], axis=-2)  # (..., T_k): read by a query with a gradient
    for name, g in (("grad_K", gK), ("grad_V", gV)):
        if np.any(g[~read] != 0):
            bad = g[~read]
            return (
                f"{where}: a key no query with a gradient can read gets {name} "
                f"{bad[bad != 0][0]:.3g}, not exactly 0"
            )
    return None


def _compare(where, name, got, ref, low):
    if not isinstance(got, np.ndarray):
        return f"{where}: {name} is a {type(got).__name__}, not an array"
    if got.shape != ref.shape:
        return f"{where}: {name} has shape {got.shape}, expected {ref.shape}"
    if got.dtype not in (np.float32, np.float64):
        return f"{where}: {name} has dtype {got.dtype}"
    if not np.all(np.isfinite(got)):
        return f"{where}: {name} has {np.sum(~np.isfinite(got))} non-finite entries (NaN/inf)"
    tol = 1e-4 if (low or got.dtype == np.float32) else 1e-6
    err = rel_err(got, ref)
    if not err < tol:
        return f"{where}: {name} relative error {err:.2e} >= {tol:g}"
    return None


def check_19_4_sequence(fwd, bwd):
    """Two forward calls before the first backward, a second backward on the same cache, repeats."""
    a = make_case_19_4("batch_causal", seed=1)
    b = make_case_19_4("dk5", seed=2)
    b2 = make_case_19_4("batch_causal", seed=3)
    results = {}
    for c in (a, b, b2):
        ok, res = _fwd(fwd, c)
        if not ok:
            return f"[sequence] forward {res}"
        results[c["kind"] + str(id(c))] = res
    for c in (a, b, b2):
        out, cache = results[c["kind"] + str(id(c))]
        ref_out, ref_cache = attn_forward_ref(c["Q"], c["K"], c["V"], c["mask"])
        if rel_err(out, ref_out) >= 1e-6:
            return f"[sequence] output of an earlier forward call changed by a later one ({c['kind']})"
        ok, grads = _call(bwd, c["G"], cache)
        if not ok:
            return f"[sequence] backward {grads}"
        ref = attn_backward_ref(c["G"], ref_cache)
        for name, g, r in zip(("grad_Q", "grad_K", "grad_V"), grads, ref):
            err = rel_err(g, r) if np.shape(g) == r.shape else math.inf
            if not err < 1e-6:
                return (
                    f"[sequence] forward(A), forward(B), forward(C), then backward on A's cache: "
                    f"{name} relative error {err:.2e} ({c['kind']} {c['Q'].shape})"
                )
    # repeating the very first problem must give the same answer as the first time
    ok, res = _fwd(fwd, a)
    if not ok or rel_err(res[0], results[a["kind"] + str(id(a))][0]) >= 1e-12:
        return "[sequence] the same inputs gave a different output on a later call"
    return None


def run_19_4(pair, kinds=KINDS_19_4, sequence=True, seeds=(0,)):
    fwd, bwd = pair
    for seed in seeds:
        for kind in kinds:
            problem = check_19_4_case(fwd, bwd, make_case_19_4(kind, seed))
            if problem is not None:
                return problem
    if sequence:
        return check_19_4_sequence(fwd, bwd)
    return None


def right_19_4(pair):
    problem = run_19_4(pair, seeds=(0, 1))
    assert problem is None, problem
    return f"{2 * len(KINDS_19_4)} cases + call sequence agree with the reference, exact zeros, no mutation"


def witness_19_4(pair, kinds, sequence=False):
    return found(run_19_4(pair, kinds, sequence=sequence))


# -------------------------------------------------------------- planted backward passes (mine)


def backward_sign_error(G, cache):
    Q, K, V, A, m = cache
    c = 1.0 / math.sqrt(Q.shape[-1])
    gV = np.swapaxes(A, -1, -2) @ G
    gA = G @ np.swapaxes(V, -1, -2)
    gS = A * (gA + np.sum(gA * A, axis=-1, keepdims=True))
    return (gS @ K) * c, (np.swapaxes(gS, -1, -2) @ Q) * c, gV


def backward_no_scale(G, cache):
    gQ, gK, gV = attn_backward_ref(G, cache)
    c = math.sqrt(cache[0].shape[-1])
    return gQ * c, gK * c, gV


def backward_bad_V(G, cache):
    gQ, gK, gV = attn_backward_ref(G, cache)
    return gQ, gK, 1.5 * gV


# =====================================================================================  19.4c


def central_difference_ref(f, X, h=1e-6):
    X = np.array(X, dtype=np.float64)
    grad = np.zeros_like(X)
    for idx in np.ndindex(X.shape):
        Xp = X.copy()
        Xm = X.copy()
        Xp[idx] = X[idx] + h
        Xm[idx] = X[idx] - h
        grad[idx] = (f(Xp) - f(Xm)) / (2.0 * h)
    return grad


def gradient_errors_ref(forward, backward, Q, K, V, mask, grad_output):
    out, cache = forward(Q, K, V, mask)
    grads = backward(grad_output, cache)
    losses = (
        lambda X: float(np.sum(grad_output * forward(X, K, V, mask)[0])),
        lambda X: float(np.sum(grad_output * forward(Q, X, V, mask)[0])),
        lambda X: float(np.sum(grad_output * forward(Q, K, X, mask)[0])),
    )
    return tuple(
        rel_err(g, central_difference_ref(L, X)) for g, L, X in zip(grads, losses, (Q, K, V))
    )


# smooth test functions for central_difference
def _f_trig(X):
    return float(np.sum(np.sin(X) * X**2) + 0.5 * np.sum(X) ** 2)


def _f_log(X):
    return float(np.log1p(np.sum(X**2)) + np.prod(np.cos(X)))


def _grad_f_trig(X):
    return np.cos(X) * X**2 + 2 * X * np.sin(X) + np.sum(X)


def _cd_inputs():
    rng = np.random.default_rng(404)
    yield "shape (4,)", rng.standard_normal(4) * 2, _f_trig
    yield "shape (2, 3)", rng.standard_normal((2, 3)), _f_trig
    yield "shape (2, 2, 3)", rng.standard_normal((2, 2, 3)), _f_log
    yield "0-d array", np.array(0.7), _f_trig
    yield "shape (1, 5)", rng.uniform(-3, 3, (1, 5)), _f_log
    yield "a (3, 4) view, transposed", rng.standard_normal((4, 3)).T, _f_trig


CD_STEPS = ("omit", None, 1e-4, 3e-6, "positional-1e-5")


def check_cd_case(cd, X, f, h, where):
    X0 = X.copy()
    bits0 = np.ascontiguousarray(X0).view(np.uint64).copy()
    records = []

    def watched(Z):
        Z = np.asarray(Z)
        records.append(np.array(Z, dtype=np.float64, copy=True))
        return f(Z)

    if h == "omit":
        ok, out = _call(cd, watched, X)
        h_given = None
    elif h == "positional-1e-5":
        ok, out = _call(cd, watched, X, 1e-5)
        h_given = 1e-5
    else:
        ok, out = _call(cd, watched, X, h=h)
        h_given = h
    where = f"{where}, h={'(omitted)' if h == 'omit' else h_given}"
    bits = np.ascontiguousarray(X).view(np.uint64)
    if X.shape != X0.shape or not np.array_equal(bits, bits0):
        k = int(np.sum(bits != bits0))
        return f"{where}: X not given back exactly ({k} entries differ afterwards, e.g. by {np.max(np.abs(X - X0)):.1e})"
    if not ok:
        return f"{where}: {out}"
    out = np.asarray(out)
    if out.shape != X.shape:
        return f"{where}: returned shape {out.shape}, X has shape {X.shape}"
    if not np.issubdtype(out.dtype, np.floating):
        return f"{where}: returned dtype {out.dtype}"
    # where was f evaluated?
    n = X0.size
    plus = [[] for _ in range(n)]
    minus = [[] for _ in range(n)]
    flat0 = X0.ravel()
    for rec in records:
        if rec.shape != X0.shape:
            return f"{where}: f evaluated at an array of shape {rec.shape}"
        diff = rec.ravel() - flat0
        nz = np.flatnonzero(diff)
        if nz.size == 0:
            continue  # f(X) itself: not asked for, but not forbidden
        if nz.size > 1:
            return f"{where}: f evaluated with {nz.size} entries moved at once"
        i = int(nz[0])
        (plus if diff[i] > 0 else minus)[i].append(float(diff[i]))
    for i in range(n):
        if not plus[i] or not minus[i]:
            return f"{where}: entry {i} never moved by {'+h' if not plus[i] else '-h'}"
    steps = np.array([s for lst in plus for s in lst] + [-s for lst in minus for s in lst])
    h_used = float(np.median(steps)) if h_given is None else h_given
    slack = 1e-6 * h_used + 8 * np.spacing(np.max(np.abs(flat0)) + 1.0)
    if np.any(np.abs(steps - h_used) > slack):
        bad = steps[np.argmax(np.abs(steps - h_used))]
        return f"{where}: an entry was moved by {bad:.3e}, not by h = {h_used:.3e}"
    if h_given is None and not (1e-7 * (1 - 1e-6) <= h_used <= 1e-3 * (1 + 1e-6)):
        return f"{where}: the default step is {h_used:.2e}, outside [1e-7, 1e-3]"
    expected = central_difference_ref(f, X0, h_used)
    if not np.all(np.abs(out - expected) <= 1e-7 * (1.0 + np.abs(expected))):
        k = np.argmax(np.abs(out - expected))
        return (
            f"{where}: entry {k} is {out.ravel()[k]:.8g}, the central difference "
            f"(f(X+h e_i) - f(X-h e_i))/(2h) is {expected.ravel()[k]:.8g}"
        )
    return None


def run_cd(cd, steps=CD_STEPS, inputs=None):
    for label, X, f in (inputs or list(_cd_inputs())):
        for h in steps:
            problem = check_cd_case(cd, X.copy() if X.flags.owndata else X, f, h, label)
            if problem is not None:
                return problem
    return None


def _ge_problems():
    """(name, Q, K, V, mask, G) for gradient_errors."""
    out = []
    for kind in ("causal5", "rect", "heads", "padding", "none", "empty_row"):
        c = make_case_19_4(kind, seed=5)
        out.append((kind, c["Q"], c["K"], c["V"], c["mask"], c["G"]))
    return out


def _errors(ge, fwd, bwd, Q, K, V, mask, G):
    ok, errs = _call(ge, fwd, bwd, Q, K, V, mask, G)
    if not ok:
        return None, errs
    try:
        errs = [float(e) for e in errs]
    except Exception:  # noqa: BLE001
        return None, f"returned {errs!r}, not three numbers"
    if len(errs) != 3:
        return None, f"returned {len(errs)} numbers, not 3"
    return errs, None


def backward_forces_causal(G, cache):
    """Planted: re-applies a causal mask to the cached weights (right only when the mask was causal)."""
    Q, K, V, A, m = cache
    return attn_backward_ref(G, (Q, K, V, A * causal(*A.shape[-2:]), m))


PLANTED = {
    "correct backward": attn_backward_ref,
    "row-term sign error": backward_sign_error,
    "backward wrong only in grad_V": backward_bad_V,
    "backward that re-applies a causal mask": backward_forces_causal,
}
_TRUTH = {}


def _truth(name, problem):
    key = (name, problem[0])
    if key not in _TRUTH:
        _, Q, K, V, mask, G = problem
        _TRUTH[key] = gradient_errors_ref(attn_forward_ref, PLANTED[name], Q, K, V, mask, G)
    return _TRUTH[key]


def check_ge(ge, problems=None, scales=(1.0, 1e5, 1e-5)):
    """gradient_errors must say pass (< 1e-6) or fail exactly where the true relative errors do.

    The truth is my gradient_errors_ref; it is far from the 1e-6 line for every planted backward
    (correct ones below 1e-8, wrong ones above 1e-2), so the verdict does not hang on the choice of
    step or of relative-error formula.  A relative error must also not change with the loss's scale.
    """
    problems = problems or _ge_problems()
    for problem in problems:
        name, Q, K, V, mask, G = problem
        saved = [None if x is None else x.copy() for x in (Q, K, V, mask, G)]
        for scale in scales:
            Gs = G * scale
            for bname, bwd in PLANTED.items():
                if scale != 1.0 and bname not in ("correct backward", "row-term sign error"):
                    continue
                where = f"[{name}] grad_output x {scale:g}, {bname}"
                true = _truth(bname, problem)
                assert all(t < 1e-8 or t > 1e-2 for t in true), (where, true)
                errs, bad = _errors(ge, attn_forward_ref, bwd, Q, K, V, mask, Gs)
                if bad:
                    return f"{where}: {bad}"
                if not all(math.isfinite(e) and e >= 0 for e in errs):
                    return f"{where}: errors {_fmt(errs)} are not finite non-negative numbers"
                verdict = [e < 1e-6 for e in errs]
                truth = [t < 1e-6 for t in true]
                if verdict != truth:
                    return (
                        f"{where}: reports errors {_fmt(errs)} for (grad_Q, grad_K, grad_V), "
                        f"the true relative errors are {_fmt(true)}"
                    )
                if bname == "row-term sign error":
                    if scale == 1.0:
                        base = errs
                    elif not all(abs(e - b) <= 1e-3 * b for e, b in zip(errs[:2], base[:2])):
                        return (
                            f"{where}: errors {_fmt(errs)} vs {_fmt(base)} at scale 1: "
                            "they change with the scale of the loss, so they are not relative errors"
                        )
        for x, x0 in zip((Q, K, V, mask, G), saved):
            if x0 is not None and not np.array_equal(x, x0):
                return f"[{name}]: gradient_errors changed an input array"
    return None


def _fmt(errs):
    return "(" + ", ".join(f"{e:.2e}" for e in errs) + ")"


def right_19_4c(pair):
    cd, ge = pair
    problem = run_cd(cd)
    assert problem is None, "central_difference: " + problem
    problem = check_ge(ge)
    assert problem is None, "gradient_errors: " + problem
    return "central_difference exact points/steps/values on 6 inputs x 5 steps; gradient_errors sound"


def witness_cd(pair, steps=CD_STEPS, inputs=None):
    return "central_difference: " + found(run_cd(pair[0], steps, inputs))


def witness_ge(pair, problems=None, scales=(1.0, 1e5, 1e-5)):
    if problems is not None:
        problems = [p for p in _ge_problems() if p[0] in problems]
    return "gradient_errors: " + found(check_ge(pair[1], problems, scales))

"""Exercise 19.2 (b): estimate_score_variance(width, samples, seed), as students write it."""

import math
import statistics

import numpy as np

try:
    from . import reference as ref
    from .common import Attempt
except ImportError:
    import reference as ref
    from common import Attempt


# =================================================================================== right


def esv_listing(width, samples, seed):
    """Like listing 19.2."""
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((samples, width))
    K = rng.standard_normal((samples, width))
    return float(np.var(np.sum(Q * K, axis=1)))


def esv_ddof1(width, samples, seed):
    """Unbiased sample variance (ddof=1)."""
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, samples, width))
    scores = np.einsum("ij,ij->i", q, k)
    return float(scores.var(ddof=1))


def esv_known_mean(width, samples, seed):
    """E[q.k] = 0 is known, so the variance is the mean square."""
    rng = np.random.default_rng(seed)
    q = rng.normal(0.0, 1.0, size=(samples, width))
    k = rng.normal(0.0, 1.0, size=(samples, width))
    s = (q * k).sum(axis=-1)
    return float(np.mean(s**2))


def esv_pair_loop(width, samples, seed):
    """One pair at a time, Welford's running variance."""
    rng = np.random.default_rng(seed)
    mean = 0.0
    m2 = 0.0
    for n in range(1, samples + 1):
        q = rng.standard_normal(width)
        k = rng.standard_normal(width)
        s = float(q @ k)
        delta = s - mean
        mean += delta / n
        m2 += delta * (s - mean)
    return m2 / samples


def esv_statistics(width, samples, seed):
    """Python's statistics module on the list of dot products."""
    gen = np.random.Generator(np.random.PCG64(seed))  # what default_rng(seed) builds
    pairs = gen.standard_normal((samples, 2, width))
    dots = [float(p[0] @ p[1]) for p in pairs]
    return statistics.pvariance(dots)


def esv_float32(width, samples, seed):
    """Draws in float32 to halve the memory, accumulates the variance in float64."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width), dtype=np.float32)
    k = rng.standard_normal((samples, width), dtype=np.float32)
    s = np.sum(q * k, axis=1, dtype=np.float64)
    return float(np.var(s))


def esv_chunked(width, samples, seed):
    """Streams the pairs in chunks, keeping the remainder; sums of s and s^2."""
    rng = np.random.default_rng(seed)
    total = 0.0
    total_sq = 0.0
    done = 0
    while done < samples:
        n = min(4096, samples - done)
        q = rng.standard_normal((n, width))
        k = rng.standard_normal((n, width))
        s = np.einsum("nd,nd->n", q, k)
        total += s.sum()
        total_sq += (s * s).sum()
        done += n
    mean = total / samples
    return float(total_sq / samples - mean * mean)


def esv_matmul_diag(width, samples, seed):
    """Row-wise dot products via a batched matmul of (n,1,d) by (n,d,1)."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, 1, width))
    k = rng.standard_normal((samples, width, 1))
    s = (q @ k).reshape(samples)
    centred = s - s.mean()
    return (centred @ centred / (samples - 1)).item()


def esv_flat_draw(width, samples, seed):
    """One flat draw of 2 * samples * width numbers, split in two."""
    numbers = np.random.default_rng(seed).standard_normal(2 * samples * width)
    q = numbers[: samples * width].reshape(samples, width)
    k = numbers[samples * width :].reshape(samples, width)
    s = np.sum(q * k, axis=1)
    return math.fsum((s - s.mean()) ** 2) / samples


# =================================================================================== wrong


def esv_global_seed(width, samples, seed):
    np.random.seed(seed)
    q = np.random.randn(samples, width)
    k = np.random.randn(samples, width)
    return float(np.var(np.sum(q * k, axis=1)))


def esv_unseeded(width, samples, seed):
    rng = np.random.default_rng()  # forgot to pass the seed
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    return float(np.var(np.sum(q * k, axis=1)))


def esv_same_seed_twice(width, samples, seed):
    q = np.random.default_rng(seed).standard_normal((samples, width))
    k = np.random.default_rng(seed).standard_normal((samples, width))  # the same numbers again
    return float(np.var(np.sum(q * k, axis=1)))


def esv_one_key(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal(width)  # one key for every query
    return float(np.var(q @ k))


def esv_split_half(width, samples, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((samples, width))  # "samples vectors", paired up
    q, k = x[: samples // 2], x[samples // 2 :]
    return float(np.var(np.sum(q * k[: len(q)], axis=1)))


def esv_capped(width, samples, seed):
    rng = np.random.default_rng(seed)
    n = min(samples, 10_000)  # keep memory small
    q = rng.standard_normal((n, width))
    k = rng.standard_normal((n, width))
    return float(np.var(np.sum(q * k, axis=1)))


def esv_chunks_drop_tail(width, samples, seed):
    rng = np.random.default_rng(seed)
    chunk = 1000
    scores = []
    for _ in range(samples // chunk):  # the last partial chunk is lost
        q = rng.standard_normal((chunk, width))
        k = rng.standard_normal((chunk, width))
        scores.append(np.sum(q * k, axis=1))
    return float(np.var(np.concatenate(scores))) if scores else float("nan")


def esv_rolled_pairs(width, samples, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((samples, width))
    y = np.roll(x, 1, axis=0)  # pair each vector with the previous one: half the draws
    return float(np.var(np.sum(x * y, axis=1)))


def esv_all_pairs(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    return float(np.var(q @ k.T))  # every query with every key: samples**2 scores


def esv_entry_variance(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    # Var(s) = d_k * Var(q_l k_l): estimate the per-entry variance and multiply
    return float(width * np.var(q * k))


def esv_uniform(width, samples, seed):
    rng = np.random.default_rng(seed)
    a = math.sqrt(3.0)  # uniform on [-sqrt 3, sqrt 3] has variance 1 too
    q = rng.uniform(-a, a, (samples, width))
    k = rng.uniform(-a, a, (samples, width))
    return float(np.var(np.sum(q * k, axis=1)))


def esv_signs(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.choice([-1.0, 1.0], size=(samples, width))  # mean 0, variance 1
    k = rng.choice([-1.0, 1.0], size=(samples, width))
    return float(np.var(np.sum(q * k, axis=1)))


def esv_clip_outliers(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    s = np.sum(q * k, axis=1)
    limit = 3 * math.sqrt(width)  # drop "outliers" beyond 3 standard deviations
    return float(np.var(s[np.abs(s) <= limit]))


def esv_scaled(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    return float(np.var(np.sum(q * k, axis=1) / math.sqrt(width)))  # the scaled score


def esv_std(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    return float(np.std(np.sum(q * k, axis=1)))


def esv_cov(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    return np.cov(np.sum(q * k, axis=1))  # a 0-d array


def esv_rounded(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    return round(np.var(np.sum(q * k, axis=1)).item())  # "it should be d_k, an integer"


def esv_wrong_axis(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    return float(np.var(np.sum(q * k, axis=0)))


def esv_theory(width, samples, seed):
    rng = np.random.default_rng(seed)
    rng.standard_normal((samples, width))
    return float(width)  # Var(s) = d_k, derived in (a)


def esv_squeezed(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width)).squeeze()
    k = rng.standard_normal((samples, width)).squeeze()
    return float(np.var(np.sum(q * k, axis=1)))


_esv_rng = None


def esv_module_rng(width, samples, seed):
    global _esv_rng
    if _esv_rng is None:  # create the generator once, not on every call
        _esv_rng = np.random.default_rng(seed)
    q = _esv_rng.standard_normal((samples, width))
    k = _esv_rng.standard_normal((samples, width))
    return float(np.var(np.sum(q * k, axis=1)))


def esv_welford_hang(width, samples, seed):
    rng = np.random.default_rng(seed)
    s = np.sum(rng.standard_normal((samples, width)) * rng.standard_normal((samples, width)), axis=1)
    mean = s.mean()
    total = 0.0
    i = 0
    while i < samples:
        total += (s[i] - mean) ** 2
    i += 1  # meant to be inside the loop
    return total / samples


def esv_unit_uniform(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.random((samples, width))  # "random numbers"
    k = rng.random((samples, width))
    return float(np.var(np.sum(q * k, axis=1)))


# =================================================================================== witnesses


def _type(f):
    return lambda: ref.found(ref.check_19_2_type(f), "type problem")


ATTEMPTS = [
    Attempt("19.2-001", "19.2", "right", "Listing 19.2 with the seed and sample count passed through.",
            esv_listing),
    Attempt("19.2-002", "19.2", "right",
            "One (2, n, d) draw, einsum dot products, unbiased ddof=1 variance (the statement allows either).",
            esv_ddof1),
    Attempt("19.2-003", "19.2", "right",
            "Uses the known mean E[q.k]=0: the mean of s**2, which has exactly the standard error the statement quotes.",
            esv_known_mean),
    Attempt("19.2-004", "19.2", "right",
            "Draws one pair at a time from the seeded generator and keeps Welford's running variance.",
            esv_pair_loop),
    Attempt("19.2-005", "19.2", "right",
            "Generator(PCG64(seed)) (what default_rng builds) and statistics.pvariance, a Python float.",
            esv_statistics),
    Attempt("19.2-006", "19.2", "right",
            "Standard normals drawn in float32 from the seeded generator, dot products summed in float64.",
            esv_float32),
    Attempt("19.2-007", "19.2", "right",
            "Streams the pairs in chunks of 4096 keeping the remainder, variance from sums of s and s**2.",
            esv_chunked),
    Attempt("19.2-008", "19.2", "right",
            "Batched (n,1,d)@(n,d,1) matmul for the dot products, ddof=1 via a centred dot, .item().",
            esv_matmul_diag),
    Attempt("19.2-009", "19.2", "right",
            "One flat draw split into queries and keys, math.fsum of squared deviations over n.",
            esv_flat_draw),
    Attempt("19.2-010", "19.2", "wrong", "Seeds and draws from NumPy's global generator, which the statement forbids.",
            esv_global_seed, lambda: ref.found(ref.check_19_2_global_rng(esv_global_seed))),
    Attempt("19.2-011", "19.2", "wrong", "default_rng() without the seed: one seed gives different answers.",
            esv_unseeded, lambda: ref.found(ref.check_19_2_deterministic(esv_unseeded))),
    Attempt("19.2-012", "19.2", "wrong",
            "Builds a fresh default_rng(seed) for q and again for k, so k == q and s = |q|^2 (variance 2 d_k).",
            esv_same_seed_twice, lambda: ref.found(ref.check_19_2_mean(esv_same_seed_twice))),
    Attempt("19.2-013", "19.2", "wrong",
            "One key vector shared by all queries: the pairs are not independent, the estimate is |k|^2 (right mean, far too much scatter).",
            esv_one_key, lambda: ref.witness_scatter(esv_one_key, 8, 4000, 48)),
    Attempt("19.2-014", "19.2", "wrong",
            "Draws `samples` vectors and pairs the two halves: only samples/2 pairs (scatter twice too large).",
            esv_split_half, lambda: ref.witness_scatter(esv_split_half, 1, 2000, 600)),
    Attempt("19.2-015", "19.2", "wrong",
            "Caps the sample count at 10,000 to save memory: right below the cap, too few pairs above it.",
            esv_capped, lambda: ref.witness_scatter(esv_capped, 1, 40_000, 300)),
    Attempt("19.2-016", "19.2", "wrong",
            "Chunks of 1000 pairs with range(samples // 1000): the tail is dropped, and 250 samples give NaN.",
            esv_chunks_drop_tail, lambda: ref.found(ref.check_19_2_type(esv_chunks_drop_tail, 8, 250, 3))),
    Attempt("19.2-017", "19.2", "wrong",
            "Pairs each vector with the previous one (np.roll): reused vectors, correlated scores, too much scatter.",
            esv_rolled_pairs, lambda: ref.witness_scatter(esv_rolled_pairs, 1, 2000, 800)),
    Attempt("19.2-018", "19.2", "wrong",
            "Variance of the full Q @ K.T matrix: samples**2 dependent scores, far less scatter than n pairs give.",
            esv_all_pairs, lambda: ref.witness_scatter(esv_all_pairs, 8, 250, 48)),
    Attempt("19.2-019", "19.2", "wrong",
            "d_k times the variance of the entrywise products: right mean, wrong precision (8 d/n instead of (2d^2+6d)/n).",
            esv_entry_variance, lambda: ref.witness_scatter(esv_entry_variance, 64, 1000, 48)),
    Attempt("19.2-020", "19.2", "wrong",
            "Uniform entries with variance 1 instead of standard normals: same mean, different scatter.",
            esv_uniform, lambda: ref.witness_scatter(esv_uniform, 1, 2000, 300)),
    Attempt("19.2-021", "19.2", "wrong",
            "Random signs (+-1) instead of standard normals: same mean, almost no scatter at d_k=1.",
            esv_signs, lambda: ref.witness_scatter(esv_signs, 1, 2000, 100)),
    Attempt("19.2-022", "19.2", "wrong",
            "Drops scores beyond 3 standard deviations as outliers: a biased (too small) estimate.",
            esv_clip_outliers, lambda: ref.witness_mean(esv_clip_outliers, 1, 20_000, 40)),
    Attempt("19.2-023", "19.2", "wrong", "Measures the scaled score q.k/sqrt(d_k), so it returns about 1.",
            esv_scaled, lambda: ref.found(ref.check_19_2_mean(esv_scaled))),
    Attempt("19.2-024", "19.2", "wrong", "Returns the standard deviation instead of the variance.",
            esv_std, lambda: ref.found(ref.check_19_2_mean(esv_std))),
    Attempt("19.2-025", "19.2", "wrong", "np.cov of the scores: a 0-d array, not one float.",
            esv_cov, _type(esv_cov)),
    Attempt("19.2-026", "19.2", "wrong", "Rounds the estimate to an int.",
            esv_rounded, _type(esv_rounded)),
    Attempt("19.2-027", "19.2", "wrong",
            "Sums over axis 0 (the samples) instead of the width: variance of d sums of n products.",
            esv_wrong_axis, lambda: ref.found(ref.check_19_2_mean(esv_wrong_axis))),
    Attempt("19.2-028", "19.2", "wrong",
            "Returns the derived value width itself: no scatter at all from seed to seed.",
            esv_theory, lambda: ref.found(ref.check_19_2_seed_used(esv_theory))),
    Attempt("19.2-029", "19.2", "wrong",
            "squeeze() on the draws: at width 1 the arrays become 1-D and axis=1 fails.",
            esv_squeezed, lambda: ref.found(ref.check_19_2_mean(esv_squeezed, widths=(1,)))),
    Attempt("19.2-030", "19.2", "wrong",
            "Creates the generator once in a module global: later calls ignore their seed and continue the stream.",
            esv_module_rng, lambda: ref.found(ref.check_19_2_deterministic(esv_module_rng))),
    Attempt("19.2-031", "19.2", "wrong",
            "Manual variance loop with `i += 1` dedented out of the while: never returns.",
            esv_welford_hang,
            lambda: ref.never_returns("attempts_19_2", "esv_welford_hang", "(8, 50, 1)", control="esv_listing")),
    Attempt("19.2-032", "19.2", "wrong", "rng.random (uniform on [0, 1)) instead of standard normals.",
            esv_unit_uniform, lambda: ref.found(ref.check_19_2_mean(esv_unit_uniform))),
]

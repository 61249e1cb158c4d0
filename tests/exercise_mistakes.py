"""Students' answers to exercises 19.2-19.4, right ones written differently and wrong ones.

Each wrong answer is one small, visible change of a right one, the way a
student would make it; the mistakes :mod:`attention_lib.pitfalls` already
has are reused from there. tests/test_exercises.py feeds each to its checker
and asserts the diagnosis by name. The last section holds attempts written
later without reading the checkers (a red-team pass), each with what a
student meant.
"""

from __future__ import annotations

import math

import numpy as np

from attention_lib import pitfalls

# ------------------------------------------------------------------------------------
# 19.2: Monte Carlo estimates of Var(q . k)


def variance_estimate(statistic=np.var, sum_axis=1, divisor=lambda width: 1.0, fixed_samples=None):
    """A student's ``estimate(width, samples, seed)``; the defaults make it right.

    ``statistic`` is applied to the dot products, which are the products
    summed over ``sum_axis`` of ``(samples, width)`` arrays and divided by
    ``divisor(width)``; ``fixed_samples`` ignores the requested sample count.
    """

    def estimate(width, samples, seed):
        rng = np.random.default_rng(seed)
        n = samples if fixed_samples is None else fixed_samples
        q = rng.standard_normal((n, width))
        k = rng.standard_normal((n, width))
        return float(statistic(np.sum(q * k, axis=sum_axis) / divisor(width)))

    return estimate


def variance_by_loop(width, samples, seed):
    """Right, written differently: one dot product at a time, the variance by hand (ddof=1)."""
    rng = np.random.default_rng(seed)
    dots = [float(rng.standard_normal(width) @ rng.standard_normal(width)) for _ in range(samples)]
    mean = sum(dots) / samples
    return sum((dot - mean) ** 2 for dot in dots) / (samples - 1)


def variance_unseeded(width, samples, seed):
    """WRONG: ignores the seed, so two runs disagree."""
    rng = np.random.default_rng()
    return float(np.var(np.sum(rng.standard_normal((2, samples, width)).prod(axis=0), axis=1)))


def variance_einsum_float32(width, samples, seed):
    """Right, written differently: float32 draws and einsum for the dot products."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width), dtype=np.float32)
    k = rng.standard_normal((samples, width), dtype=np.float32)
    return float(np.var(np.einsum("ij,ij->i", q, k, dtype=np.float64)))


def variance_mean_of_squares(width, samples, seed):
    """Right, written differently: E[s] = 0 is known, so Var(s) = mean(s²)."""
    rng = np.random.default_rng(seed)
    dots = np.sum(rng.standard_normal((samples, width)) * rng.standard_normal((samples, width)), 1)
    return float(np.mean(dots**2))


def variance_fixed_seed(width, samples, seed):
    """WRONG: the seed is fixed inside, so every seed gives the same estimate."""
    return variance_estimate()(width, samples, 0)


def variance_no_sampling(width, samples, seed):
    """WRONG: no sampling at all, the theory returned."""
    return float(width)


def variance_same_seed_generators(width, samples, seed):
    """WRONG: q and k from two generators with the same seed, so q == k."""
    q = np.random.default_rng(seed).standard_normal((samples, width))
    k = np.random.default_rng(seed).standard_normal((samples, width))
    return float(np.var(np.sum(q * k, axis=1)))


def variance_products_not_summed(width, samples, seed):
    """WRONG: the sum is forgotten, the variance taken over every product."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    return float(np.var(q * k))


def variance_one_query_reused(width, samples, seed):
    """WRONG: one query against every key."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(width)
    k = rng.standard_normal((samples, width))
    return float(np.var(k @ q))


def variance_all_pairs(width, samples, seed):
    """WRONG: every query with every key, samples² dot products sharing their vectors."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    return float(np.var(q @ k.T))


def variance_hard_coded_samples(width, samples, seed):
    """WRONG: the sample count is hard-coded (a common 10,000), the argument ignored."""
    return variance_estimate()(width, 10_000, seed)


def variance_tenth_of_samples(width, samples, seed):
    """WRONG: draws a tenth of the samples asked for."""
    return variance_estimate()(width, samples // 10, seed)


def variance_uniform_entries(width, samples, seed):
    """WRONG: uniform entries on [0, 1) (rng.random) instead of standard normal."""
    rng = np.random.default_rng(seed)
    return float(np.var(np.sum(rng.random((samples, width)) * rng.random((samples, width)), 1)))


def variance_fake_noise(width, samples, seed):
    """WRONG, and undetectable from outside: the theory plus noise of exactly the right size."""
    rng = np.random.default_rng(seed)
    return width + rng.standard_normal() * width * math.sqrt((2 + 6 / width) / samples)


# ------------------------------------------------------------------------------------
# 19.3: softmax row backward


def row_backward_right(weights, grad_weights):
    """Right: eq. 19.4 with the row term over the last axis."""
    row_dot = np.sum(grad_weights * weights, axis=-1, keepdims=True)
    return weights * (grad_weights - row_dot)


def row_backward_einsum(weights, grad_weights):
    """Right, written differently: the row term by einsum."""
    row_dot = np.einsum("...t,...t->...", grad_weights, weights)[..., None]
    return weights * (grad_weights - row_dot)


def row_backward_jacobian_loop(weights, grad_weights):
    """Right, written differently: the full Jacobian diag(a) - a aᵀ, one row at a time."""
    flat_weights = weights.reshape(-1, weights.shape[-1])
    flat_grads = grad_weights.reshape(flat_weights.shape)
    out = np.empty_like(flat_weights)
    for row, (a, g) in enumerate(zip(flat_weights, flat_grads, strict=True)):
        out[row] = (np.diag(a) - np.outer(a, a)) @ g
    return out.reshape(weights.shape)


def row_backward_float32(weights, grad_weights):
    """Right, computed in float32."""
    return row_backward_right(weights.astype(np.float32), grad_weights.astype(np.float32))


def row_backward_missing_row_term(weights, grad_weights):
    """WRONG: A * grad_A."""
    return weights * grad_weights


def row_backward_sum_over_axis_0(weights, grad_weights):
    """WRONG: the row term summed down the columns (axis 0)."""
    row_dot = np.sum(grad_weights * weights, axis=0, keepdims=True)
    return weights * (grad_weights - row_dot)


def row_backward_axis_1(weights, grad_weights):
    """WRONG for batched rows: axis=1 is the last axis only for 2-D input."""
    row_dot = np.sum(grad_weights * weights, axis=1, keepdims=True)
    return weights * (grad_weights - row_dot)


def row_backward_missing_weights(weights, grad_weights):
    """WRONG: grad_A - rowsum(grad_A * A), without the factor A."""
    return grad_weights - np.sum(grad_weights * weights, axis=-1, keepdims=True)


def row_backward_reshaped_rows(weights, grad_weights):
    """Right, written differently: every row flattened to (-1, T) and back."""
    rows, grads = (
        weights.reshape(-1, weights.shape[-1]),
        grad_weights.reshape(-1, weights.shape[-1]),
    )
    out = rows * (grads - (rows * grads).sum(axis=1)[:, None])
    return out.reshape(weights.shape)


def row_backward_in_place(weights, grad_weights):
    """WRONG: overwrites the caller's grad_weights."""
    grad_weights -= np.sum(grad_weights * weights, axis=-1, keepdims=True)
    return weights * grad_weights


def row_backward_epsilon(weights, grad_weights):
    """WRONG: an epsilon on the weights gives a masked key a tiny gradient."""
    weights = weights + 1e-12
    return weights * (grad_weights - np.sum(grad_weights * weights, axis=-1, keepdims=True))


def row_backward_float64_scalar(weights, grad_weights):
    """Right values, but a NumPy float64 scalar turns float32 input into float64 output."""
    half = np.float64(0.5)
    return (
        (weights + weights)
        * half
        * (grad_weights - np.sum(grad_weights * weights, -1, keepdims=True))
    )


def row_backward_mean_row_term(weights, grad_weights):
    """WRONG: a mean instead of a sum in the row term."""
    return weights * (grad_weights - np.mean(grad_weights * weights, axis=-1, keepdims=True))


def row_backward_row_term_without_weights(weights, grad_weights):
    """WRONG: the row term sums grad_weights alone."""
    return weights * (grad_weights - np.sum(grad_weights, axis=-1, keepdims=True))


def row_backward_no_keepdims(weights, grad_weights):
    """WRONG: the row sum loses its axis (no keepdims)."""
    row_dot = np.sum(grad_weights * weights, axis=-1)
    return weights * (grad_weights - row_dot)


def row_backward_zeros(weights, grad_weights):
    """WRONG: a placeholder."""
    return np.zeros_like(weights)


def row_backward_squeezed(weights, grad_weights):
    """WRONG with an axis of length 1: np.squeeze drops it."""
    return row_backward_right(np.squeeze(weights), np.squeeze(grad_weights))


def row_backward_small_weights_zeroed(weights, grad_weights):
    """WRONG for saturated rows: weights below 0.01 taken for masked ones and zeroed."""
    return row_backward_right(np.where(weights < 1e-2, 0.0, weights), grad_weights)


def row_backward_float32_sloppy(weights, grad_weights):
    """WRONG for float32 only (planted): float32 input is answered to three decimals."""
    grad_scores = row_backward_right(weights, grad_weights)
    return np.round(grad_scores, 3) if weights.dtype == np.float32 else grad_scores


# ------------------------------------------------------------------------------------
# 19.4: masked attention, one overridable method per step


class StudentAttention:
    """A student's right answer to exercise 19.4, in plain NumPy.

    ``forward`` and ``backward`` are what the checker receives. Each wrong
    variant below overrides the one step it gets wrong.
    """

    def scale(self, d_k):
        return 1.0 / np.sqrt(d_k)

    def transpose(self, array):
        return np.swapaxes(array, -1, -2)

    def softmax(self, scores, mask):
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        row_max = np.max(scores, axis=-1, keepdims=True)
        row_max = np.where(np.isneginf(row_max), 0.0, row_max)  # a fully masked row stays 0
        exp = np.exp(scores - row_max)
        row_sum = np.sum(exp, axis=-1, keepdims=True)
        return exp / np.where(row_sum == 0.0, 1.0, row_sum)

    def forward(self, Q, K, V, mask=None):
        scale = self.scale(Q.shape[-1])
        scores = (Q @ self.transpose(K)) * scale
        weights = self.softmax(scores, mask)
        return weights @ V, (Q, K, V, weights, scale, mask)

    def grad_scores(self, weights, grad_weights):
        row_dot = np.sum(grad_weights * weights, axis=-1, keepdims=True)
        return weights * (grad_weights - row_dot)

    def grad_K(self, grad_scores, Q, scale):
        return (self.transpose(grad_scores) @ Q) * scale

    def grad_Q(self, grad_scores, K, scale):
        return (grad_scores @ K) * scale

    def gradients(self, grad_Q, grad_K, grad_V):
        return grad_Q, grad_K, grad_V

    def backward(self, grad_output, cache):
        Q, K, V, weights, scale, _ = cache
        grad_V = self.transpose(weights) @ grad_output
        grad_weights = grad_output @ self.transpose(V)
        grad_scores = self.grad_scores(weights, grad_weights)
        return self.gradients(
            self.grad_Q(grad_scores, K, scale), self.grad_K(grad_scores, Q, scale), grad_V
        )


class Float32Attention(StudentAttention):
    """Right, computed in float32 (the scale too: NumPy's float64 scalar would promote)."""

    def scale(self, d_k):
        return np.float32(super().scale(d_k))

    def forward(self, Q, K, V, mask=None):
        return super().forward(*(np.asarray(a, dtype=np.float32) for a in (Q, K, V)), mask)

    def backward(self, grad_output, cache):
        return super().backward(np.asarray(grad_output, dtype=np.float32), cache)


class EinsumAttention(StudentAttention):
    """Right, written differently: einsum for every product, the mask applied with np.where."""

    def forward(self, Q, K, V, mask=None):
        scale = self.scale(Q.shape[-1])
        scores = np.einsum("...qd,...kd->...qk", Q, K) * scale
        weights = self.softmax(scores, mask)
        return np.einsum("...qk,...kv->...qv", weights, V), (Q, K, V, weights, scale, mask)

    def backward(self, grad_output, cache):
        Q, K, V, weights, scale, mask = cache
        grad_V = np.einsum("...qk,...qv->...kv", weights, grad_output)
        grad_weights = np.einsum("...qv,...kv->...qk", grad_output, V)
        grad_scores = self.grad_scores(weights, grad_weights)
        if mask is not None:
            grad_scores = np.where(mask, grad_scores, 0.0)  # the chapter's explicit zeroing
        grad_Q = np.einsum("...qk,...kd->...qd", grad_scores, K) * scale
        grad_K = np.einsum("...qk,...qd->...kd", grad_scores, Q) * scale
        return grad_Q, grad_K, grad_V


def loop_forward(Q, K, V, mask=None):
    """Right, written differently: one query at a time, 2-D and batched inputs alike."""
    if Q.ndim > 2:
        masks = (
            [None] * len(Q)
            if mask is None
            else np.broadcast_to(mask, Q.shape[:-1] + K.shape[-2:-1])
        )
        pairs = [loop_forward(*arrays) for arrays in zip(Q, K, V, masks, strict=True)]
        return np.stack([output for output, _ in pairs]), [cache for _, cache in pairs]
    T_q, T_k = Q.shape[0], K.shape[0]
    allowed = np.ones((T_q, T_k), bool) if mask is None else np.broadcast_to(mask, (T_q, T_k))
    weights = np.zeros((T_q, T_k))
    for i in range(T_q):
        keys = np.flatnonzero(allowed[i])
        if keys.size:
            scores = np.array([Q[i] @ K[j] for j in keys]) / np.sqrt(Q.shape[1])
            exp = np.exp(scores - scores.max())
            weights[i, keys] = exp / exp.sum()
    return weights @ V, (Q, K, V, weights)


def loop_backward(grad_output, cache):
    """Right, written differently: eq. 19.3-19.5 one query row at a time."""
    if isinstance(cache, list):
        grads = [loop_backward(g, c) for g, c in zip(grad_output, cache, strict=True)]
        return tuple(np.stack(parts) for parts in zip(*grads, strict=True))
    Q, K, V, weights = cache
    scale = 1.0 / np.sqrt(Q.shape[1])
    grad_Q, grad_K = np.zeros_like(Q), np.zeros_like(K)
    grad_V = weights.T @ grad_output
    for i in range(Q.shape[0]):
        grad_weights = V @ grad_output[i]
        grad_scores = weights[i] * (grad_weights - grad_weights @ weights[i])
        grad_Q[i] = scale * grad_scores @ K
        grad_K += scale * np.outer(grad_scores, Q[i])
    return grad_Q, grad_K, grad_V


class NoScaling(StudentAttention):
    def scale(self, d_k):
        return 1.0


class ScaledByDk(StudentAttention):
    def scale(self, d_k):
        return 1.0 / d_k


class SoftmaxOverColumns(StudentAttention):
    def softmax(self, scores, mask):
        scores = np.where(mask, scores, -np.inf) if mask is not None else scores
        exp = np.exp(scores - np.max(scores, axis=-2, keepdims=True))
        return exp / np.sum(exp, axis=-2, keepdims=True)


class MaskAfterSoftmax(StudentAttention):
    def softmax(self, scores, mask):
        return pitfalls.mask_after_softmax(scores, mask)  # the checker always passes a mask


class MaskInverted(StudentAttention):
    def softmax(self, scores, mask):
        return super().softmax(scores, None if mask is None else ~mask)


class OwnTriuMask(StudentAttention):
    """WRONG: ignores the mask it is given and builds pitfalls.causal_mask_triu itself."""

    def softmax(self, scores, mask):
        return super().softmax(scores, pitfalls.causal_mask_triu(*scores.shape[-2:]))


class MaskIgnored(StudentAttention):
    def softmax(self, scores, mask):
        return super().softmax(scores, None)


class NoMaxSubtraction(StudentAttention):
    def softmax(self, scores, mask):
        return pitfalls.softmax_without_max_subtraction(scores, mask)


class LargeNegativeFill(StudentAttention):
    def softmax(self, scores, mask):
        return pitfalls.large_negative_fill(scores, mask)


class UnguardedNegInf(StudentAttention):
    """WRONG: -inf fill and max subtraction, but no guard for a fully masked row."""

    def softmax(self, scores, mask):
        return pitfalls.softmax_without_max_subtraction(
            scores - np.max(np.where(mask, scores, -np.inf), axis=-1, keepdims=True), mask
        )


class ScaledBySqrtDModel(StudentAttention):
    """WRONG: pitfalls.scale_by_sqrt_d_model with d_model = 2 d_k (two heads)."""

    def forward(self, Q, K, V, mask=None):
        output, weights = pitfalls.scale_by_sqrt_d_model(
            Q, K, V, 2 * Q.shape[-1], mask, return_weights=True
        )
        return output, (Q, K, V, weights, 1.0 / np.sqrt(2 * Q.shape[-1]), mask)


class PlainTranspose(StudentAttention):
    """WRONG for batched input: K.T reverses every axis, not just the last two."""

    def transpose(self, array):
        return array.T


class ReturnsOutputOnly(StudentAttention):
    def forward(self, Q, K, V, mask=None):
        return super().forward(Q, K, V, mask)[0]


class SignError(StudentAttention):
    def grad_scores(self, weights, grad_weights):
        return pitfalls.softmax_backward_sign_error(weights, grad_weights)


class MissingRowTerm(StudentAttention):
    def grad_scores(self, weights, grad_weights):
        return weights * grad_weights


class GradKNotTransposed(StudentAttention):
    def grad_K(self, grad_scores, Q, scale):
        return (grad_scores @ Q) * scale


class GradKMissingScale(StudentAttention):
    def grad_K(self, grad_scores, Q, scale):
        return self.transpose(grad_scores) @ Q


class GradQMissingScale(StudentAttention):
    def grad_Q(self, grad_scores, K, scale):
        return grad_scores @ K


class GradientsInWrongOrder(StudentAttention):
    def gradients(self, grad_Q, grad_K, grad_V):
        return grad_V, grad_K, grad_Q


class QAndKSwapped(StudentAttention):
    def gradients(self, grad_Q, grad_K, grad_V):
        return grad_K, grad_Q, grad_V


class GradVNotTransposed(StudentAttention):
    def backward(self, grad_output, cache):
        grad_Q, grad_K, _ = super().backward(grad_output, cache)
        return grad_Q, grad_K, cache[3] @ grad_output


class LeaksIntoMaskedKeys(StudentAttention):
    """WRONG: the backward pass recomputes the weights from the scores without the mask."""

    def backward(self, grad_output, cache):
        Q, K, V, _, scale, mask = cache
        unmasked = self.softmax((Q @ self.transpose(K)) * scale, None)
        return super().backward(grad_output, (Q, K, V, unmasked, scale, mask))


def loop_forward_2d_masks(Q, K, V, mask=None):
    """WRONG with a padding mask: each example gets the whole mask, which only a (T_q, T_k)
    mask survives."""
    if Q.ndim > 2:
        pairs = [loop_forward(q, k, v, mask) for q, k, v in zip(Q, K, V, strict=True)]
        return np.stack([output for output, _ in pairs]), [cache for _, cache in pairs]
    return loop_forward(Q, K, V, mask)


class Float32Sloppy(StudentAttention):
    """WRONG for float32 only (planted): float32 outputs rounded to three decimals."""

    def forward(self, Q, K, V, mask=None):
        output, cache = super().forward(Q, K, V, mask)
        return (np.round(output, 3) if Q.dtype == np.float32 else output), cache


class SquareOnly(StudentAttention):
    """WRONG for T_q != T_k: the mask is combined with a square lower triangle of its own."""

    def softmax(self, scores, mask):
        own = np.tril(np.ones((scores.shape[-2], scores.shape[-2]), dtype=bool))
        return super().softmax(scores, own if mask is None else mask & own)


class MathSqrt(StudentAttention):
    """Right, and float32 stays float32: math.sqrt gives a Python float, as the library does."""

    def scale(self, d_k):
        return 1.0 / math.sqrt(d_k)


class RowDotFromOutput(StudentAttention):
    """Right, written differently: the row term D = rowsum(dO * O), FlashAttention's way."""

    def forward(self, Q, K, V, mask=None):
        output, cache = super().forward(Q, K, V, mask)
        return output, (*cache, output)

    def backward(self, grad_output, cache):
        Q, K, V, weights, scale, _, output = cache
        row_dot = np.sum(grad_output * output, axis=-1, keepdims=True)
        grad_scores = weights * (grad_output @ self.transpose(V) - row_dot)
        return (
            self.grad_Q(grad_scores, K, scale),
            self.grad_K(grad_scores, Q, scale),
            self.transpose(weights) @ grad_output,
        )


class LogMaskAdded(StudentAttention):
    """Right, written differently: log(mask) added to the scores (0 or -inf)."""

    def softmax(self, scores, mask):
        if mask is not None:
            scores = scores + np.log(mask)
        return super().softmax(scores, None)


class RecomputesWithMask(StudentAttention):
    """Right, written differently: the cache keeps Q, K, V and the mask; backward recomputes."""

    def forward(self, Q, K, V, mask=None):
        output, _ = super().forward(Q, K, V, mask)
        return output, (Q, K, V, mask)

    def backward(self, grad_output, cache):
        Q, K, V, mask = cache
        scale = self.scale(Q.shape[-1])
        weights = self.softmax((Q @ self.transpose(K)) * scale, mask)
        return super().backward(grad_output, (Q, K, V, weights, scale, mask))


class IsqrtScale(StudentAttention):
    """WRONG off perfect squares: the square root rounded down (math.isqrt)."""

    def scale(self, d_k):
        return 1.0 / math.isqrt(d_k)


class MaskRequired(StudentAttention):
    """WRONG by the signature: no default for mask, so forward(Q, K, V) raises."""

    def forward(self, Q, K, V, mask):
        return super().forward(Q, K, V, mask)


_LAST_FORWARD = {}


class GlobalCache(StudentAttention):
    """WRONG after a second forward: the cache is kept in a module global, not returned."""

    def forward(self, Q, K, V, mask=None):
        output, _LAST_FORWARD["cache"] = super().forward(Q, K, V, mask)
        return output, None

    def backward(self, grad_output, cache):
        return super().backward(grad_output, _LAST_FORWARD["cache"])


class ScalesQInPlace(StudentAttention):
    """WRONG: scales the caller's Q in place."""

    def forward(self, Q, K, V, mask=None):
        scale = self.scale(Q.shape[-1])
        Q *= scale
        weights = self.softmax(Q @ self.transpose(K), mask)
        return weights @ V, (Q / scale, K, V, weights, scale, mask)


class EpsilonWeights(StudentAttention):
    """WRONG: an epsilon added to the weights "for safety"."""

    def softmax(self, scores, mask):
        return super().softmax(scores, mask) + 1e-12


class GradQKMissingScale(StudentAttention):
    """WRONG: the scale missing from both grad_Q and grad_K."""

    def grad_Q(self, grad_scores, K, scale):
        return grad_scores @ K

    def grad_K(self, grad_scores, Q, scale):
        return self.transpose(grad_scores) @ Q


class MaskMultiplied(StudentAttention):
    """WRONG: scores * mask instead of blocking."""

    def softmax(self, scores, mask):
        return super().softmax(scores if mask is None else scores * mask, None)


class SoftmaxWholeMatrix(StudentAttention):
    """WRONG: one softmax over the whole score matrix."""

    def softmax(self, scores, mask):
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        exp = np.exp(scores - np.max(scores, axis=(-2, -1), keepdims=True))
        return exp / np.sum(exp, axis=(-2, -1), keepdims=True)


def scaled_by_sqrt_of(name, size):
    """WRONG: a StudentAttention that divides by sqrt(size(Q, K, V)) instead of sqrt(d_k)."""

    class ScaledBy(StudentAttention):
        def forward(self, Q, K, V, mask=None):
            self.size = size(Q, K, V)
            return super().forward(Q, K, V, mask)

        def scale(self, d_k):
            return 1.0 / np.sqrt(self.size)

    ScaledBy.__name__ = name
    return ScaledBy


ScaledBySqrtDv = scaled_by_sqrt_of("ScaledBySqrtDv", lambda Q, K, V: V.shape[-1])
ScaledBySqrtTk = scaled_by_sqrt_of("ScaledBySqrtTk", lambda Q, K, V: K.shape[-2])


class GlobalMaxSubtraction(StudentAttention):
    """WRONG: the maximum of the whole matrix subtracted, not each row's."""

    def softmax(self, scores, mask):
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        exp = np.exp(scores - np.max(scores))
        row_sum = np.sum(exp, axis=-1, keepdims=True)
        return exp / np.where(row_sum == 0.0, 1.0, row_sum)


class RenormalisedAfterMask(StudentAttention):
    """WRONG: softmax over every key, blocked weights zeroed, rows renormalised."""

    def softmax(self, scores, mask):
        weights = super().softmax(scores, None)
        if mask is None:
            return weights
        weights = weights * mask
        row_sum = np.sum(weights, axis=-1, keepdims=True)
        return weights / np.where(row_sum == 0.0, 1.0, row_sum)


class NoneBecomesCausal(StudentAttention):
    """WRONG: mask=None silently replaced by a causal mask."""

    def forward(self, Q, K, V, mask=None):
        if mask is None:
            mask = np.tril(np.ones((Q.shape[-2], K.shape[-2]), dtype=bool))
        return super().forward(Q, K, V, mask)


class SoftmaxAxis1(StudentAttention):
    """WRONG with a batch axis: the softmax over axis=1, the last axis only for 2-D input."""

    def softmax(self, scores, mask):
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        row_max = np.max(scores, axis=1, keepdims=True)
        row_max = np.where(np.isneginf(row_max), 0.0, row_max)
        exp = np.exp(scores - row_max)
        row_sum = np.sum(exp, axis=1, keepdims=True)
        return exp / np.where(row_sum == 0.0, 1.0, row_sum)


class BooleanIndexMask(StudentAttention):
    """WRONG with a batch axis: blocking by boolean indexing needs the mask's full shape."""

    def softmax(self, scores, mask):
        scores = scores.copy()
        if mask is not None:
            scores[~mask] = -np.inf
        return super().softmax(scores, None)


def unfinished_backward(grad_output, cache):
    """A 19.4 backward that reuses a 19.3 answer still left as the scaffold."""
    Q, K, V, weights, scale, _ = cache
    grad_scores = softmax_row_backward_scaffold(weights, grad_output @ np.swapaxes(V, -1, -2))
    return grad_scores @ K * scale, np.swapaxes(grad_scores, -1, -2) @ Q * scale, grad_output


def softmax_row_backward_scaffold(weights, grad_weights):
    # YOUR CODE HERE
    raise NotImplementedError()


# ------------------------------------------------------------------------------------
# 19.4 (c): central_difference(f, X, h=None)


def central_right(f, X, h=None):
    """Right: each entry saved, moved by +h and -h, then written back."""
    h = 1e-6 if h is None else h
    grad = np.zeros_like(X, dtype=np.float64)
    for index in np.ndindex(X.shape):
        saved = X[index]
        X[index] = saved + h
        plus = f(X)
        X[index] = saved - h
        minus = f(X)
        X[index] = saved
        grad[index] = (plus - minus) / (2 * h)
    return grad


def on_copies(f, X, h):
    """Central differences on two fresh copies per entry."""
    grad = np.empty_like(X)
    for index in np.ndindex(X.shape):
        up, down = X.copy(), X.copy()
        up[index] += h
        down[index] -= h
        grad[index] = (f(up) - f(down)) / (2 * h)
    return grad


def central_on_copies(f, X, h=None):
    """Right, written differently: two fresh copies per entry, a default step of 1e-5."""
    return on_copies(f, X, 1e-5 if h is None else h)


def central_flat_view(f, X, h=None):
    """Right, written differently: X.flat, and the library's relative step size idea left out."""
    h = h or 1e-6
    grad = np.zeros(X.size)
    for i in range(X.size):
        original = X.flat[i]
        X.flat[i] = original + h
        plus = f(X)
        X.flat[i] = original - h
        minus = f(X)
        X.flat[i] = original
        grad[i] = (plus - minus) / (2 * h)
    return grad.reshape(X.shape)


def central_in_place(restore):
    """X[i] += h, -= 2h, then += h: right up to round-off (X changes in its last bits);
    WRONG without the last step, which puts the entry back."""

    def central_difference(f, X, h=1e-6):
        grad = np.zeros_like(X)
        for index in np.ndindex(X.shape):
            X[index] += h
            plus = f(X)
            X[index] -= 2 * h
            minus = f(X)
            if restore:
                X[index] += h
            grad[index] = (plus - minus) / (2 * h)
        return grad

    return central_difference


central_plus_minus = central_in_place(restore=True)
central_not_restored = central_in_place(restore=False)


def central_one_sided(f, X, h=1e-6):
    """WRONG: a forward difference."""
    grad = np.zeros_like(X)
    base = f(X)
    for index in np.ndindex(X.shape):
        up = X.copy()
        up[index] += h
        grad[index] = (f(up) - base) / h
    return grad


def central_float32(f, X, h=1e-3):
    """WRONG: float32 arithmetic (and a step that looks safe for it)."""
    X = X.astype(np.float32)
    return central_on_copies(f, X, h)


def central_step(step):
    """WRONG outside about 1e-7..1e-3: a default step of ``step``."""

    def central_difference(f, X, h=None):
        return central_right(f, X, step if h is None else h)

    return central_difference


def central_ignores_h(f, X, h=None):
    """WRONG: always its own step, whatever h it is given."""
    return central_right(f, X, 1e-6)


def central_divided_by_h(f, X, h=1e-6):
    """WRONG: (f(x + h) - f(x - h)) / h."""
    return 2 * central_right(f, X, h)


def central_all_at_once(f, X, h=1e-6):
    """WRONG: every entry moved together."""
    return np.full(X.shape, (f(X + h) - f(X - h)) / (2 * h))


def central_rows(f, X, h=1e-6):
    """WRONG for 2-D X: X[i] moves a whole row."""
    grad = np.zeros_like(X)
    for i in range(len(X)):
        up, down = X.copy(), X.copy()
        up[i] += h
        down[i] -= h
        grad[i] = (f(up) - f(down)) / (2 * h)
    return grad


# ------------------------------------------------------------------------------------
# 19.4 (c): gradient_errors(forward, backward, Q, K, V, mask, grad_output)


def gradient_errors_with(central_difference, error, weighted=True):
    """A student's gradient_errors using ``central_difference`` and the error ``error(a, n)``.

    WRONG with ``weighted=False``: the loss is sum(output), not sum(grad_output * output).
    """

    def gradient_errors(forward, backward, Q, K, V, mask, grad_output):
        _, cache = forward(Q, K, V, mask)
        analytic = backward(grad_output, cache)
        inputs = {"Q": Q, "K": K, "V": V}
        errors = []
        for (name, X), grad in zip(inputs.items(), analytic, strict=True):

            def loss(Y, name=name):
                output, _ = forward(**{**inputs, name: Y}, mask=mask)
                return float(np.sum(grad_output * output if weighted else output))

            errors.append(error(grad, central_difference(loss, X.copy())))
        return tuple(errors)

    return gradient_errors


def symmetric_relative_error(a, n):
    return float(np.linalg.norm(a - n) / (np.linalg.norm(a) + np.linalg.norm(n)))


def max_relative_error(a, n):
    """Right, written differently: the largest entry's error over the largest entry."""
    return float(np.max(np.abs(a - n)) / max(np.max(np.abs(a)), np.max(np.abs(n)), 1e-300))


def absolute_error(a, n):
    """WRONG: not relative."""
    return float(np.max(np.abs(a - n)))


def gradient_errors_self(forward, backward, Q, K, V, mask, grad_output):
    """WRONG: compares backward with itself."""
    _, cache = forward(Q, K, V, mask)
    grads = backward(grad_output, cache)
    return tuple(symmetric_relative_error(g, g.copy()) for g in grads)


gradient_errors_sum_loss = gradient_errors_with(
    central_right, symmetric_relative_error, weighted=False
)


def gradient_errors_in_place(forward, backward, Q, K, V, mask, grad_output):
    """WRONG: nudges the caller's Q, K, V themselves, and one entry is left moved."""
    errors = gradient_errors_with(central_right, symmetric_relative_error)(
        forward, backward, Q, K, V, mask, grad_output
    )
    Q[0, 0] += 1e-6
    return errors


# ------------------------------------------------------------------------------------
# Red team: attempts written afterwards from the notebook's statements alone, as students
# would, each marked WRONG or right by what it means to do (tests/test_exercises.py,
# RED_TEAM, holds the verdict each one gets). Compressed one-liners are kept as written.


# ---------------- 19.2
def red_v_einsum_ddof(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(samples, width))
    k = rng.normal(size=(samples, width))
    return float(np.var(np.einsum("ij,ij->i", q, k), ddof=1))


def red_v_loop_dot(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    dots = np.array([np.dot(q[i], k[i]) for i in range(samples)])
    return dots.var()


def red_v_legacy(width, samples, seed):
    np.random.seed(seed)  # noqa: NPY002 - the legacy global generator, seeded: still right
    return float(np.var((np.random.randn(samples, width) * np.random.randn(samples, width)).sum(1)))  # noqa: NPY002


def red_v_transposed_layout(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((width, samples))
    k = rng.standard_normal((width, samples))
    return float(np.var(np.sum(q * k, axis=0)))


def red_v_cov(width, samples, seed):
    rng = np.random.default_rng(seed)
    draws = rng.standard_normal((2, samples, width))
    return np.cov(np.sum(draws[0] * draws[1], axis=1))


def red_v_normalised(width, samples, seed):  # WRONG
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    return float(np.var(np.sum(q * k, axis=1)) / width)


def red_v_squared_norm(width, samples, seed):  # WRONG: q·q
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    return float(np.var(np.sum(q * q, axis=1)))


def red_v_seed_plus_width(width, samples, seed):
    rng = np.random.default_rng(seed + width)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    return float(np.var((q * k).sum(axis=1)))


def red_v_std_squared(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    return float(np.std(np.sum(q * k, axis=1)) ** 2)


def red_v_list(width, samples, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, samples, width))
    return [np.var(np.sum(q * k, axis=1))]


def red_v_sample_var_of_q(width, samples, seed):  # WRONG: variance of q entries only
    rng = np.random.default_rng(seed)
    return float(np.var(rng.standard_normal((samples, width))))


def red_v_var_per_dim_sum(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    return float(np.sum(np.var(q * k, axis=0)))  # right in expectation: sum of per-dim variances


def red_v_mean_sq_minus(width, samples, seed):
    rng = np.random.default_rng(seed)
    d = np.sum(
        rng.standard_normal((samples, width)) * rng.standard_normal((samples, width)), axis=1
    )
    return float(np.mean(d**2) - np.mean(d) ** 2)


def red_v_scaled_by_dk(width, samples, seed):  # WRONG: divides the dot product by d_k
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    return float(np.var(q @ np.ones(width) * 0 + np.sum(q * k, axis=1) / width))


def red_v_int_seed_kw(width, samples, seed):
    rng = np.random.default_rng(seed=seed)
    pairs = rng.standard_normal(size=(samples, 2, width))
    return float(np.var(np.einsum("nd,nd->n", pairs[:, 0], pairs[:, 1])))


# ---------------- 19.3
def red_r_two_terms(weights, grad_weights):
    return weights * grad_weights - weights * np.sum(weights * grad_weights, axis=-1, keepdims=True)


def red_r_einsum_newaxis(weights, grad_weights):
    dot = np.einsum("...i,...i->...", weights, grad_weights)[..., np.newaxis]
    return weights * (grad_weights - dot)


def red_r_diagflat_loop(weights, grad_weights):  # WRONG beyond 2-D
    out = np.zeros_like(weights)
    for i, (w, g) in enumerate(
        zip(np.atleast_2d(weights), np.atleast_2d(grad_weights), strict=True)
    ):
        J = np.diagflat(w) - np.outer(w, w)
        out[i] = J @ g
    return out


def red_r_colon_none(weights, grad_weights):  # WRONG beyond 2-D
    s = (grad_weights * weights).sum(axis=-1)[:, None]
    return weights * (grad_weights - s)


def red_r_matmul_dot(weights, grad_weights):  # WRONG: matrix product for the row dot
    return weights * (grad_weights - weights @ grad_weights.T)


def red_r_in_place_sum(weights, grad_weights):
    grad = weights * grad_weights
    grad -= weights * grad.sum(axis=-1, keepdims=True)
    return grad


def red_r_negated(weights, grad_weights):  # WRONG
    return weights * (np.sum(weights * grad_weights, axis=-1, keepdims=True) - grad_weights)


def red_r_forgot_grad(weights, grad_weights):  # WRONG
    return weights - weights * np.sum(weights * grad_weights, axis=-1, keepdims=True)


def red_r_full_jacobian_einsum(weights, grad_weights):
    J = np.einsum("...i,ij->...ij", weights, np.eye(weights.shape[-1])) - np.einsum(
        "...i,...j->...ij", weights, weights
    )
    return np.einsum("...ij,...j->...i", J, grad_weights)


def red_r_dot_1d(weights, grad_weights):  # WRONG beyond 1-D
    return weights * (grad_weights - np.dot(grad_weights, weights))


def red_r_softmax_of_grad(weights, grad_weights):  # WRONG: nonsense
    e = np.exp(grad_weights)
    return e / e.sum(-1, keepdims=True)


# ---------------- 19.4 pairs (forward, backward)
def red_sm(scores, axis=-1):
    m = np.max(scores, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(scores - m)
    s = e.sum(axis=axis, keepdims=True)
    return e / np.where(s == 0, 1, s)


def red_bw(grad_output, cache):
    Q, K, V, A, c = cache
    gV = np.swapaxes(A, -1, -2) @ grad_output
    gA = grad_output @ np.swapaxes(V, -1, -2)
    gS = A * (gA - np.sum(gA * A, axis=-1, keepdims=True))
    return gS @ K * c, np.swapaxes(gS, -1, -2) @ Q * c, gV


def red_f_finite_fill(Q, K, V, mask=None):  # WRONG: -1e30 fill, no max shift
    c = 1 / math.sqrt(Q.shape[-1])
    S = Q @ np.swapaxes(K, -1, -2) * c
    if mask is not None:
        S = np.where(mask, S, -1e30)
    e = np.exp(S)
    A = e / e.sum(-1, keepdims=True)
    return A @ V, (Q, K, V, A, c)


def red_f_eq_false(Q, K, V, mask=None):
    c = 1 / math.sqrt(Q.shape[-1])
    S = Q @ np.swapaxes(K, -1, -2) * c
    if mask is not None:
        S = np.where(mask == False, -np.inf, S)  # noqa: E712
    A = red_sm(S)
    return A @ V, (Q, K, V, A, c)


def red_f_float_mask(Q, K, V, mask=None):  # WRONG: -1e9 through a float mask
    c = 1 / math.sqrt(Q.shape[-1])
    S = Q @ np.swapaxes(K, -1, -2) * c
    if mask is not None:
        m = mask.astype(float)
        S = S * m + (1 - m) * (-1e9)
    A = red_sm(S)
    return A @ V, (Q, K, V, A, c)


def red_f_dotT(Q, K, V, mask=None):  # WRONG with a batch axis
    c = 1 / math.sqrt(Q.shape[-1])
    S = Q @ K.T * c
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = red_sm(S)
    return A @ V, (Q, K, V, A, c)


def red_b_dotT(grad_output, cache):  # WRONG with a batch axis
    Q, K, V, A, c = cache
    gA = grad_output @ V.T
    gS = A * (gA - np.sum(gA * A, axis=-1, keepdims=True))
    return gS @ K * c, gS.T @ Q * c, A.T @ grad_output


def red_f_nan_to_num(Q, K, V, mask=None):
    c = 1 / math.sqrt(Q.shape[-1])
    S = Q @ np.swapaxes(K, -1, -2) * c
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = np.max(S, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(S - m)
        A = np.nan_to_num(e / e.sum(-1, keepdims=True))
    return A @ V, (Q, K, V, A, c)


def red_b_where_mask_unconditional(grad_output, cache):  # WRONG for mask=None
    Q, K, V, A, c, mask = cache
    gV = np.swapaxes(A, -1, -2) @ grad_output
    gA = grad_output @ np.swapaxes(V, -1, -2)
    gS = np.where(mask, A * (gA - np.sum(gA * A, -1, keepdims=True)), 0.0)
    return gS @ K * c, np.swapaxes(gS, -1, -2) @ Q * c, gV


def red_f_keeps_mask(Q, K, V, mask=None):
    out, cache = red_f_eq_false(Q, K, V, mask)
    return out, (*cache, mask)


def red_f_shape1(Q, K, V, mask=None):  # WRONG with a batch axis: Q.shape[1]
    c = 1 / np.sqrt(Q.shape[1])
    S = Q @ np.swapaxes(K, -1, -2) * c
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = red_sm(S)
    return A @ V, (Q, K, V, A, c)


def red_f_transpose_3axes(Q, K, V, mask=None):  # WRONG without a batch axis
    c = 1 / math.sqrt(Q.shape[-1])
    S = Q @ np.transpose(K, (0, 2, 1)) * c
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = red_sm(S)
    return A @ V, (Q, K, V, A, c)


def red_b_list(grad_output, cache):
    return list(red_bw(grad_output, cache))


def red_b_scale_twice(grad_output, cache):  # WRONG: the scale applied twice in backward
    scale = cache[4]
    gQ, gK, gV = red_bw(grad_output, cache)
    return gQ * scale, gK * scale, gV


def red_f_logsumexp(Q, K, V, mask=None):
    c = 1 / math.sqrt(Q.shape[-1])
    S = Q @ np.swapaxes(K, -1, -2) * c
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = np.max(S, -1, keepdims=True)
    m = np.where(np.isinf(m), 0, m)
    lse = m + np.log(np.sum(np.exp(S - m), -1, keepdims=True))
    A = np.where(np.isinf(lse), 0, np.exp(S - np.where(np.isinf(lse), 0, lse)))
    return A @ V, (Q, K, V, A, c)


def red_b_grad_weights_no_T(grad_output, cache):  # WRONG: dA = dO V (no transpose)
    Q, K, V, A, c = cache
    gA = grad_output @ V
    gS = A * (gA - np.sum(gA * A, -1, keepdims=True))
    return gS @ K * c, np.swapaxes(gS, -1, -2) @ Q * c, np.swapaxes(A, -1, -2) @ grad_output


def red_f_mask_plus_tril(Q, K, V, mask=None):  # WRONG: builds its own causal mask as well
    c = 1 / math.sqrt(Q.shape[-1])
    S = Q @ np.swapaxes(K, -1, -2) * c
    own = np.tril(np.ones(S.shape[-2:], dtype=bool))
    S = np.where(own if mask is None else mask & own, S, -np.inf)
    A = red_sm(S)
    return A @ V, (Q, K, V, A, c)


def red_f_out_float32(Q, K, V, mask=None):
    out, cache = red_f_eq_false(
        Q.astype(np.float32), K.astype(np.float32), V.astype(np.float32), mask
    )
    return out, cache


# ---------------- 19.4 (c)
def red_c_nditer(f, X, h=None):
    h = h if h is not None else 1e-6
    grad = np.zeros_like(X)
    it = np.nditer(X, flags=["multi_index"], op_flags=["readwrite"])
    while not it.finished:
        i = it.multi_index
        old = X[i]
        X[i] = old + h
        fp = f(X)
        X[i] = old - h
        fm = f(X)
        X[i] = old
        grad[i] = (fp - fm) / (2 * h)
        it.iternext()
    return grad


def red_c_onehot(f, X, h=1e-5):
    grad = np.zeros_like(X)
    for i in np.ndindex(X.shape):
        e = np.zeros_like(X)
        e[i] = 1
        grad[i] = (f(X + h * e) - f(X - h * e)) / (2 * h)
    return grad


def red_c_h_or(f, X, h=None):
    h = h or 1e-4
    return red_c_onehot(f, X, h)


def red_c_precedence(f, X, h=1e-6):  # WRONG: / 2 * h
    grad = np.zeros_like(X)
    for i in np.ndindex(X.shape):
        e = np.zeros_like(X)
        e[i] = h
        grad[i] = (f(X + e) - f(X - e)) / 2 * h
    return grad


def red_c_no_h(f, X, h=1e-6):  # WRONG: forgot to divide by h
    grad = np.zeros_like(X)
    for i in np.ndindex(X.shape):
        e = np.zeros_like(X)
        e[i] = h
        grad[i] = (f(X + e) - f(X - e)) / 2
    return grad


def red_c_relative_step(f, X, h=1e-6):  # WRONG by the statement: a step scaled by |x|
    grad = np.zeros_like(X)
    for i in np.ndindex(X.shape):
        step = h * max(1.0, abs(X[i]))
        e = np.zeros_like(X)
        e[i] = step
        grad[i] = (f(X + e) - f(X - e)) / (2 * step)
    return grad


def red_c_copy_first(f, X, h=1e-6):
    X = X.copy()
    grad = np.zeros_like(X)
    for i in np.ndindex(X.shape):
        X[i] += h
        a = f(X)
        X[i] -= 2 * h
        b = f(X)
        X[i] += h
        grad[i] = (a - b) / (2 * h)
    return grad


def red_c_int_zeros(f, X, h=1e-6):  # WRONG: np.zeros(X.shape, dtype=int)
    grad = np.zeros(X.shape, dtype=int)
    for i in np.ndindex(X.shape):
        e = np.zeros_like(X)
        e[i] = h
        grad[i] = (f(X + e) - f(X - e)) / (2 * h)
    return grad


def red_c_only_plus_twice(f, X, h=1e-6):  # WRONG: X[i] += h, f, X[i] -= h, f -> forward/2
    grad = np.zeros_like(X)
    for i in np.ndindex(X.shape):
        X[i] += h
        a = f(X)
        X[i] -= h
        b = f(X)
        grad[i] = (a - b) / (2 * h)
    return grad


def red_c_ravel_loop(f, X, h=1e-6):
    flat = X.reshape(-1)
    grad = np.zeros(flat.size)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + h
        a = f(X)
        flat[i] = old - h
        b = f(X)
        flat[i] = old
        grad[i] = (a - b) / (2 * h)
    return grad.reshape(X.shape)


def red_c_returns_list(f, X, h=1e-6):
    return red_c_onehot(f, X, h).tolist()


def red_ge_norm_over_n(central):
    def gradient_errors(forward, backward, Q, K, V, mask, grad_output):
        _, cache = forward(Q, K, V, mask)
        grads = backward(grad_output, cache)
        out = []
        for j, X in enumerate((Q, K, V)):

            def loss(Y, j=j):
                args = [Q, K, V]
                args[j] = Y
                return float(np.sum(grad_output * forward(*args, mask)[0]))

            n = central(loss, X.copy())
            out.append(float(np.linalg.norm(grads[j] - n) / np.linalg.norm(n)))
        return tuple(out)

    return gradient_errors


def red_ge_allclose(forward, backward, Q, K, V, mask, grad_output):  # WRONG: booleans
    _, cache = forward(Q, K, V, mask)
    grads = backward(grad_output, cache)
    out = []
    for j, X in enumerate((Q, K, V)):

        def loss(Y, j=j):
            args = [Q, K, V]
            args[j] = Y
            return float(np.sum(grad_output * forward(*args, mask)[0]))

        out.append(np.allclose(grads[j], red_c_nditer(loss, X.copy())))
    return tuple(out)


def red_ge_no_copy_nudges_inputs(forward, backward, Q, K, V, mask, grad_output):  # right: restores
    _, cache = forward(Q, K, V, mask)
    grads = backward(grad_output, cache)
    out = []
    for j, X in enumerate((Q, K, V)):

        def loss(Y, j=j):
            args = [Q, K, V]
            args[j] = Y
            return float(np.sum(grad_output * forward(*args, mask)[0]))

        n = red_c_nditer(loss, X)  # nudges the caller's array, but puts every entry back
        out.append(
            float(np.linalg.norm(grads[j] - n) / (np.linalg.norm(grads[j]) + np.linalg.norm(n)))
        )
    return tuple(out)


def red_ge_mean_abs(
    forward, backward, Q, K, V, mask, grad_output
):  # WRONG: mean absolute difference
    _, cache = forward(Q, K, V, mask)
    grads = backward(grad_output, cache)
    out = []
    for j, X in enumerate((Q, K, V)):

        def loss(Y, j=j):
            args = [Q, K, V]
            args[j] = Y
            return float(np.sum(grad_output * forward(*args, mask)[0]))

        out.append(float(np.mean(np.abs(grads[j] - red_c_nditer(loss, X.copy())))))
    return tuple(out)


def red_v_one_product_times_width(width, samples, seed):  # WRONG
    rng = np.random.default_rng(seed)
    return float(np.var(width * rng.standard_normal(samples) * rng.standard_normal(samples)))


def red_v_ddof_by_hand(width, samples, seed):
    rng = np.random.default_rng(seed)
    d = (rng.standard_normal((samples, width)) * rng.standard_normal((samples, width))).sum(1)
    return float(((d - d.mean()) ** 2).sum() / (samples - 1))


def red_r_sum_all(weights, grad_weights):  # WRONG: the row term over every axis
    return weights * (grad_weights - np.sum(grad_weights * weights))


def red_r_factor_swapped(weights, grad_weights):  # WRONG
    return grad_weights * (weights - np.sum(grad_weights * weights, axis=-1, keepdims=True))


def red_f_scale_after_softmax(Q, K, V, mask=None):  # WRONG
    S = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = red_sm(S) / math.sqrt(Q.shape[-1])
    return A @ V, (Q, K, V, A, 1.0)


def red_b_divide_by_scale(grad_output, cache):  # WRONG
    Q, K, V, A, c = cache
    gV = np.swapaxes(A, -1, -2) @ grad_output
    gA = grad_output @ np.swapaxes(V, -1, -2)
    gS = A * (gA - np.sum(gA * A, -1, keepdims=True))
    return gS @ K / c, np.swapaxes(gS, -1, -2) @ Q / c, gV


def red_b_grad_V_order(grad_output, cache):  # WRONG: grad_output @ weights
    gQ, gK, _ = red_bw(grad_output, cache)
    return gQ, gK, grad_output @ cache[3]


def red_f_global_max_before_mask(Q, K, V, mask=None):  # WRONG: max over all scores before masking
    c = 1 / math.sqrt(Q.shape[-1])
    S = Q @ np.swapaxes(K, -1, -2) * c
    m = np.max(S, axis=-1, keepdims=True)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    e = np.exp(S - m)
    s = e.sum(-1, keepdims=True)
    A = e / np.where(s == 0, 1, s)
    return A @ V, (Q, K, V, A, c)


def red_c_aliased(f, X, h=1e-6):  # WRONG: X_plus = X makes no copy
    grad = np.zeros_like(X)
    for i in np.ndindex(X.shape):
        X_plus = X
        X_plus[i] += h
        X_minus = X
        X_minus[i] -= h
        grad[i] = (f(X_plus) - f(X_minus)) / (2 * h)
    return grad


def red_c_returns_tuple_per_row(f, X, h=1e-6):  # WRONG: returns a flat list for N-d X
    return [red_c_onehot(f, X, h).ravel()[i] for i in range(X.size)]


def red_ge_swapped_order(forward, backward, Q, K, V, mask, grad_output):  # WRONG: (V, K, Q)
    e = red_ge_no_copy_nudges_inputs(forward, backward, Q, K, V, mask, grad_output)
    return e[::-1]


def red_ge_max_rel(forward, backward, Q, K, V, mask, grad_output):
    _, cache = forward(Q, K, V, mask)
    grads = backward(grad_output, cache)
    out = []
    for j, X in enumerate((Q, K, V)):

        def loss(Y, j=j):
            args = [Q, K, V]
            args[j] = Y
            return float(np.sum(grad_output * forward(*args, mask)[0]))

        n = red_c_onehot(loss, X)
        out.append(float(np.abs(grads[j] - n).max() / np.abs(n).max()))
    return tuple(out)


def red_ge_loss_sum_of_squares(forward, backward, Q, K, V, mask, grad_output):  # WRONG loss
    _, cache = forward(Q, K, V, mask)
    grads = backward(grad_output, cache)
    out = []
    for j, X in enumerate((Q, K, V)):

        def loss(Y, j=j):
            args = [Q, K, V]
            args[j] = Y
            return float(0.5 * np.sum(forward(*args, mask)[0] ** 2))

        n = red_c_onehot(loss, X)
        out.append(
            float(np.linalg.norm(grads[j] - n) / (np.linalg.norm(grads[j]) + np.linalg.norm(n)))
        )
    return tuple(out)


# ------------------------------------------------------------------------------------
# Red team, second pass: attempts written from the student notebook and the chapter alone,
# each one that exposed a defect (a wrong answer passed, a false or catch-all message), and
# the unusual right ones that must keep passing. tests/test_exercises.py, RED_TEAM, holds
# the verdict of each.


# ---------------- 19.2
def red2_v_int(width, samples, seed):  # WRONG: int() cuts the variance to a whole number
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, samples, width))
    return int(np.var(np.sum(q * k, axis=1)))


def red2_v_array(width, samples, seed):  # WRONG: an array of shape (1,), not a float
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, samples, width))
    return np.var(np.sum(q * k, axis=1), keepdims=True).reshape(1)


def red2_v_generator_per_sample(width, samples, seed):  # WRONG: every sample the same pair
    # As written: `for _ in range(samples): rng = np.random.default_rng(seed); ...`, each pass
    # drawing the same pair. Drawn once here, which gives the same numbers in a fraction of the
    # time (the loop takes about 10 s over the checker's probes).
    rng = np.random.default_rng(seed)
    return float(np.var(np.full(samples, rng.standard_normal(width) @ rng.standard_normal(width))))


def red2_v_mirrored_keys(width, samples, seed):  # WRONG: k is q reversed, half the pairs repeat
    q = np.random.default_rng(seed).standard_normal((samples, width))
    return float(np.var(np.sum(q * q[::-1], axis=1)))


def red2_v_chunked(width, samples, seed):
    rng = np.random.default_rng(seed)
    parts = []
    for start in range(0, samples, 3000):
        n = min(3000, samples - start)
        parts.append(np.sum(rng.standard_normal((n, width)) * rng.standard_normal((n, width)), 1))
    return float(np.concatenate(parts).var())


# ---------------- 19.3
def red2_r_last_row_skipped(weights, grad_weights):  # WRONG: the loop stops one row early
    rows = weights.reshape(-1, weights.shape[-1])
    grads = grad_weights.reshape(rows.shape)
    out = np.zeros_like(rows)
    for i in range(rows.shape[0] - 1):
        out[i] = rows[i] * (grads[i] - rows[i] @ grads[i])
    return out.reshape(weights.shape)


def red2_r_float16(weights, grad_weights):  # WRONG: float16 on the way, cast back
    w, g = weights.astype(np.float16), grad_weights.astype(np.float16)
    return (w * (g - (w * g).sum(-1, keepdims=True))).astype(weights.dtype)


def red2_r_list(weights, grad_weights):  # WRONG: a list of rows, not an array
    rows = weights.reshape(-1, weights.shape[-1])
    grads = grad_weights.reshape(rows.shape)
    return [a * (g - a @ g) for a, g in zip(rows, grads, strict=True)]


def red2_r_always_float32(weights, grad_weights):  # right to 1e-4, but float64 comes back float32
    w, g = weights.astype(np.float32), grad_weights.astype(np.float32)
    return w * (g - (w * g).sum(-1, keepdims=True))


def red2_r_jacobian_times_weights(weights, grad_weights):  # WRONG: J @ a, grad_weights unused
    rows = weights.reshape(-1, weights.shape[-1])
    out = np.empty_like(rows)
    for r, a in enumerate(rows):
        out[r] = (np.diag(a) - np.outer(a, a)) @ a
    return out.reshape(weights.shape)


def red2_r_ones_column(weights, grad_weights):
    row_dot = (grad_weights * weights) @ np.ones((weights.shape[-1], 1), dtype=weights.dtype)
    return weights * (grad_weights - row_dot)


# ---------------- 19.4 (a)
class Red2BackwardWithoutMax(StudentAttention):
    """WRONG: forward is safe, but backward recomputes the weights from the cached (masked)
    scores without subtracting the row maximum, and overflows at scores of 850."""

    def forward(self, Q, K, V, mask=None):
        scale = self.scale(Q.shape[-1])
        scores = (Q @ self.transpose(K)) * scale
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        return self.softmax(scores, None) @ V, (Q, K, V, scores, scale, mask)

    def backward(self, grad_output, cache):
        Q, K, V, scores, scale, mask = cache
        exp = np.exp(scores)
        total = exp.sum(axis=-1, keepdims=True)
        weights = exp / np.where(total == 0, 1.0, total)
        return super().backward(grad_output, (Q, K, V, weights, scale, mask))


def backward_recomputing_with(wrong):
    """WRONG in backward only: forward is right and caches no weights; backward recomputes them
    with the softmax of ``wrong``, a StudentAttention variant (for the ✓ lines that say
    "forward or backward")."""

    class RecomputingBackward(wrong):
        def forward(self, Q, K, V, mask=None):
            scale = self.scale(Q.shape[-1])
            weights = StudentAttention.softmax(self, (Q @ self.transpose(K)) * scale, mask)
            return weights @ V, (Q, K, V, None, scale, mask)

        def backward(self, grad_output, cache):
            Q, K, V, _, scale, mask = cache
            weights = self.softmax((Q @ self.transpose(K)) * scale, mask)
            return super().backward(grad_output, (Q, K, V, weights, scale, mask))

    return RecomputingBackward


class Red2ScoreGradientDotT(StudentAttention):
    """WRONG with leading axes: `.T` on the score gradient, in backward only."""

    def grad_K(self, grad_scores, Q, scale):
        return (grad_scores.T @ Q) * scale


class Red2ThreeAxesAtMost(StudentAttention):
    """WRONG with batch and heads: (0, 2, 1) for 3-D arrays, `.T` otherwise."""

    def transpose(self, array):
        return array.transpose(0, 2, 1) if array.ndim == 3 else array.T


def _red2_softmax(scores, mask, keep_max=True, keep_sum=True):
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    row_max = np.max(scores, axis=-1, keepdims=keep_max)
    row_max = np.where(np.isneginf(row_max), 0.0, row_max)
    exp = np.exp(scores - row_max)
    total = exp.sum(axis=-1, keepdims=keep_sum)
    return exp / np.where(total == 0, 1.0, total)


class Red2MaxWithoutKeepdims(StudentAttention):
    """WRONG: the row maximum loses its axis (square scores run, subtracting column-wise)."""

    def softmax(self, scores, mask):
        return _red2_softmax(scores, mask, keep_max=False)


class Red2SumWithoutKeepdims(StudentAttention):
    """WRONG: the row sum loses its axis."""

    def softmax(self, scores, mask):
        return _red2_softmax(scores, mask, keep_sum=False)


class Red2TransposesSwapped(StudentAttention):
    """WRONG: grad_Q = grad_Sᵀ K and grad_K = grad_S Q."""

    def grad_Q(self, grad_scores, K, scale):
        return (self.transpose(grad_scores) @ K) * scale

    def grad_K(self, grad_scores, Q, scale):
        return (grad_scores @ Q) * scale


class Red2StrictCausalLoop(StudentAttention):
    """WRONG: builds its own mask in a loop, `j < i` (the diagonal lost), and ignores the one
    it is given."""

    def softmax(self, scores, mask):
        blocked = np.zeros(scores.shape[-2:], dtype=bool)
        for i in range(scores.shape[-2]):
            for j in range(scores.shape[-1]):
                blocked[i, j] = j >= i
        return super().softmax(scores, ~blocked)


class Red2Float32Always(Float32Attention, MathSqrt):
    """Right to float32's tolerance; float64 inputs come back float32 (a note)."""


class Red2Float16Scores(MathSqrt):
    """WRONG: the score gradient computed in float16 "to save memory", cast back."""

    def grad_scores(self, weights, grad_weights):
        half = super().grad_scores(weights.astype(np.float16), grad_weights.astype(np.float16))
        return half.astype(weights.dtype)


class Red2CachesExponentials(StudentAttention):
    """WRONG: caches the exponentials before normalising, and backward uses them as weights."""

    def forward(self, Q, K, V, mask=None):
        output, (Q, K, V, _, scale, mask) = super().forward(Q, K, V, mask)
        scores = (Q @ self.transpose(K)) * scale
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        row_max = np.max(scores, axis=-1, keepdims=True)
        exp = np.exp(scores - np.where(np.isneginf(row_max), 0.0, row_max))
        return output, (Q, K, V, exp, scale, mask)


class Red2LogSumExpCache(StudentAttention):
    """Right, written differently: caches each row's log-sum-exp, recomputes the weights."""

    def weights(self, Q, K, mask, lse):
        scores = (Q @ self.transpose(K)) / math.sqrt(Q.shape[-1])
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        return np.where(np.isneginf(lse), 0.0, np.exp(scores - np.where(np.isneginf(lse), 0, lse)))

    def forward(self, Q, K, V, mask=None):
        scores = (Q @ self.transpose(K)) / math.sqrt(Q.shape[-1])
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        row_max = np.max(scores, axis=-1, keepdims=True)
        row_max = np.where(np.isneginf(row_max), 0.0, row_max)
        lse = row_max + np.log(np.sum(np.exp(scores - row_max), axis=-1, keepdims=True))
        return self.weights(Q, K, mask, lse) @ V, (Q, K, V, mask, lse)

    def backward(self, grad_output, cache):
        Q, K, V, mask, lse = cache
        weights = self.weights(Q, K, mask, lse)
        return super().backward(grad_output, (Q, K, V, weights, 1 / math.sqrt(Q.shape[-1]), mask))


# ---------------- 19.4 (c)
def red2_c_h_none_unhandled(f, X, h=None):  # WRONG: h=None reaches the arithmetic
    return on_copies(f, X, h)


red2_c_sqrt_eps = central_step(math.sqrt(np.finfo(np.float64).eps))  # WRONG: 1.5e-8 < 1e-7


def red2_ge_elementwise(forward, backward, Q, K, V, mask, grad_output):  # WRONG: arrays
    _, cache = forward(Q, K, V, mask)
    errors = []
    for j, (X, grad) in enumerate(zip((Q, K, V), backward(grad_output, cache), strict=True)):

        def loss(Y, j=j):
            args = [Q, K, V]
            args[j] = Y
            return float(np.sum(grad_output * forward(*args, mask)[0]))

        n = central_right(loss, X)
        errors.append(np.abs(grad - n) / (np.abs(grad) + np.abs(n) + 1e-12))
    return tuple(errors)


def red2_ge_dict(forward, backward, Q, K, V, mask, grad_output):
    errors = gradient_errors_with(central_right, symmetric_relative_error)(
        forward, backward, Q, K, V, mask, grad_output
    )
    return dict(zip("QKV", errors, strict=True))

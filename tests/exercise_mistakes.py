"""Students' answers to exercises 19.2-19.4, right ones written differently and wrong ones.

Each wrong answer is one small, visible change of a right one, the way a
student would make it; the mistakes :mod:`attention_lib.pitfalls` already
has are reused from there. tests/test_exercises.py feeds each to its checker
and asserts the diagnosis by name.
"""

from __future__ import annotations

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
    """Right, computed in float32."""

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
        pairs = [loop_forward(q, k, v, mask) for q, k, v in zip(Q, K, V, strict=True)]
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

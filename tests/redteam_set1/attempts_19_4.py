"""Exercise 19.4 (a): forward(Q, K, V, mask=None) and backward(grad_output, cache), as students write them."""

import math

import numpy as np

try:
    from . import reference as ref
    from .common import Attempt
except ImportError:
    import reference as ref
    from common import Attempt


def _T(x):
    return np.swapaxes(x, -1, -2)


# =================================================================================== right

# ---- R1: the chapter's listing made safe ----------------------------------------------------


def forward_r1(Q, K, V, mask=None):
    scale = 1.0 / math.sqrt(Q.shape[-1])
    scores = (Q @ np.swapaxes(K, -1, -2)) * scale
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    row_max = np.max(scores, axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    exp = np.exp(scores - row_max)
    total = np.sum(exp, axis=-1, keepdims=True)
    weights = np.where(total > 0, exp / np.where(total > 0, total, 1.0), 0.0)
    return weights @ V, (Q, K, V, weights, scale)


def backward_r1(grad_output, cache):
    Q, K, V, weights, scale = cache
    grad_V = np.swapaxes(weights, -1, -2) @ grad_output
    grad_weights = grad_output @ np.swapaxes(V, -1, -2)
    row_dot = np.sum(grad_weights * weights, axis=-1, keepdims=True)
    grad_scores = weights * (grad_weights - row_dot)
    grad_Q = (grad_scores @ K) * scale
    grad_K = (np.swapaxes(grad_scores, -1, -2) @ Q) * scale
    return grad_Q, grad_K, grad_V


# ---- R2: einsum everywhere, FlashAttention's D = rowsum(dO * O) -----------------------------


def forward_r2(Q, K, V, mask=None):
    d_k = Q.shape[-1]
    S = np.einsum("...qd,...kd->...qk", Q, K) / math.sqrt(d_k)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = S.max(axis=-1, keepdims=True)
    m[~np.isfinite(m)] = 0.0
    P = np.exp(S - m)
    l = P.sum(axis=-1, keepdims=True)
    P = P / np.maximum(l, np.finfo(P.dtype).tiny)
    O = np.einsum("...qk,...kv->...qv", P, V)
    return O, {"Q": Q, "K": K, "V": V, "P": P, "O": O, "d_k": d_k}


def backward_r2(grad_output, cache):
    Q, K, V, P, O = cache["Q"], cache["K"], cache["V"], cache["P"], cache["O"]
    c = 1.0 / math.sqrt(cache["d_k"])
    dV = np.einsum("...qk,...qv->...kv", P, grad_output)
    dP = np.einsum("...qv,...kv->...qk", grad_output, V)
    D = np.einsum("...qv,...qv->...q", grad_output, O)[..., None]
    dS = P * (dP - D)
    dQ = np.einsum("...qk,...kd->...qd", dS, K) * c
    dK = np.einsum("...qk,...qd->...kd", dS, Q) * c
    return dQ, dK, dV


# ---- R3: plain Python loops, one query row at a time -----------------------------------------


def forward_r3(Q, K, V, mask=None):
    *lead, T_q, d_k = Q.shape
    T_k = K.shape[-2]
    d_v = V.shape[-1]
    allowed = np.ones((*lead, T_q, T_k), dtype=bool) if mask is None else np.broadcast_to(mask, (*lead, T_q, T_k))
    out = np.zeros((*lead, T_q, d_v), dtype=np.result_type(Q, K, V))
    weights = np.zeros((*lead, T_q, T_k), dtype=out.dtype)
    for b in np.ndindex(*lead):
        for i in range(T_q):
            keys = [j for j in range(T_k) if allowed[b + (i,)][j]]
            if not keys:
                continue  # nothing to read: weights and output stay 0
            s = np.array([Q[b + (i,)] @ K[b + (j,)] for j in keys]) / math.sqrt(d_k)
            e = np.exp(s - s.max())
            w = e / e.sum()
            for j, wj in zip(keys, w):
                weights[b + (i, j)] = wj
                out[b + (i,)] += wj * V[b + (j,)]
    return out, (Q, K, V, weights)


def backward_r3(grad_output, cache):
    Q, K, V, weights = cache
    *lead, T_q, d_k = Q.shape
    T_k = K.shape[-2]
    dtype = np.result_type(weights, grad_output)
    gQ = np.zeros(Q.shape, dtype=dtype)
    gK = np.zeros(K.shape, dtype=dtype)
    gV = np.zeros(V.shape, dtype=dtype)
    c = 1.0 / math.sqrt(d_k)
    for b in np.ndindex(*lead):
        for i in range(T_q):
            a = weights[b + (i,)]
            g = grad_output[b + (i,)]
            grad_a = V[b] @ g  # (T_k,)
            J = np.diag(a) - np.outer(a, a)
            grad_s = J.T @ grad_a
            for j in range(T_k):
                gV[b + (j,)] += a[j] * g
                gQ[b + (i,)] += grad_s[j] * K[b + (j,)] * c
                gK[b + (j,)] += grad_s[j] * Q[b + (i,)] * c
    return gQ, gK, gV


# ---- R4: log-sum-exp, cache only the inputs, recompute in backward --------------------------


def _weights_r4(Q, K, mask):
    S = Q @ _T(K) / math.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = np.max(S, axis=-1, keepdims=True)
    m = np.where(m == -np.inf, 0.0, m)
    with np.errstate(divide="ignore"):
        lse = m + np.log(np.sum(np.exp(S - m), axis=-1, keepdims=True))
    return np.where(np.isneginf(lse), 0.0, np.exp(S - np.where(np.isneginf(lse), 0.0, lse)))


def forward_r4(Q, K, V, mask=None):
    return _weights_r4(Q, K, mask) @ V, (Q, K, V, mask)


def backward_r4(grad_output, cache):
    Q, K, V, mask = cache
    A = _weights_r4(Q, K, mask)
    scale = 1.0 / math.sqrt(Q.shape[-1])
    dA = grad_output @ _T(V)
    dS = A * dA - A * np.sum(A * dA, axis=-1, keepdims=True)
    return dS @ K * scale, _T(dS) @ Q * scale, _T(A) @ grad_output


# ---- R5: NumPy masked arrays -----------------------------------------------------------------


def forward_r5(Q, K, V, mask=None):
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) / math.sqrt(K.shape[-1])
    blocked = np.zeros(scores.shape, bool) if mask is None else ~np.broadcast_to(mask, scores.shape)
    s = np.ma.masked_array(scores, mask=blocked)
    e = np.ma.exp(s - s.max(axis=-1, keepdims=True))
    w = (e / e.sum(axis=-1, keepdims=True)).filled(0.0).astype(scores.dtype)
    return w @ V, (w, Q, K, V)


def backward_r5(grad_output, cache):
    w, Q, K, V = cache
    scale = 1.0 / math.sqrt(K.shape[-1])
    gw = grad_output @ np.swapaxes(V, -1, -2)
    gs = w * (gw - (gw * w).sum(-1, keepdims=True))
    return gs @ K * scale, np.swapaxes(gs, -1, -2) @ Q * scale, np.swapaxes(w, -1, -2) @ grad_output


# ---- R6: let the empty rows go NaN, then nan_to_num the weights ------------------------------


def forward_r6(Q, K, V, mask=None):
    S = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    with np.errstate(invalid="ignore"):
        E = np.exp(S - S.max(axis=-1, keepdims=True))  # NaN on a row with no readable key
        A = E / E.sum(axis=-1, keepdims=True)
    A = np.nan_to_num(A, nan=0.0)
    return A @ V, (A, Q, K, V)


def backward_r6(grad_output, cache):
    A, Q, K, V = cache
    c = 1 / math.sqrt(Q.shape[-1])
    gA = grad_output @ np.swapaxes(V, -1, -2)
    gS = A * (gA - np.sum(gA * A, axis=-1, keepdims=True))
    return gS @ K * c, np.swapaxes(gS, -1, -2) @ Q * c, np.swapaxes(A, -1, -2) @ grad_output


# ---- R7: scale the queries first (a new array), keep the scaled Q in the cache ---------------


def forward_r7(Q, K, V, mask=None):
    scale = 1.0 / math.sqrt(Q.shape[-1])
    Qs = Q * scale
    S = Qs @ np.swapaxes(K, -1, -2)
    keep = np.ones(S.shape, bool) if mask is None else np.broadcast_to(mask, S.shape)
    S = np.where(keep, S, -np.inf)
    top = S.max(axis=-1, keepdims=True)
    top[top == -np.inf] = 0
    W = np.exp(S - top)
    W /= np.where(keep.any(-1, keepdims=True), W.sum(-1, keepdims=True), 1)
    return W @ V, (Qs, K, V, W, scale)


def backward_r7(grad_output, cache):
    Qs, K, V, W, scale = cache
    gW = grad_output @ np.swapaxes(V, -1, -2)
    gS = W * (gW - np.sum(W * gW, -1, keepdims=True))
    grad_Q = gS @ K * scale
    grad_K = np.swapaxes(gS, -1, -2) @ Qs  # Qs already carries the scale
    return grad_Q, grad_K, np.swapaxes(W, -1, -2) @ grad_output


# ---- R8: compute in float64 internally, hand back the input dtype ----------------------------


def forward_r8(Q, K, V, mask=None):
    dtype = np.result_type(Q, K, V)
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    ok = np.broadcast_to(True if mask is None else mask, s.shape)
    s = np.where(ok, s, -np.inf)
    has = ok.any(axis=-1, keepdims=True)
    m = np.where(has, s.max(axis=-1, keepdims=True), 0.0)
    e = np.exp(s - m)
    a = e / np.where(has, e.sum(axis=-1, keepdims=True), 1.0)
    return (a @ v).astype(dtype), (q, k, v, a, dtype)


def backward_r8(grad_output, cache):
    q, k, v, a, dtype = cache
    g = np.asarray(grad_output, dtype=np.float64)
    c = 1.0 / math.sqrt(q.shape[-1])
    ga = g @ np.swapaxes(v, -1, -2)
    gs = a * (ga - (ga * a).sum(-1, keepdims=True))
    grads = (gs @ k * c, np.swapaxes(gs, -1, -2) @ q * c, np.swapaxes(a, -1, -2) @ g)
    return tuple(x.astype(dtype) for x in grads)


# ---- R9: np.logaddexp.reduce for the normaliser ----------------------------------------------


def forward_r9(Q, K, V, mask=None):
    S = np.matmul(Q, np.swapaxes(K, -1, -2)) * (1 / math.sqrt(Q.shape[-1]))
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    log_norm = np.logaddexp.reduce(S, axis=-1, keepdims=True)  # -inf for an empty row
    empty = np.isneginf(log_norm)
    A = np.where(empty, 0.0, np.exp(S - np.where(empty, 0.0, log_norm))).astype(S.dtype)
    return A @ V, (Q, K, V, A)


def backward_r9(grad_output, cache):
    Q, K, V, A = cache
    c = 1 / math.sqrt(Q.shape[-1])
    dA = np.matmul(grad_output, np.swapaxes(V, -1, -2))
    dS = A * (dA - np.einsum("...k,...k->...", dA, A)[..., None])
    return np.matmul(dS, K) * c, np.matmul(np.swapaxes(dS, -1, -2), Q) * c, np.matmul(np.swapaxes(A, -1, -2), grad_output)


# ---- R10: cache as a small class, softmax Jacobian applied by einsum -------------------------


class _Cache10:
    def __init__(self, Q, K, V, A, c):
        self.Q, self.K, self.V, self.A, self.c = Q, K, V, A, c


def forward_r10(Q, K, V, mask=None):
    c = 1.0 / math.sqrt(Q.shape[-1])
    S = c * (Q @ np.swapaxes(K, -1, -2))
    bias = np.zeros_like(S) if mask is None else np.where(mask, 0.0, -np.inf).astype(S.dtype)
    S = S + bias
    M = np.max(S, axis=-1, keepdims=True)
    M = np.where(np.isneginf(M), 0.0, M)
    E = np.exp(S - M)
    Z = E.sum(axis=-1, keepdims=True)
    A = np.divide(E, Z, out=np.zeros_like(E), where=Z > 0)
    return A @ V, _Cache10(Q, K, V, A, c)


def backward_r10(grad_output, cache):
    A = cache.A
    J = np.einsum("...i,ij->...ij", A, np.eye(A.shape[-1], dtype=A.dtype)) - A[..., :, None] * A[..., None, :]
    dA = grad_output @ np.swapaxes(cache.V, -1, -2)
    dS = np.einsum("...ij,...i->...j", J, dA)
    return (dS @ cache.K) * cache.c, (np.swapaxes(dS, -1, -2) @ cache.Q) * cache.c, np.swapaxes(A, -1, -2) @ grad_output


# ---- R11: backward calls forward again -------------------------------------------------------


def _softmax_r11(S, allowed):
    S = np.where(allowed, S, -np.inf)
    top = np.max(S, axis=-1, keepdims=True)
    top = np.nan_to_num(top, neginf=0.0)
    E = np.exp(S - top)
    return E / np.clip(E.sum(-1, keepdims=True), np.finfo(E.dtype).tiny, None)


def forward_r11(Q, K, V, mask=None):
    allowed = True if mask is None else mask
    A = _softmax_r11(Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1]), allowed)
    return A @ V, (Q, K, V, mask)


def backward_r11(grad_output, cache):
    Q, K, V, mask = cache
    allowed = True if mask is None else mask
    A = _softmax_r11(Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1]), allowed)
    G_A = grad_output @ np.swapaxes(V, -1, -2)
    G_S = A * (G_A - (G_A * A).sum(-1, keepdims=True))
    k = math.sqrt(Q.shape[-1])
    return G_S @ K / k, np.swapaxes(G_S, -1, -2) @ Q / k, np.swapaxes(A, -1, -2) @ grad_output


# ---- R12: putmask on a broadcast copy --------------------------------------------------------


def forward_r12(Q, K, V, mask=None):
    d_k = K.shape[-1]
    S = np.matmul(Q, K.swapaxes(-1, -2)) / math.sqrt(d_k)
    if mask is not None:
        np.putmask(S, ~np.broadcast_to(mask, S.shape), -np.inf)  # S is our own array
    finite = np.isfinite(S).any(axis=-1, keepdims=True)
    S_max = np.max(np.where(finite, S, 0.0), axis=-1, keepdims=True)
    A = np.exp(S - S_max)
    A = A / np.where(finite, A.sum(axis=-1, keepdims=True), 1.0)
    return np.matmul(A, V), (A, Q, K, V, d_k)


def backward_r12(grad_output, cache):
    A, Q, K, V, d_k = cache
    gA = np.matmul(grad_output, V.swapaxes(-1, -2))
    gS = A * gA - A * np.sum(A * gA, axis=-1, keepdims=True)
    gQ = np.matmul(gS, K) / math.sqrt(d_k)
    gK = np.matmul(gS.swapaxes(-1, -2), Q) / math.sqrt(d_k)
    gV = np.matmul(A.swapaxes(-1, -2), grad_output)
    return gQ, gK, gV


# ---- R13: mask=None turned into an all-True mask, weights by 1/sum ---------------------------


def forward_r13(Q, K, V, mask=None):
    T_q, T_k = Q.shape[-2], K.shape[-2]
    if mask is None:
        mask = np.ones((T_q, T_k), dtype=bool)
    S = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    S = np.where(mask, S, -np.inf)
    any_key = np.any(np.broadcast_to(mask, S.shape), axis=-1, keepdims=True)
    S = S - np.max(np.where(any_key, S, 0), axis=-1, keepdims=True)
    P = np.exp(S)
    inv = np.where(any_key, 1.0 / np.where(any_key, P.sum(-1, keepdims=True), 1.0), 0.0)
    P = P * inv.astype(P.dtype)
    return P @ V, (Q, K, V, P)


def backward_r13(grad_output, cache):
    Q, K, V, P = cache
    scale = math.sqrt(Q.shape[-1])
    dP = grad_output @ np.swapaxes(V, -1, -2)
    dS = P * (dP - np.sum(dP * P, -1, keepdims=True))
    return (dS @ K) / scale, (np.swapaxes(dS, -1, -2) @ Q) / scale, np.swapaxes(P, -1, -2) @ grad_output


# =================================================================================== wrong


def _bwd_std(grad_output, cache):
    """A correct backward, shared by the wrong forwards below whose cache is (Q, K, V, A, scale)."""
    Q, K, V, A, scale = cache
    gA = grad_output @ _T(V)
    gS = A * (gA - np.sum(gA * A, axis=-1, keepdims=True))
    return gS @ K * scale, _T(gS) @ Q * scale, _T(A) @ grad_output


def forward_w_nomax(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    E = np.exp(S)  # no max subtraction
    if mask is not None:
        E = E * mask
    den = E.sum(-1, keepdims=True)
    A = np.divide(E, den, out=np.zeros_like(E), where=den > 0)
    return A @ V, (Q, K, V, A, scale)


def forward_w_globalmax(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    E = np.exp(S - np.max(S[np.isfinite(S)]))  # one maximum for the whole array
    den = E.sum(-1, keepdims=True)
    A = np.where(den > 0, E / np.where(den > 0, den, 1), 0.0)
    return A @ V, (Q, K, V, A, scale)


def forward_w_max_before_mask(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    m = S.max(axis=-1, keepdims=True)  # includes the blocked scores
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    E = np.exp(S - m)
    den = E.sum(-1, keepdims=True)
    A = np.where(den > 0, E / np.where(den > 0, den, 1), 0.0)
    return A @ V, (Q, K, V, A, scale)


def forward_w_mask_after(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    E = np.exp(S - S.max(-1, keepdims=True))
    A = E / E.sum(-1, keepdims=True)
    if mask is not None:
        A = A * mask  # mask the weights
    return A @ V, (Q, K, V, A, scale)


def forward_w_mask_after_renorm(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    E = np.exp(S - S.max(-1, keepdims=True))
    A = E / E.sum(-1, keepdims=True)
    if mask is not None:
        A = A * mask
        total = A.sum(-1, keepdims=True)
        A = np.divide(A, total, out=np.zeros_like(A), where=total > 0)
    return A @ V, (Q, K, V, A, scale)


def forward_w_inverted(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    if mask is not None:
        S = np.where(mask, -np.inf, S)  # True = blocked
    m = S.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    E = np.exp(S - m)
    den = E.sum(-1, keepdims=True)
    A = np.where(den > 0, E / np.where(den > 0, den, 1), 0.0)
    return A @ V, (Q, K, V, A, scale)


def forward_w_fill_1e9(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    if mask is not None:
        S = np.where(mask, S, -1e9)
    E = np.exp(S - S.max(-1, keepdims=True))
    A = E / E.sum(-1, keepdims=True)
    return A @ V, (Q, K, V, A, scale)


def forward_w_fill_finfo(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    if mask is not None:
        S = np.where(mask, S, np.finfo(S.dtype).min)
    E = np.exp(S - S.max(-1, keepdims=True))
    A = E / E.sum(-1, keepdims=True)
    return A @ V, (Q, K, V, A, scale)


def forward_w_no_guard(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    E = np.exp(S - S.max(-1, keepdims=True))
    A = E / E.sum(-1, keepdims=True)
    return A @ V, (Q, K, V, A, scale)


def forward_w_guard_output_only(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    E = np.exp(S - S.max(-1, keepdims=True))
    A = E / E.sum(-1, keepdims=True)
    return np.nan_to_num(A @ V), (Q, K, V, A, scale)  # the weights keep their NaN


def forward_w_KT(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ K.T * scale
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = S.max(-1, keepdims=True)
    E = np.exp(S - np.where(np.isfinite(m), m, 0))
    den = E.sum(-1, keepdims=True)
    A = np.where(den > 0, E / np.where(den > 0, den, 1), 0.0)
    return A @ V, (Q, K, V, A, scale)


def backward_w_KT(grad_output, cache):
    Q, K, V, A, scale = cache
    gA = grad_output @ V.T
    gS = A * (gA - np.sum(gA * A, axis=-1, keepdims=True))
    return gS @ K * scale, gS.T @ Q * scale, A.T @ grad_output


def forward_w_transpose021(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ K.transpose(0, 2, 1) * scale  # (batch, T, d)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = S.max(-1, keepdims=True)
    E = np.exp(S - np.where(np.isfinite(m), m, 0))
    den = E.sum(-1, keepdims=True)
    A = np.where(den > 0, E / np.where(den > 0, den, 1), 0.0)
    return A @ V, (Q, K, V, A, scale)


def backward_w_transpose021(grad_output, cache):
    Q, K, V, A, scale = cache
    gA = grad_output @ V.transpose(0, 2, 1)
    gS = A * (gA - np.sum(gA * A, axis=-1, keepdims=True))
    return gS @ K * scale, gS.transpose(0, 2, 1) @ Q * scale, A.transpose(0, 2, 1) @ grad_output


def _masked_softmax(S, mask):
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = S.max(-1, keepdims=True)
    E = np.exp(S - np.where(np.isfinite(m), m, 0))
    den = E.sum(-1, keepdims=True)
    return np.where(den > 0, E / np.where(den > 0, den, 1), 0.0)


def forward_w_shape1(Q, K, V, mask=None):
    d_k = Q.shape[1]  # (T, d_k)
    scale = 1 / math.sqrt(d_k)
    A = _masked_softmax(Q @ _T(K) * scale, mask)
    return A @ V, (Q, K, V, A, scale)


def forward_w_sqrt_dv(Q, K, V, mask=None):
    scale = 1 / math.sqrt(V.shape[-1])  # the width of the values
    A = _masked_softmax(Q @ _T(K) * scale, mask)
    return A @ V, (Q, K, V, A, scale)


def forward_w_isqrt(Q, K, V, mask=None):
    scale = 1 / math.isqrt(Q.shape[-1])
    A = _masked_softmax(Q @ _T(K) * scale, mask)
    return A @ V, (Q, K, V, A, scale)


def forward_w_pow2(Q, K, V, mask=None):
    d_k = Q.shape[-1]
    scale = 2.0 ** (-(d_k.bit_length() - 1) / 2)  # 1/sqrt(d_k) via log2(d_k)
    A = _masked_softmax(Q @ _T(K) * scale, mask)
    return A @ V, (Q, K, V, A, scale)


def forward_w_over_dk(Q, K, V, mask=None):
    scale = 1 / Q.shape[-1]
    A = _masked_softmax(Q @ _T(K) * scale, mask)
    return A @ V, (Q, K, V, A, scale)


def forward_w_noscale(Q, K, V, mask=None):
    A = _masked_softmax(Q @ _T(K), mask)
    return A @ V, (Q, K, V, A, 1.0)


def forward_w_where_none(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = np.where(mask, Q @ _T(K) * scale, -np.inf)
    m = S.max(-1, keepdims=True)
    E = np.exp(S - np.where(np.isfinite(m), m, 0))
    den = E.sum(-1, keepdims=True)
    A = np.where(den > 0, E / np.where(den > 0, den, 1), 0.0)
    return A @ V, (Q, K, V, A, scale)


def forward_w_always_causal(Q, K, V, mask=None):
    T_q, T_k = Q.shape[-2], K.shape[-2]
    causal = np.tril(np.ones((T_q, T_k), dtype=bool))  # the exercise is causal attention
    scale = 1 / math.sqrt(Q.shape[-1])
    A = _masked_softmax(Q @ _T(K) * scale, causal)
    return A @ V, (Q, K, V, A, scale)


def forward_w_default_causal(Q, K, V, mask=None):
    if mask is None:
        mask = np.tril(np.ones((Q.shape[-2], K.shape[-2]), dtype=bool))
    scale = 1 / math.sqrt(Q.shape[-1])
    A = _masked_softmax(Q @ _T(K) * scale, mask)
    return A @ V, (Q, K, V, A, scale)


def forward_w_bool_index(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    if mask is not None:
        S[~mask] = -np.inf
    A = _masked_softmax(S, None)
    return A @ V, (Q, K, V, A, scale)


def forward_w_ellipsis_index(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    if mask is not None:
        S[..., ~mask] = -np.inf  # a (T_q, T_k) mask over any leading axes
    A = _masked_softmax(S, None)
    return A @ V, (Q, K, V, A, scale)


def forward_w_padding_reshape(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    if mask is not None:
        mask = mask.reshape(mask.shape[0], 1, -1)  # make sure it is (B, 1, T_k)
    A = _masked_softmax(Q @ _T(K) * scale, mask)
    return A @ V, (Q, K, V, A, scale)


def forward_w_padding_newaxis(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    if mask is not None:
        mask = mask[:, None, :]  # padding mask (B, T_k) -> (B, 1, T_k)
    A = _masked_softmax(Q @ _T(K) * scale, mask)
    return A @ V, (Q, K, V, A, scale)


def forward_w_mask_multiply(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    if mask is not None:
        S = S * mask  # blocked scores become 0
    A = _masked_softmax(S, None)
    return A @ V, (Q, K, V, A, scale)


def forward_w_fill_100(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    has_key = np.ones(S.shape[:-1] + (1,), bool)
    if mask is not None:
        S = np.where(mask, S, -100.0)  # exp(-100) is 0 in practice
        has_key = np.broadcast_to(mask, S.shape).any(-1, keepdims=True)
    E = np.exp(S - S.max(-1, keepdims=True))
    A = np.where(has_key, E / E.sum(-1, keepdims=True), 0.0)
    return A @ V, (Q, K, V, A, scale)


def forward_w_mean_shift(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    S = S - S.mean(-1, keepdims=True)  # centre the scores (before masking)
    A = _masked_softmax_nomax(S, mask)
    return A @ V, (Q, K, V, A, scale)


def _masked_softmax_nomax(S, mask):
    E = np.exp(S)
    if mask is not None:
        E = np.where(mask, E, 0.0)
    den = E.sum(-1, keepdims=True)
    return np.divide(E, den, out=np.zeros_like(E), where=den > 0)


def forward_w_column_max(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = np.max(S, axis=-2, keepdims=True)  # axis slip: the max of each column
    E = np.exp(S - np.where(np.isfinite(m), m, 0.0))
    den = E.sum(-1, keepdims=True)
    A = np.where(den > 0, E / np.where(den > 0, den, 1), 0.0)
    return A @ V, (Q, K, V, A, scale)


def forward_w_softmax_columns(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = np.max(S, axis=-2, keepdims=True)
    E = np.exp(S - np.where(np.isfinite(m), m, 0.0))
    den = E.sum(-2, keepdims=True)  # normalised over the queries
    A = np.where(den > 0, E / np.where(den > 0, den, 1), 0.0)
    return A @ V, (Q, K, V, A, scale)


def forward_w_swapped_return(Q, K, V, mask=None):
    out, cache = forward_r1(Q, K, V, mask)
    return cache, out


def backward_w_swapped_return(grad_output, cache):
    return backward_r1(grad_output, cache)


# ---- backward mistakes (forward_r1's cache: Q, K, V, weights, scale) -------------------------


def backward_w_sign(grad_output, cache):
    Q, K, V, weights, scale = cache
    gW = grad_output @ _T(V)
    gS = weights * (gW + np.sum(gW * weights, -1, keepdims=True))
    return gS @ K * scale, _T(gS) @ Q * scale, _T(weights) @ grad_output


def backward_w_gK_untransposed(grad_output, cache):
    Q, K, V, weights, scale = cache
    gW = grad_output @ _T(V)
    gS = weights * (gW - np.sum(gW * weights, -1, keepdims=True))
    return gS @ K * scale, gS @ Q * scale, _T(weights) @ grad_output


def backward_w_gV_untransposed(grad_output, cache):
    Q, K, V, weights, scale = cache
    gW = grad_output @ _T(V)
    gS = weights * (gW - np.sum(gW * weights, -1, keepdims=True))
    return gS @ K * scale, _T(gS) @ Q * scale, weights @ grad_output


def backward_w_noscale(grad_output, cache):
    Q, K, V, weights, scale = cache
    gW = grad_output @ _T(V)
    gS = weights * (gW - np.sum(gW * weights, -1, keepdims=True))
    return gS @ K, _T(gS) @ Q, _T(weights) @ grad_output


def backward_w_no_weight_factor(grad_output, cache):
    Q, K, V, weights, scale = cache
    gW = grad_output @ _T(V)
    gS = gW - np.sum(gW * weights, -1, keepdims=True)  # forgot the leading weights *
    return gS @ K * scale, _T(gS) @ Q * scale, _T(weights) @ grad_output


def backward_w_mutates_grad(grad_output, cache):
    Q, K, V, weights, scale = cache
    no_key = np.all(weights == 0, axis=-1)
    grad_output[no_key] = 0.0  # rows with no readable key send no gradient
    gW = grad_output @ _T(V)
    gS = weights * (gW - np.sum(gW * weights, -1, keepdims=True))
    return gS @ K * scale, _T(gS) @ Q * scale, _T(weights) @ grad_output


def backward_w_mutates_cache(grad_output, cache):
    Q, K, V, weights, scale = cache
    gW = grad_output @ _T(V)
    gS = weights * (gW - np.sum(gW * weights, -1, keepdims=True))
    K *= scale  # fold the scale into the cached arrays once
    Q *= scale  # (they are the caller's Q and K: forward cached them as given)
    return gS @ K, _T(gS) @ Q, _T(weights) @ grad_output


# ---- forward mutating its input --------------------------------------------------------------


def forward_w_mutates_Q(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    Q *= scale  # scale the queries once
    A = _masked_softmax(Q @ _T(K), mask)
    return A @ V, (Q, K, V, A, 1.0)


# ---- state between calls ---------------------------------------------------------------------

_LAST_w_global = {}


def forward_w_global_cache(Q, K, V, mask=None):
    out, cache = forward_r1(Q, K, V, mask)
    _LAST_w_global["cache"] = cache
    return out, None


def backward_w_global_cache(grad_output, cache):
    return backward_r1(grad_output, _LAST_w_global["cache"])  # the cache argument is None


_SHARED_w = {}


def forward_w_shared_dict(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    A = _masked_softmax(Q @ _T(K) * scale, mask)
    _SHARED_w.update(Q=Q, K=K, V=V, A=A, scale=scale)
    return A @ V, _SHARED_w  # every call hands back the same dict


def backward_w_shared_dict(grad_output, cache):
    return _bwd_std(grad_output, (cache["Q"], cache["K"], cache["V"], cache["A"], cache["scale"]))


_BUF_w = {}


def forward_w_buffer(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    buf = _BUF_w.get(S.shape)
    if buf is None or buf.dtype != S.dtype:
        buf = _BUF_w[S.shape] = np.empty_like(S)  # reuse the weights buffer between calls
    np.copyto(buf, _masked_softmax(S, mask))
    return buf @ V, (Q, K, V, buf, scale)


_SCALE_w = []


def forward_w_first_scale(Q, K, V, mask=None):
    if not _SCALE_w:
        _SCALE_w.append(1 / math.sqrt(Q.shape[-1]))  # compute the scale once
    scale = _SCALE_w[0]
    A = _masked_softmax(Q @ _T(K) * scale, mask)
    return A @ V, (Q, K, V, A, scale)


# ---- backward recomputing the softmax wrongly ------------------------------------------------


def forward_w_cache_scores(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    A = _masked_softmax(S, mask)
    return A @ V, (Q, K, V, S, mask, scale)


def backward_w_naive_recompute(grad_output, cache):
    Q, K, V, S, mask, scale = cache
    E = np.exp(S)  # recompute the weights (no max: "backward only runs once")
    if mask is not None:
        E = np.where(mask, E, 0.0)
    den = E.sum(-1, keepdims=True)
    A = np.divide(E, den, out=np.zeros_like(E), where=den > 0)
    return _bwd_std(grad_output, (Q, K, V, A, scale))


def backward_w_recompute_unmasked(grad_output, cache):
    Q, K, V, S, mask, scale = cache
    E = np.exp(S - S.max(-1, keepdims=True))
    A = E / E.sum(-1, keepdims=True)  # the mask is forgotten here
    return _bwd_std(grad_output, (Q, K, V, A, scale))


# ---- loop version with a grad_K buffer shaped like Q -----------------------------------------


def forward_w_loop(Q, K, V, mask=None):
    *lead, T_q, d_k = Q.shape
    T_k = K.shape[-2]
    allowed = np.broadcast_to(True if mask is None else mask, (*lead, T_q, T_k))
    A = np.zeros((*lead, T_q, T_k))
    for idx in np.ndindex(*lead, T_q):
        s = K[idx[:-1]] @ Q[idx] / math.sqrt(d_k)
        s = np.where(allowed[idx], s, -np.inf)
        if np.any(allowed[idx]):
            e = np.exp(s - s.max())
            A[idx] = e / e.sum()
    return A @ V, (Q, K, V, A)


def backward_w_loop(grad_output, cache):
    Q, K, V, A = cache
    *lead, T_q, d_k = Q.shape
    gQ = np.zeros_like(Q)
    gK = np.zeros_like(Q)  # same shape as Q ... (self-attention habit)
    gV = np.zeros_like(V)
    for idx in np.ndindex(*lead, T_q):
        b = idx[:-1]
        a = A[idx]
        ga = V[b] @ grad_output[idx]
        gs = a * (ga - a @ ga)
        gQ[idx] = gs @ K[b] / math.sqrt(d_k)
        gK[b] += np.outer(gs, Q[idx]) / math.sqrt(d_k)
        gV[b] += np.outer(a, grad_output[idx])
    return gQ, gK, gV


def forward_w_tiny_den(Q, K, V, mask=None):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = Q @ _T(K) * scale
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = S.max(-1, keepdims=True)
    E = np.exp(S - np.where(np.isfinite(m), m, 0))
    den = E.sum(-1, keepdims=True)
    den = np.where(den == 0, 1e-300, den)  # avoid 0/0 on an empty row (1e-300 is 0.0 in float32)
    A = E / den
    return A @ V, (Q, K, V, A, scale)


def forward_w_mask_required(Q, K, V, mask):
    scale = 1 / math.sqrt(Q.shape[-1])
    A = _masked_softmax(Q @ _T(K) * scale, mask)  # the mask parameter has no default
    return A @ V, (Q, K, V, A, scale)


# =================================================================================== witnesses

W = ref.witness_19_4
R1B = backward_r1


def _p(f, b=_bwd_std):
    return (f, b)


ATTEMPTS = [
    # ------------------------------------------------------------------------------ right
    Attempt("19.4-001", "19.4", "right",
            "The chapter's listings with -inf masking, a per-row max guarded for empty rows, 0 weights where the row sum is 0.",
            (forward_r1, backward_r1)),
    Attempt("19.4-002", "19.4", "right",
            "einsum throughout, rows divided by max(sum, tiny); backward uses FlashAttention's D = rowsum(dO * O).",
            (forward_r2, backward_r2)),
    Attempt("19.4-003", "19.4", "right",
            "Python loops over leading indices and query rows, softmax over the readable keys only; backward per row with an explicit Jacobian.",
            (forward_r3, backward_r3)),
    Attempt("19.4-004", "19.4", "right",
            "Weights as exp(S - logsumexp) with the empty row guarded; the cache keeps only (Q, K, V, mask) and backward recomputes.",
            (forward_r4, backward_r4)),
    Attempt("19.4-005", "19.4", "right",
            "NumPy masked arrays for the softmax, masked weights filled with 0.",
            (forward_r5, backward_r5)),
    Attempt("19.4-006", "19.4", "right",
            "Lets an empty row become NaN, then np.nan_to_num on the weights before they are used or cached.",
            (forward_r6, backward_r6)),
    Attempt("19.4-007", "19.4", "right",
            "Scales a new array Qs = Q * scale first; grad_K = dS^T Qs (scale already inside), grad_Q = dS K * scale.",
            (forward_r7, backward_r7)),
    Attempt("19.4-008", "19.4", "right",
            "Computes in float64 internally and casts results back to the input dtype (float32 in, float32 out).",
            (forward_r8, backward_r8)),
    Attempt("19.4-009", "19.4", "right",
            "Normaliser by np.logaddexp.reduce; an empty row (log-normaliser -inf) gets weights 0.",
            (forward_r9, backward_r9)),
    Attempt("19.4-010", "19.4", "right",
            "Additive -inf bias for the mask, np.divide(where=Z>0); cache object; backward applies batched Jacobians by einsum.",
            (forward_r10, backward_r10)),
    Attempt("19.4-011", "19.4", "right",
            "A helper softmax with nan_to_num(neginf=0) for the row max and a clipped row sum; backward recomputes from the inputs.",
            (forward_r11, backward_r11)),
    Attempt("19.4-012", "19.4", "right",
            "np.putmask(-inf) on its own score array through a broadcast of the mask; max taken over finite rows only.",
            (forward_r12, backward_r12)),
    Attempt("19.4-013", "19.4", "right",
            "mask=None replaced by an all-True (T_q, T_k) mask, then the same masked softmax; multiplies by 1/sum.",
            (forward_r13, backward_r13)),
    # ------------------------------------------------------------------------------ wrong
    Attempt("19.4-014", "19.4", "wrong", "No max subtraction: exp overflows for scores of several hundred.",
            _p(forward_w_nomax), lambda: W(_p(forward_w_nomax), ["causal5", "large"])),
    Attempt("19.4-015", "19.4", "wrong",
            "One global maximum for the whole array: rows whose scores lie far below it underflow to 0/0.",
            _p(forward_w_globalmax), lambda: W(_p(forward_w_globalmax), ["causal5", "far_rows"])),
    Attempt("19.4-016", "19.4", "wrong",
            "Row max taken before masking, over blocked scores too: a blocked score far above the readable ones underflows them.",
            _p(forward_w_max_before_mask), lambda: W(_p(forward_w_max_before_mask), ["causal5", "blocked_high"])),
    Attempt("19.4-017", "19.4", "wrong", "Mask applied to the weights after the softmax, without renormalising.",
            _p(forward_w_mask_after), lambda: W(_p(forward_w_mask_after), ["causal5"])),
    Attempt("19.4-018", "19.4", "wrong",
            "Mask after the softmax, then renormalised: right for small scores, 0/0 when a blocked score dominates the row.",
            _p(forward_w_mask_after_renorm),
            lambda: W(_p(forward_w_mask_after_renorm), ["causal5", "heads", "blocked_high"])),
    Attempt("19.4-019", "19.4", "wrong", "Mask read the wrong way round (True = blocked).",
            _p(forward_w_inverted), lambda: W(_p(forward_w_inverted), ["causal5"])),
    Attempt("19.4-020", "19.4", "wrong",
            "Blocked scores filled with -1e9: a row with no readable key gets the uniform average, not 0.",
            _p(forward_w_fill_1e9), lambda: W(_p(forward_w_fill_1e9), ["causal5", "empty_row"])),
    Attempt("19.4-021", "19.4", "wrong",
            "Blocked scores filled with np.finfo(dtype).min: an empty row gets the uniform average.",
            _p(forward_w_fill_finfo), lambda: W(_p(forward_w_fill_finfo), ["causal5", "padding", "all_masked"])),
    Attempt("19.4-022", "19.4", "wrong", "-inf masking with no guard: NaN on a row with no readable key.",
            _p(forward_w_no_guard), lambda: W(_p(forward_w_no_guard), ["causal5", "empty_row"])),
    Attempt("19.4-023", "19.4", "wrong",
            "nan_to_num on the output only: forward is fine, backward gets NaN from the cached weights of an empty row.",
            _p(forward_w_guard_output_only), lambda: W(_p(forward_w_guard_output_only), ["causal5", "empty_row"])),
    Attempt("19.4-024", "19.4", "wrong", "K.T, V.T, A.T: right for 2-D arrays only, fails with a batch axis.",
            (forward_w_KT, backward_w_KT), lambda: W((forward_w_KT, backward_w_KT), ["causal5", "batch_causal"])),
    Attempt("19.4-025", "19.4", "wrong", "transpose(0, 2, 1): right only with exactly one leading axis.",
            (forward_w_transpose021, backward_w_transpose021),
            lambda: W((forward_w_transpose021, backward_w_transpose021), ["batch_causal", "heads"])),
    Attempt("19.4-026", "19.4", "wrong",
            "d_k = Q.shape[1]: right for 2-D input; with a batch axis it is T_q.",
            _p(forward_w_shape1), lambda: W(_p(forward_w_shape1), ["causal5", "dk5"])),
    Attempt("19.4-027", "19.4", "wrong", "Scales by sqrt(d_v): right only when d_k == d_v.",
            _p(forward_w_sqrt_dv), lambda: W(_p(forward_w_sqrt_dv), ["square_dk_eq_dv", "causal5"])),
    Attempt("19.4-028", "19.4", "wrong", "math.isqrt(d_k) for the square root: right only for perfect squares (4, 64).",
            _p(forward_w_isqrt), lambda: W(_p(forward_w_isqrt), ["causal5", "dk5"])),
    Attempt("19.4-029", "19.4", "wrong",
            "sqrt via bit_length (log2 of d_k): right only when d_k is a power of two.",
            _p(forward_w_pow2), lambda: W(_p(forward_w_pow2), ["causal5", "dk8", "dk6_2d"])),
    Attempt("19.4-030", "19.4", "wrong", "Divides the scores by d_k instead of sqrt(d_k).",
            _p(forward_w_over_dk), lambda: W(_p(forward_w_over_dk), ["causal5"])),
    Attempt("19.4-031", "19.4", "wrong", "Forgets the scale altogether (right only at d_k = 1).",
            _p(forward_w_noscale), lambda: W(_p(forward_w_noscale), ["dk1", "causal5"])),
    Attempt("19.4-032", "19.4", "wrong",
            "np.where(mask, S, -inf) without an `if`: with mask=None every score is blocked and the output is 0.",
            _p(forward_w_where_none), lambda: W(_p(forward_w_where_none), ["causal5", "none"])),
    Attempt("19.4-033", "19.4", "wrong", "Ignores the given mask and always applies np.tril: right only for causal masks.",
            _p(forward_w_always_causal), lambda: W(_p(forward_w_always_causal), ["causal5", "padding"])),
    Attempt("19.4-034", "19.4", "wrong", "Defaults to a causal mask when mask is None.",
            _p(forward_w_default_causal), lambda: W(_p(forward_w_default_causal), ["causal5", "none_omitted"])),
    Attempt("19.4-035", "19.4", "wrong",
            "S[~mask] = -inf: works only when the mask already has the scores' full shape.",
            _p(forward_w_bool_index), lambda: W(_p(forward_w_bool_index), ["causal5", "batch_causal"])),
    Attempt("19.4-036", "19.4", "wrong",
            "S[..., ~mask] = -inf: works for any (T_q, T_k) mask, fails for a (B, 1, T_k) padding mask.",
            _p(forward_w_ellipsis_index), lambda: W(_p(forward_w_ellipsis_index), ["causal5", "heads", "padding"])),
    Attempt("19.4-037", "19.4", "wrong",
            "Reshapes every mask to (B, 1, T_k): right for padding masks, wrong for a causal one.",
            _p(forward_w_padding_reshape), lambda: W(_p(forward_w_padding_reshape), ["padding", "causal5"])),
    Attempt("19.4-038", "19.4", "wrong",
            "Adds an axis to the mask (expects a (B, T_k) padding mask), so a (B, 1, T_k) mask broadcasts to the wrong shape.",
            _p(forward_w_padding_newaxis), lambda: W(_p(forward_w_padding_newaxis), ["none", "padding"])),
    Attempt("19.4-039", "19.4", "wrong", "Multiplies the scores by the mask: blocked scores become 0, not -inf.",
            _p(forward_w_mask_multiply), lambda: W(_p(forward_w_mask_multiply), ["causal5"])),
    Attempt("19.4-040", "19.4", "wrong",
            "Fills blocked scores with -100 (empty rows guarded): readable scores around -300 lose to the blocked ones.",
            _p(forward_w_fill_100), lambda: W(_p(forward_w_fill_100), ["causal5", "empty_row", "very_negative_readable"])),
    Attempt("19.4-041", "19.4", "wrong",
            "Centres each row by its mean instead of its max: overflows when a row's scores spread by several hundred.",
            _p(forward_w_mean_shift), lambda: W(_p(forward_w_mean_shift), ["causal5", "spread_keys"])),
    Attempt("19.4-042", "19.4", "wrong", "Subtracts each column's max (axis=-2) instead of each row's.",
            _p(forward_w_column_max), lambda: W(_p(forward_w_column_max), ["causal5"])),
    Attempt("19.4-043", "19.4", "wrong", "Softmax normalised over the queries (axis=-2) instead of the keys.",
            _p(forward_w_softmax_columns), lambda: W(_p(forward_w_softmax_columns), ["causal5"])),
    Attempt("19.4-044", "19.4", "wrong", "forward returns (cache, output) instead of (output, cache).",
            (forward_w_swapped_return, backward_w_swapped_return),
            lambda: W((forward_w_swapped_return, backward_w_swapped_return), ["causal5"])),
    Attempt("19.4-045", "19.4", "wrong", "Sign error in the softmax row term of backward.",
            (forward_r1, backward_w_sign), lambda: W((forward_r1, backward_w_sign), ["causal5"])),
    Attempt("19.4-046", "19.4", "wrong",
            "grad_K = dS @ Q (transpose forgotten): runs for square inputs, wrong values; fails for T_q != T_k.",
            (forward_r1, backward_w_gK_untransposed), lambda: W((forward_r1, backward_w_gK_untransposed), ["causal5"])),
    Attempt("19.4-047", "19.4", "wrong", "grad_V = A @ dO (transpose of A forgotten).",
            (forward_r1, backward_w_gV_untransposed), lambda: W((forward_r1, backward_w_gV_untransposed), ["causal5"])),
    Attempt("19.4-048", "19.4", "wrong", "Backward forgets the 1/sqrt(d_k) in grad_Q and grad_K.",
            (forward_r1, backward_w_noscale), lambda: W((forward_r1, backward_w_noscale), ["causal5"])),
    Attempt("19.4-049", "19.4", "wrong",
            "Score gradient without the leading weights factor: blocked keys get gradient.",
            (forward_r1, backward_w_no_weight_factor),
            lambda: W((forward_r1, backward_w_no_weight_factor), ["causal5", "first_queries"])),
    Attempt("19.4-050", "19.4", "wrong",
            "Backward zeroes the output gradient of empty rows in place: writes into the caller's grad_output.",
            (forward_r1, backward_w_mutates_grad),
            lambda: W((forward_r1, backward_w_mutates_grad), ["causal5", "empty_row"])),
    Attempt("19.4-051", "19.4", "wrong",
            "Backward folds the scale into the cached K in place, and the cached K is the caller's array.",
            (forward_r1, backward_w_mutates_cache), lambda: W((forward_r1, backward_w_mutates_cache), ["causal5"])),
    Attempt("19.4-052", "19.4", "wrong", "Forward scales the caller's Q in place (Q *= scale).",
            _p(forward_w_mutates_Q), lambda: W(_p(forward_w_mutates_Q), ["causal5"])),
    Attempt("19.4-053", "19.4", "wrong",
            "Forward stores its cache in a module global and backward ignores its cache argument: stale after another forward.",
            (forward_w_global_cache, backward_w_global_cache),
            lambda: W((forward_w_global_cache, backward_w_global_cache), [], sequence=True)),
    Attempt("19.4-054", "19.4", "wrong",
            "Every forward call returns the same module-level dict as cache, overwritten by the next call.",
            (forward_w_shared_dict, backward_w_shared_dict),
            lambda: W((forward_w_shared_dict, backward_w_shared_dict), [], sequence=True)),
    Attempt("19.4-055", "19.4", "wrong",
            "Reuses one weights buffer per shape between calls: a later forward of the same shape overwrites an earlier cache.",
            _p(forward_w_buffer), lambda: W(_p(forward_w_buffer), [], sequence=True)),
    Attempt("19.4-056", "19.4", "wrong",
            "Computes the scale on the first call only and keeps it: wrong for any later call with another d_k.",
            _p(forward_w_first_scale), lambda: W(_p(forward_w_first_scale), ["causal5", "dk5", "dk8"])),
    Attempt("19.4-057", "19.4", "wrong",
            "Forward is stable, but backward recomputes the weights from cached scores without the max: overflow in backward.",
            (forward_w_cache_scores, backward_w_naive_recompute),
            lambda: W((forward_w_cache_scores, backward_w_naive_recompute), ["causal5", "large"])),
    Attempt("19.4-058", "19.4", "wrong",
            "Backward recomputes the softmax from the cached scores and forgets the mask.",
            (forward_w_cache_scores, backward_w_recompute_unmasked),
            lambda: W((forward_w_cache_scores, backward_w_recompute_unmasked), ["causal5"])),
    Attempt("19.4-059", "19.4", "wrong",
            "Loop version with grad_K = zeros_like(Q): right only when T_q == T_k.",
            (forward_w_loop, backward_w_loop), lambda: W((forward_w_loop, backward_w_loop), ["causal5", "heads", "rect"])),
    Attempt("19.4-060", "19.4", "wrong",
            "Guards the empty row with a denominator of 1e-300: fine in float64, but 1e-300 is 0.0 in float32, so 0/0 = NaN there.",
            _p(forward_w_tiny_den), lambda: W(_p(forward_w_tiny_den), ["empty_row", "float32", "float32_empty"])),
    Attempt("19.4-061", "19.4", "wrong",
            "Writes forward(Q, K, V, mask) without the default None: a call without a mask raises TypeError.",
            _p(forward_w_mask_required), lambda: W(_p(forward_w_mask_required), ["causal5", "none", "none_omitted"])),
]

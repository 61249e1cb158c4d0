"""Exercise 19.4 (c): central_difference(f, X, h=None) and gradient_errors(...), as students write them.

In the notebook each student names them central_difference and gradient_errors; here each pair
carries a suffix so that they can live in one module, and each gradient_errors calls its own
central_difference.
"""

import itertools
import math

import numpy as np

try:
    from . import reference as ref
    from .common import Attempt
except ImportError:
    import reference as ref
    from common import Attempt


def _rel(a, n):
    return float(np.linalg.norm(a - n) / (np.linalg.norm(a) + np.linalg.norm(n)))


# =================================================================================== right

# ---- R1: flat index, save and restore the entry ----------------------------------------------


def central_difference_r1(f, X, h=None):
    if h is None:
        h = 1e-6  # truncation ~h^2 and round-off ~1e-16/h balance near 1e-5 .. 1e-6
    grad = np.zeros_like(X, dtype=np.float64)
    for i in range(X.size):
        old = X.flat[i]
        X.flat[i] = old + h
        f_plus = f(X)
        X.flat[i] = old - h
        f_minus = f(X)
        X.flat[i] = old  # put it back exactly
        grad.flat[i] = (f_plus - f_minus) / (2 * h)
    return grad


def gradient_errors_r1(forward, backward, Q, K, V, mask, grad_output):
    _, cache = forward(Q, K, V, mask)
    grad_Q, grad_K, grad_V = backward(grad_output, cache)

    def loss_Q(X):
        return np.sum(grad_output * forward(X, K, V, mask)[0])

    def loss_K(X):
        return np.sum(grad_output * forward(Q, X, V, mask)[0])

    def loss_V(X):
        return np.sum(grad_output * forward(Q, K, X, mask)[0])

    num_Q = central_difference_r1(loss_Q, Q.copy())
    num_K = central_difference_r1(loss_K, K.copy())
    num_V = central_difference_r1(loss_V, V.copy())
    return _rel(grad_Q, num_Q), _rel(grad_K, num_K), _rel(grad_V, num_V)


# ---- R2: np.ndindex on copies, L1 relative error ---------------------------------------------


def central_difference_r2(f, X, h=None):
    h = 1e-5 if h is None else h
    out = np.empty(X.shape)
    for idx in np.ndindex(X.shape):
        up = X.copy()
        down = X.copy()
        up[idx] += h
        down[idx] -= h
        out[idx] = (f(up) - f(down)) / (2.0 * h)
    return out


def gradient_errors_r2(forward, backward, Q, K, V, mask, grad_output):
    analytic = backward(grad_output, forward(Q, K, V, mask)[1])
    inputs = [Q, K, V]
    errors = []
    for which in range(3):
        def loss(X, which=which):
            args = list(inputs)
            args[which] = X
            return float(np.sum(grad_output * forward(*args, mask)[0]))

        numeric = central_difference_r2(loss, inputs[which])
        a = analytic[which]
        errors.append(np.abs(a - numeric).sum() / (np.abs(a).sum() + np.abs(numeric).sum()))
    return tuple(errors)


# ---- R3: np.nditer readwrite, h = cube root of machine epsilon -------------------------------


def central_difference_r3(f, X, h=None):
    if h is None:
        h = float(np.cbrt(np.finfo(np.float64).eps))  # about 6e-6
    grad = np.zeros(X.shape)
    g = grad.reshape(-1)
    with np.nditer(X, flags=["multi_index"], op_flags=["readwrite"]) as it:
        for k, x in enumerate(it):
            saved = x.copy()
            x[...] = saved + h
            fp = f(X)
            x[...] = saved - h
            fm = f(X)
            x[...] = saved
            grad[it.multi_index] = (fp - fm) / (2 * h)
    del g
    return grad


def gradient_errors_r3(forward, backward, Q, K, V, mask, grad_output):
    grads = backward(grad_output, forward(Q, K, V, mask)[1])
    Qc, Kc, Vc = Q.copy(), K.copy(), V.copy()
    losses = [
        lambda X: float(np.vdot(grad_output, forward(X, Kc, Vc, mask)[0])),
        lambda X: float(np.vdot(grad_output, forward(Qc, X, Vc, mask)[0])),
        lambda X: float(np.vdot(grad_output, forward(Qc, Kc, X, mask)[0])),
    ]
    out = []
    for a, loss, X in zip(grads, losses, (Qc, Kc, Vc)):
        n = central_difference_r3(loss, X)
        out.append(np.linalg.norm(a - n) / max(np.linalg.norm(a), np.linalg.norm(n)))
    return out


# ---- R4: one-hot perturbation arrays ---------------------------------------------------------


def central_difference_r4(f, X, h=None):
    h = 2e-6 if h is None else h
    basis = np.eye(X.size).reshape((X.size,) + X.shape)
    values = [(f(X + h * e) - f(X - h * e)) / (2 * h) for e in basis]
    return np.array(values, dtype=np.float64).reshape(X.shape)


def gradient_errors_r4(forward, backward, Q, K, V, mask, grad_output):
    dQ, dK, dV = backward(grad_output, forward(Q, K, V, mask)[1])
    nQ = central_difference_r4(lambda X: np.sum(grad_output * forward(X, K, V, mask)[0]), Q)
    nK = central_difference_r4(lambda X: np.sum(grad_output * forward(Q, X, V, mask)[0]), K)
    nV = central_difference_r4(lambda X: np.sum(grad_output * forward(Q, K, X, mask)[0]), V)
    return tuple(np.linalg.norm(a - n) / np.linalg.norm(n) for a, n in ((dQ, nQ), (dK, nK), (dV, nV)))


# ---- R5: `h = h or ...`, explicit named loss functions ----------------------------------------


def central_difference_r5(f, X, h=None):
    h = h or 3e-6
    G = np.zeros(X.shape, dtype=float)
    for i in range(X.size):
        x0 = X.flat[i]
        X.flat[i] = x0 + h
        a = f(X)
        X.flat[i] = x0 - h
        b = f(X)
        X.flat[i] = x0
        G.flat[i] = (a - b) / h / 2
    return G


def gradient_errors_r5(forward, backward, Q, K, V, mask, grad_output):
    output, cache = forward(Q, K, V, mask)
    analytic = backward(grad_output, cache)
    work = {"Q": Q.copy(), "K": K.copy(), "V": V.copy()}

    def make_loss(name):
        def loss(X):
            args = dict(work)
            args[name] = X
            return float(np.sum(grad_output * forward(args["Q"], args["K"], args["V"], mask)[0]))

        return loss

    errors = []
    for name, a in zip("QKV", analytic):
        n = central_difference_r5(make_loss(name), work[name])
        errors.append(_rel(a, n))
    return errors


# ---- R6: itertools.product over the index ranges ---------------------------------------------


def central_difference_r6(f, X, h=None):
    step = 1e-6 if h is None else float(h)
    result = np.zeros(X.shape)
    for index in itertools.product(*(range(n) for n in X.shape)):
        plus = X.copy()
        plus[index] = X[index] + step
        minus = X.copy()
        minus[index] = X[index] - step
        result[index] = (f(plus) - f(minus)) / (2 * step)
    return result


def gradient_errors_r6(forward, backward, Q, K, V, mask, grad_output):
    grads = backward(grad_output, forward(Q, K, V, mask)[1])
    errs = []
    for k, arr in enumerate((Q, K, V)):
        def L(X, k=k):
            xs = [Q, K, V]
            xs[k] = X
            return math.fsum((grad_output * forward(xs[0], xs[1], xs[2], mask)[0]).ravel())

        num = central_difference_r6(L, arr)
        errs.append(float(np.linalg.norm((grads[k] - num).ravel())
                          / (np.linalg.norm(grads[k].ravel()) + np.linalg.norm(num.ravel()))))
    return errs[0], errs[1], errs[2]


# ---- R7: column-by-column list comprehension, default 1e-5 via a constant ---------------------

DEFAULT_STEP_r7 = 1e-5


def central_difference_r7(f, X, h=None):
    h = DEFAULT_STEP_r7 if h is None else h
    flat_grad = []
    for i in range(X.size):
        keep = X.flat[i]
        vals = []
        for sign in (1.0, -1.0):
            X.flat[i] = keep + sign * h
            vals.append(f(X))
        X.flat[i] = keep
        flat_grad.append((vals[0] - vals[1]) / (2.0 * h))
    return np.reshape(np.array(flat_grad, dtype=np.float64), X.shape)


def gradient_errors_r7(forward, backward, Q, K, V, mask, grad_output):
    return gradient_errors_generic(central_difference_r7, forward, backward, Q, K, V, mask, grad_output)


def gradient_errors_generic(cd, forward, backward, Q, K, V, mask, grad_output):
    """The shared gradient_errors most students wrote, parametrised by their central_difference."""
    _, cache = forward(Q, K, V, mask)
    analytic = backward(grad_output, cache)
    Qc, Kc, Vc = Q.copy(), K.copy(), V.copy()
    numeric = (
        cd(lambda X: np.sum(grad_output * forward(X, Kc, Vc, mask)[0]), Qc),
        cd(lambda X: np.sum(grad_output * forward(Qc, X, Vc, mask)[0]), Kc),
        cd(lambda X: np.sum(grad_output * forward(Qc, Kc, X, mask)[0]), Vc),
    )
    return tuple(_rel(a, n) for a, n in zip(analytic, numeric))


# =================================================================================== wrong: central_difference


def central_difference_forward_diff(f, X, h=None):
    h = 1e-6 if h is None else h
    grad = np.zeros_like(X)
    f0 = f(X)
    for i in range(X.size):
        old = X.flat[i]
        X.flat[i] = old + h
        grad.flat[i] = (f(X) - f0) / h  # one-sided
        X.flat[i] = old
    return grad


def central_difference_h_1e8(f, X, h=None):
    h = 1e-8 if h is None else h  # "smaller is more accurate"
    return central_difference_r1(f, X, h)


def central_difference_sqrt_eps(f, X, h=None):
    if h is None:
        h = math.sqrt(np.finfo(float).eps)  # the forward-difference rule of thumb, 1.5e-8
    return central_difference_r1(f, X, h)


def central_difference_h_1e2(f, X, h=None):
    return central_difference_r1(f, X, 1e-2 if h is None else h)


def central_difference_default_in_signature(f, X, h=1e-6):
    grad = np.zeros_like(X)
    for i in range(X.size):
        old = X.flat[i]
        X.flat[i] = old + h
        fp = f(X)
        X.flat[i] = old - h
        fm = f(X)
        X.flat[i] = old
        grad.flat[i] = (fp - fm) / (2 * h)
    return grad


def central_difference_ignores_h(f, X, h=None):
    eps = 1e-6
    grad = np.zeros_like(X)
    for i in range(X.size):
        old = X.flat[i]
        X.flat[i] = old + eps
        fp = f(X)
        X.flat[i] = old - eps
        fm = f(X)
        X.flat[i] = old
        grad.flat[i] = (fp - fm) / (2 * eps)
    return grad


def central_difference_restore_by_arithmetic(f, X, h=None):
    h = 1e-6 if h is None else h
    grad = np.zeros_like(X)
    for i in range(X.size):
        X.flat[i] += h
        fp = f(X)
        X.flat[i] -= 2 * h
        fm = f(X)
        X.flat[i] += h  # back to where it was (in exact arithmetic)
        grad.flat[i] = (fp - fm) / (2 * h)
    return grad


def central_difference_not_restored(f, X, h=None):
    h = 1e-6 if h is None else h
    grad = np.zeros_like(X)
    for i in range(X.size):
        old = X.flat[i]
        X.flat[i] = old + h
        fp = f(X)
        X.flat[i] = old - h
        fm = f(X)
        grad.flat[i] = (fp - fm) / (2 * h)
    return grad


def central_difference_all_at_once(f, X, h=None):
    h = 1e-6 if h is None else h
    return np.full(X.shape, (f(X + h) - f(X - h)) / (2 * h))


def central_difference_relative_step(f, X, h=None):
    h = 1e-6 if h is None else h
    grad = np.zeros_like(X)
    for i in range(X.size):
        old = X.flat[i]
        step = h * max(1.0, abs(old))  # scale the step with the entry
        X.flat[i] = old + step
        fp = f(X)
        X.flat[i] = old - step
        fm = f(X)
        X.flat[i] = old
        grad.flat[i] = (fp - fm) / (2 * step)
    return grad


def central_difference_2d_loops(f, X, h=None):
    h = 1e-6 if h is None else h
    grad = np.zeros_like(X)
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            old = X[i, j].copy()
            X[i, j] = old + h
            fp = f(X)
            X[i, j] = old - h
            fm = f(X)
            X[i, j] = old
            grad[i, j] = (fp - fm) / (2 * h)
    return grad


def central_difference_reshape_view(f, X, h=None):
    h = 1e-6 if h is None else h
    flat = X.reshape(-1)  # assumed to be a view of X
    grad = np.zeros(flat.size)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + h
        fp = f(X)
        flat[i] = old - h
        fm = f(X)
        flat[i] = old
        grad[i] = (fp - fm) / (2 * h)
    return grad.reshape(X.shape)


def central_difference_over_h(f, X, h=None):
    h = 1e-6 if h is None else h
    grad = np.zeros_like(X)
    for i in range(X.size):
        old = X.flat[i]
        X.flat[i] = old + h
        fp = f(X)
        X.flat[i] = old - h
        fm = f(X)
        X.flat[i] = old
        grad.flat[i] = (fp - fm) / h  # forgot the 2
    return grad


def central_difference_float32(f, X, h=None):
    h = 1e-6 if h is None else h
    Y = X.astype(np.float32)  # "saves memory"; X itself is never touched
    grad = np.zeros(X.shape, dtype=np.float32)
    for i in range(Y.size):
        old = Y.flat[i]
        Y.flat[i] = old + h
        fp = f(Y)
        Y.flat[i] = old - h
        fm = f(Y)
        Y.flat[i] = old
        grad.flat[i] = (fp - fm) / (2 * h)
    return grad


def central_difference_hang(f, X, h=None):
    h = 1e-6 if h is None else h
    grad = np.zeros_like(X)
    i = 0
    n = X.size
    while i < n:
        old = X.flat[i]
        X.flat[i] = old + h
        fp = f(X)
        X.flat[i] = old - h
        fm = f(X)
        X.flat[i] = old
        grad.flat[i] = (fp - fm) / (2 * h)
    i += 1  # meant to be inside the loop
    return grad


def _trivial_loss(X):
    return 0.0


# =================================================================================== wrong: gradient_errors


def gradient_errors_ignores_G(forward, backward, Q, K, V, mask, grad_output):
    _, cache = forward(Q, K, V, mask)
    analytic = backward(grad_output, cache)
    Qc, Kc, Vc = Q.copy(), K.copy(), V.copy()
    numeric = (
        central_difference_r1(lambda X: np.sum(forward(X, Kc, Vc, mask)[0]), Qc),  # L = sum(O)
        central_difference_r1(lambda X: np.sum(forward(Qc, X, Vc, mask)[0]), Kc),
        central_difference_r1(lambda X: np.sum(forward(Qc, Kc, X, mask)[0]), Vc),
    )
    return tuple(_rel(a, n) for a, n in zip(analytic, numeric))


def gradient_errors_absolute(forward, backward, Q, K, V, mask, grad_output):
    _, cache = forward(Q, K, V, mask)
    analytic = backward(grad_output, cache)
    Qc, Kc, Vc = Q.copy(), K.copy(), V.copy()
    numeric = (
        central_difference_r1(lambda X: np.sum(grad_output * forward(X, Kc, Vc, mask)[0]), Qc),
        central_difference_r1(lambda X: np.sum(grad_output * forward(Qc, X, Vc, mask)[0]), Kc),
        central_difference_r1(lambda X: np.sum(grad_output * forward(Qc, Kc, X, mask)[0]), Vc),
    )
    return tuple(float(np.max(np.abs(a - n))) for a, n in zip(analytic, numeric))


def gradient_errors_elementwise(forward, backward, Q, K, V, mask, grad_output):
    _, cache = forward(Q, K, V, mask)
    analytic = backward(grad_output, cache)
    Qc, Kc, Vc = Q.copy(), K.copy(), V.copy()
    numeric = (
        central_difference_r1(lambda X: np.sum(grad_output * forward(X, Kc, Vc, mask)[0]), Qc),
        central_difference_r1(lambda X: np.sum(grad_output * forward(Qc, X, Vc, mask)[0]), Kc),
        central_difference_r1(lambda X: np.sum(grad_output * forward(Qc, Kc, X, mask)[0]), Vc),
    )
    with np.errstate(all="ignore"):
        return tuple(float(np.max(np.abs(a - n) / (np.abs(a) + np.abs(n)))) for a, n in zip(analytic, numeric))


def gradient_errors_late_binding(forward, backward, Q, K, V, mask, grad_output):
    _, cache = forward(Q, K, V, mask)
    analytic = backward(grad_output, cache)
    arrays = [Q.copy(), K.copy(), V.copy()]
    losses = []
    for i in range(3):
        def loss(X):
            args = list(arrays)
            args[i] = X  # i is looked up when loss runs: always 2 by then
            return np.sum(grad_output * forward(*args, mask)[0])

        losses.append(loss)
    return tuple(_rel(a, central_difference_r1(L, X)) for a, L, X in zip(analytic, losses, arrays))


def gradient_errors_no_mask(forward, backward, Q, K, V, mask, grad_output):
    _, cache = forward(Q, K, V, mask)
    analytic = backward(grad_output, cache)
    Qc, Kc, Vc = Q.copy(), K.copy(), V.copy()
    numeric = (
        central_difference_r1(lambda X: np.sum(grad_output * forward(X, Kc, Vc)[0]), Qc),
        central_difference_r1(lambda X: np.sum(grad_output * forward(Qc, X, Vc)[0]), Kc),
        central_difference_r1(lambda X: np.sum(grad_output * forward(Qc, Kc, X)[0]), Vc),
    )
    return tuple(_rel(a, n) for a, n in zip(analytic, numeric))


def gradient_errors_reversed(forward, backward, Q, K, V, mask, grad_output):
    errs = gradient_errors_generic(central_difference_r1, forward, backward, Q, K, V, mask, grad_output)
    return errs[2], errs[1], errs[0]  # listed as V, K, Q


def gradient_errors_whole_tuple(forward, backward, Q, K, V, mask, grad_output):
    cache = forward(Q, K, V, mask)  # (output, cache), passed on whole
    analytic = backward(grad_output, cache)
    Qc, Kc, Vc = Q.copy(), K.copy(), V.copy()
    numeric = (
        central_difference_r1(lambda X: np.sum(grad_output * forward(X, Kc, Vc, mask)[0]), Qc),
        central_difference_r1(lambda X: np.sum(grad_output * forward(Qc, X, Vc, mask)[0]), Kc),
        central_difference_r1(lambda X: np.sum(grad_output * forward(Qc, Kc, X, mask)[0]), Vc),
    )
    return tuple(_rel(a, n) for a, n in zip(analytic, numeric))


def gradient_errors_ones(forward, backward, Q, K, V, mask, grad_output):
    _, cache = forward(Q, K, V, mask)
    analytic = backward(np.ones_like(grad_output), cache)  # "dL/dO for L = sum(O)"
    Qc, Kc, Vc = Q.copy(), K.copy(), V.copy()
    numeric = (
        central_difference_r1(lambda X: np.sum(grad_output * forward(X, Kc, Vc, mask)[0]), Qc),
        central_difference_r1(lambda X: np.sum(grad_output * forward(Qc, X, Vc, mask)[0]), Kc),
        central_difference_r1(lambda X: np.sum(grad_output * forward(Qc, Kc, X, mask)[0]), Vc),
    )
    return tuple(_rel(a, n) for a, n in zip(analytic, numeric))


def gradient_errors_one_sided(forward, backward, Q, K, V, mask, grad_output):
    _, cache = forward(Q, K, V, mask)
    analytic = backward(grad_output, cache)
    errs = []
    h = 1e-4
    base = float(np.sum(grad_output * forward(Q, K, V, mask)[0]))
    for k, (a, X) in enumerate(zip(analytic, (Q, K, V))):
        num = np.zeros_like(X)
        for i in range(X.size):
            Y = X.copy()
            Y.flat[i] += h
            args = [Q, K, V]
            args[k] = Y
            num.flat[i] = (float(np.sum(grad_output * forward(*args, mask)[0])) - base) / h
        errs.append(_rel(a, num))
    return tuple(errs)


def gradient_errors_causal_only(forward, backward, Q, K, V, mask, grad_output):
    T_q, T_k = Q.shape[-2], K.shape[-2]
    mask = np.tril(np.ones((T_q, T_k), dtype=bool))  # the exercise is about causal attention
    return gradient_errors_generic(central_difference_r1, forward, backward, Q, K, V, mask, grad_output)


def gradient_errors_allclose(forward, backward, Q, K, V, mask, grad_output):
    _, cache = forward(Q, K, V, mask)
    analytic = backward(grad_output, cache)
    Qc, Kc, Vc = Q.copy(), K.copy(), V.copy()
    numeric = (
        central_difference_r1(lambda X: np.sum(grad_output * forward(X, Kc, Vc, mask)[0]), Qc),
        central_difference_r1(lambda X: np.sum(grad_output * forward(Qc, X, Vc, mask)[0]), Kc),
        central_difference_r1(lambda X: np.sum(grad_output * forward(Qc, Kc, X, mask)[0]), Vc),
    )
    return tuple(np.allclose(a, n, rtol=1e-6) for a, n in zip(analytic, numeric))


# =================================================================================== witnesses


def _cd(cd, ge=gradient_errors_r1):
    return (cd, ge)


def _ge(ge, cd=central_difference_r1):
    return (cd, ge)


RESTORE_X = [("entries near 0.1 .. 10", np.array([0.1, 0.7, 1.3, 3.3, 9.1, 0.3]), ref._f_trig)]


def _witness_hang():
    return ref.never_returns(
        "attempts_19_4c", "central_difference_hang", "(__import__('attempts_19_4c')._trivial_loss, np.ones(3))",
        control="central_difference_r1",
    )


ATTEMPTS = [
    # ------------------------------------------------------------------------------ right
    Attempt("19.4c-001", "19.4c", "right",
            "X.flat loop saving and restoring each entry, default h=1e-6; relative error ||a-n||/(||a||+||n||) on copies of Q, K, V.",
            (central_difference_r1, gradient_errors_r1)),
    Attempt("19.4c-002", "19.4c", "right",
            "np.ndindex with perturbed copies (X untouched), default h=1e-5; a relative error in L1 norms.",
            (central_difference_r2, gradient_errors_r2)),
    Attempt("19.4c-003", "19.4c", "right",
            "np.nditer readwrite with restore, default h = cbrt(eps) ~ 6e-6; error ||a-n||/max(||a||, ||n||) via np.vdot losses.",
            (central_difference_r3, gradient_errors_r3)),
    Attempt("19.4c-004", "19.4c", "right",
            "One-hot basis arrays X +- h e_i as new arrays, default h=2e-6; relative error ||a-n||/||n||.",
            (central_difference_r4, gradient_errors_r4)),
    Attempt("19.4c-005", "19.4c", "right",
            "`h = h or 3e-6`, divides by h then 2; losses built by a factory function (no late binding), errors returned as a list.",
            (central_difference_r5, gradient_errors_r5)),
    Attempt("19.4c-006", "19.4c", "right",
            "itertools.product over index ranges on copies, default 1e-6; loss summed with math.fsum.",
            (central_difference_r6, gradient_errors_r6)),
    Attempt("19.4c-007", "19.4c", "right",
            "Loops over the two signs per entry and restores the saved value, default 1e-5 from a module constant.",
            (central_difference_r7, gradient_errors_r7)),
    # ------------------------------------------------------------------------------ wrong: central_difference
    Attempt("19.4c-008", "19.4c", "wrong", "One-sided difference (f(X+h e_i) - f(X))/h instead of central.",
            _cd(central_difference_forward_diff), lambda: ref.witness_cd(_cd(central_difference_forward_diff))),
    Attempt("19.4c-009", "19.4c", "wrong", "Default step 1e-8, below the allowed 1e-7 ('smaller is more accurate').",
            _cd(central_difference_h_1e8), lambda: ref.witness_cd(_cd(central_difference_h_1e8), steps=(1e-5, None))),
    Attempt("19.4c-010", "19.4c", "wrong",
            "Default step sqrt(eps) = 1.5e-8, the one-sided rule of thumb: outside [1e-7, 1e-3].",
            _cd(central_difference_sqrt_eps), lambda: ref.witness_cd(_cd(central_difference_sqrt_eps), steps=("omit",))),
    Attempt("19.4c-011", "19.4c", "wrong", "Default step 1e-2, above the allowed 1e-3.",
            _cd(central_difference_h_1e2), lambda: ref.witness_cd(_cd(central_difference_h_1e2), steps=(1e-4, "omit"))),
    Attempt("19.4c-012", "19.4c", "wrong",
            "Default written into the signature (h=1e-6): an explicit h=None reaches the arithmetic and raises.",
            _cd(central_difference_default_in_signature),
            lambda: ref.witness_cd(_cd(central_difference_default_in_signature), steps=("omit", None))),
    Attempt("19.4c-013", "19.4c", "wrong", "Ignores the h it is given and always steps by 1e-6.",
            _cd(central_difference_ignores_h),
            lambda: ref.witness_cd(_cd(central_difference_ignores_h), steps=("omit", None, 1e-4))),
    Attempt("19.4c-014", "19.4c", "wrong",
            "Puts entries back by arithmetic (+h, -2h, +h), which does not restore X exactly in floating point.",
            _cd(central_difference_restore_by_arithmetic),
            lambda: ref.witness_cd(_cd(central_difference_restore_by_arithmetic), steps=(1e-6,), inputs=RESTORE_X)),
    Attempt("19.4c-015", "19.4c", "wrong", "Never puts the entry back: X comes back moved by -h everywhere.",
            _cd(central_difference_not_restored), lambda: ref.witness_cd(_cd(central_difference_not_restored))),
    Attempt("19.4c-016", "19.4c", "wrong",
            "Moves all entries at once (X + h): a directional derivative copied into every entry.",
            _cd(central_difference_all_at_once), lambda: ref.witness_cd(_cd(central_difference_all_at_once))),
    Attempt("19.4c-017", "19.4c", "wrong", "Scales the step with the entry (h * max(1, |x|)): entries are not moved by h.",
            _cd(central_difference_relative_step), lambda: ref.witness_cd(_cd(central_difference_relative_step))),
    Attempt("19.4c-018", "19.4c", "wrong",
            "Double loop over X.shape[0] and X.shape[1]: right for 2-D X, fails for 1-D and moves whole rows of 3-D X.",
            _cd(central_difference_2d_loops), lambda: ref.witness_cd(_cd(central_difference_2d_loops))),
    Attempt("19.4c-019", "19.4c", "wrong",
            "Perturbs X.reshape(-1) assuming it is a view: for a non-contiguous X it is a copy and every gradient is 0.",
            _cd(central_difference_reshape_view), lambda: ref.witness_cd(_cd(central_difference_reshape_view))),
    Attempt("19.4c-020", "19.4c", "wrong", "Divides the central difference by h instead of 2h.",
            _cd(central_difference_over_h), lambda: ref.witness_cd(_cd(central_difference_over_h))),
    Attempt("19.4c-021", "19.4c", "wrong",
            "Works on a float32 copy of X: x + 1e-6 rounds in float32 and the quotient is garbage.",
            _cd(central_difference_float32), lambda: ref.witness_cd(_cd(central_difference_float32))),
    Attempt("19.4c-022", "19.4c", "wrong", "while loop with `i += 1` dedented out of it: never returns.",
            _cd(central_difference_hang), _witness_hang),
    # ------------------------------------------------------------------------------ wrong: gradient_errors
    Attempt("19.4c-023", "19.4c", "wrong",
            "Loss L = sum(O) instead of sum(G * O): a correct backward is reported wrong (unless G is all ones).",
            _ge(gradient_errors_ignores_G), lambda: ref.witness_ge(_ge(gradient_errors_ignores_G), ["causal5"])),
    Attempt("19.4c-024", "19.4c", "wrong",
            "Absolute error max|a - n|: changes with the scale of the loss, a correct backward fails at large G.",
            _ge(gradient_errors_absolute), lambda: ref.witness_ge(_ge(gradient_errors_absolute), ["causal5"])),
    Attempt("19.4c-025", "19.4c", "wrong",
            "Entrywise relative error max|a-n|/(|a|+|n|): NaN or ~1 where both gradients are (near) zero.",
            _ge(gradient_errors_elementwise), lambda: ref.witness_ge(_ge(gradient_errors_elementwise), ["causal5"])),
    Attempt("19.4c-026", "19.4c", "wrong",
            "Loss closures defined in a loop capture i late: all three numerical gradients are taken with respect to V.",
            _ge(gradient_errors_late_binding), lambda: ref.witness_ge(_ge(gradient_errors_late_binding), ["causal5"])),
    Attempt("19.4c-027", "19.4c", "wrong",
            "Calls forward without the mask in the losses: right only when mask is None.",
            _ge(gradient_errors_no_mask), lambda: ref.witness_ge(_ge(gradient_errors_no_mask), ["none", "causal5"])),
    Attempt("19.4c-028", "19.4c", "wrong", "Returns the errors in the order (V, K, Q).",
            _ge(gradient_errors_reversed), lambda: ref.witness_ge(_ge(gradient_errors_reversed), ["causal5"])),
    Attempt("19.4c-029", "19.4c", "wrong",
            "Passes forward's whole (output, cache) tuple to backward as the cache.",
            _ge(gradient_errors_whole_tuple), lambda: ref.witness_ge(_ge(gradient_errors_whole_tuple), ["causal5"])),
    Attempt("19.4c-030", "19.4c", "wrong",
            "Calls backward with ones instead of grad_output: right only for G = 1.",
            _ge(gradient_errors_ones), lambda: ref.witness_ge(_ge(gradient_errors_ones), ["causal5"])),
    Attempt("19.4c-031", "19.4c", "wrong",
            "Its own one-sided differences with h = 1e-4 instead of central_difference: a correct backward shows errors ~1e-5.",
            _ge(gradient_errors_one_sided), lambda: ref.witness_ge(_ge(gradient_errors_one_sided), ["causal5", "rect"])),
    Attempt("19.4c-032", "19.4c", "wrong",
            "Replaces the given mask by a causal one: right for causal masks only.",
            _ge(gradient_errors_causal_only),
            lambda: ref.witness_ge(_ge(gradient_errors_causal_only), ["causal5", "padding"])),
    Attempt("19.4c-033", "19.4c", "wrong", "Returns np.allclose booleans instead of relative errors.",
            _ge(gradient_errors_allclose), lambda: ref.witness_ge(_ge(gradient_errors_allclose), ["causal5"])),
]

"""Prove the label of every attempt: `python verify.py` (exit status 0 when every proof holds).

Right attempts run the reference battery of their exercise (reference.right_*); wrong attempts run
their witness, which must find an input the statement allows where the answer breaks it.
Statistical witnesses (19.2) state their test and significance level in the line they print.
"""

import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import reference as ref  # noqa: E402
import attempts_19_1  # noqa: E402
import attempts_19_2  # noqa: E402
import attempts_19_3  # noqa: E402
import attempts_19_4  # noqa: E402
import attempts_19_4c  # noqa: E402

ALL = [
    *attempts_19_1.ATTEMPTS,
    *attempts_19_2.ATTEMPTS,
    *attempts_19_3.ATTEMPTS,
    *attempts_19_4.ATTEMPTS,
    *attempts_19_4c.ATTEMPTS,
]

RIGHT = {
    "19.1": ref.right_19_1,
    "19.2": ref.right_19_2,
    "19.3": ref.right_19_3,
    "19.4": ref.right_19_4,
    "19.4c": ref.right_19_4c,
}


def sanity_of_reference():
    """The reference itself: backward against central differences, 19.3 against an explicit Jacobian."""
    worst = 0.0
    for kind in ("causal5", "rect", "heads", "padding", "empty_row", "none", "dk1", "three_lead"):
        c = ref.make_case_19_4(kind, seed=9)
        out, cache = ref.attn_forward_ref(c["Q"], c["K"], c["V"], c["mask"])
        grads = ref.attn_backward_ref(c["G"], cache)
        for i in range(3):
            def loss(X, i=i):
                args = [c["Q"], c["K"], c["V"]]
                args[i] = X
                return float(np.sum(c["G"] * ref.attn_forward_ref(*args, c["mask"])[0]))

            err = ref.rel_err(grads[i], ref.central_difference_ref(loss, [c["Q"], c["K"], c["V"]][i]))
            worst = max(worst, err)
    assert worst < 1e-7, f"reference backward disagrees with finite differences: {worst:.2e}"
    w, g = ref.case_19_3((4, 6), seed=1)
    J = np.einsum("ri,ij->rij", w, np.eye(6)) - w[:, :, None] * w[:, None, :]
    assert np.allclose(np.einsum("rij,ri->rj", J, g), ref.softmax_backward_ref(w, g), atol=1e-15)
    v = ref.reference_variance(16, 20_000, 1)
    assert abs(v - 16) < 4.5 * ref.variance_se(16, 20_000)
    return f"reference backward vs central differences: worst relative error {worst:.1e}"


def main():
    start = time.time()
    ids = [a.id for a in ALL]
    assert len(ids) == len(set(ids)), "duplicate attempt ids"
    for a in ALL:
        assert a.exercise in RIGHT, a.id
        assert a.label in ("right", "wrong"), a.id
        assert (a.witness is None) == (a.label == "right"), f"{a.id}: witness iff wrong"
        assert a.meant, a.id
    print(sanity_of_reference())
    print(f"{'id':<11} {'label':<6} {'proof':<6} {'time':>6}  what was shown")
    failures = 0
    counts = {}
    for a in ALL:
        t = time.time()
        try:
            if a.label == "right":
                msg = RIGHT[a.exercise](a.answer)
            else:
                msg = a.witness()
                assert isinstance(msg, str) and msg, "witness returned no description"
            status = "ok"
        except AssertionError as exc:
            status, msg = "FAILED", f"AssertionError: {exc}"
            failures += 1
        except Exception as exc:  # noqa: BLE001
            status, msg = "FAILED", f"{type(exc).__name__}: {exc}"
            failures += 1
        counts[(a.exercise, a.label)] = counts.get((a.exercise, a.label), 0) + 1
        print(f"{a.id:<11} {a.label:<6} {status:<6} {time.time() - t:5.2f}s  {msg[:200]}")
    print()
    for ex in RIGHT:
        print(f"{ex:<6} right {counts.get((ex, 'right'), 0):3d}   wrong {counts.get((ex, 'wrong'), 0):3d}")
    print(f"total {len(ALL)} attempts, {failures} proofs failed, {time.time() - start:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

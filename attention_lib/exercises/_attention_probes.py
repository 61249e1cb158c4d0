"""The probes of exercise 19.4: attention inputs generated to reach every value the statement
leaves free, with the right output and gradients of each.

19.4 (a)'s ``forward`` and ``backward`` run on ``PROBES``,
fixed and seeded, generated to reach every value of ``AXES``, the axes the
statement leaves free (tests/test_exercise_harness.py checks that each is reached):

=================  ===================================================================
axis               values the probes cover
=================  ===================================================================
leading axes       none; one (1, 2, 3); two (2 x 1, 2 x 2, 2 x 3, 3 x 2)
T_q, T_k           1 to 8 each; T_q = T_k, T_q < T_k and T_q > T_k
d_k, d_v           1 to 64 each (1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 64), d_k = d_v and not
mask               left out (``forward(Q, K, V)``), None, causal (T_q, T_k) (query i reads
                   keys 0..i), a row with no readable key, one readable key per row, all
                   True, a pattern (T_q, T_k), padding (B, 1, T_k) and (B, 1, 1, T_k), one
                   per example (B, T_q, T_k), one per example shared by the heads
                   (B, 1, T_q, T_k)
dtype              float64, float32
scores             ordinary (standard normal), tiny (about 0.001), about 850, about -900,
                   a row at 700 and the others at -80, a blocked score 800 above the
                   readable ones, 800 and 799 with the rest at -800
output gradient    on every query; on queries 0 and 1 only
calls              many in a row with other shapes; three forwards (two of one shape),
                   then backward on the first cache
=================  ===================================================================

19.4 (c) builds its attention problems from the same ``Spec``. Each probe's right
output and gradients come from the library, in float64 from the probe's inputs;
the first probe's gradients are central differences themselves.
"""

from __future__ import annotations

import functools
import math
import zlib
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

from ..attention import attention_backward, attention_forward, attention_scores, masked_softmax
from ..gradcheck import numerical_gradient
from ..masks import causal_mask, padding_mask
from .softmax_row import softmax_backward_of

# Extreme scores, by their name in AXES, and in words
EXTREME = {
    "about 850": "scores of about 850",
    "about -900": "every readable score at about -900",
    "800 and -800": "each row's scores at 800, 799 and -800",
    "rows 780 apart": "row 0's scores at 700 and the others' at about -80",
    "blocked 800 above": "a blocked score about 800 above the readable ones",
}


class Spec(NamedTuple):
    """One probe, in the words of ``AXES``; its numbers are seeded from the spec itself."""

    lead: tuple
    T_q: int
    T_k: int
    d_k: int
    d_v: int
    mask: str = "causal"
    scores: str = "ordinary"
    dtype: str = "float64"
    grad: str = "every query"


MAIN = Spec((), 5, 5, 4, 3)
PROBES = (
    MAIN,
    MAIN._replace(grad="queries 0 and 1"),
    *(MAIN._replace(scores=scores) for scores in EXTREME),
    MAIN._replace(mask="empty row"),
    Spec((), 3, 6, 4, 3),
    Spec((), 6, 2, 4, 3),
    Spec((2,), 5, 5, 4, 3, "padding"),
    Spec((2, 2), 5, 5, 4, 3),
    MAIN._replace(mask="None"),
    MAIN._replace(mask="omitted"),
    MAIN._replace(dtype="float32"),
    MAIN._replace(mask="empty row", dtype="float32"),
    *(MAIN._replace(d_k=k, d_v=v) for k, v in ((1, 1), (3, 7), (7, 8), (16, 16), (64, 64))),
    Spec((), 1, 1, 2, 5),
    Spec((), 1, 8, 6, 9, "every key"),
    Spec((), 8, 1, 9, 6),
    *(MAIN._replace(mask=mask) for mask in ("one key", "every key", "pattern")),
    MAIN._replace(scores="tiny"),
    Spec((3,), 4, 4, 5, 2, "per example"),
    Spec((2, 3), 4, 6, 7, 5, "padding"),
    Spec((3, 2), 2, 5, 8, 4, "shared by heads"),
    Spec((1,), 1, 3, 6, 2, "padding"),
    Spec((2, 1), 3, 3, 9, 9, "None"),
    Spec((3,), 4, 4, 16, 1, "omitted"),
    Spec((), 7, 3, 64, 4, "None"),
    Spec((2,), 4, 7, 5, 6, "padding", "about 850"),
    Spec((2, 2), 3, 4, 2, 16, "causal", "about -900"),
    Spec((2, 2), 3, 4, 5, 6, "padding", dtype="float32"),
    Spec((), 6, 6, 3, 64, "pattern", "tiny", "float32"),
)
AXES = {
    "leading axes": ((), (1,), (2,), (3,), (2, 1), (2, 2), (2, 3), (3, 2)),
    "T_q": (1, 2, 3, 4, 5, 6, 7, 8),
    "T_k": (1, 2, 3, 4, 5, 6, 7, 8),
    "d_k": (1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 64),
    "d_v": (1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 64),
    "mask": ("omitted", "None", "causal", "empty row", "one key", "every key", "pattern")
    + ("padding", "per example", "shared by heads"),
    "dtype": ("float64", "float32"),
    "scores": ("ordinary", "tiny", *EXTREME),
    "output gradient": ("every query", "queries 0 and 1"),
}
# Forwards on these, then backward on the first cache: the second has the first's shape
# and other numbers (a buffer kept per shape would be overwritten), the third another shape.
CACHE_PROBES = (Spec((), 3, 6, 4, 3), Spec((), 3, 6, 4, 3, "every key"), PROBES[-6])


def _mask(spec, rng):
    """The mask a spec names, boolean, or None."""
    lead, T_q, T_k = spec.lead, spec.T_q, spec.T_k
    if spec.mask in ("None", "omitted"):
        return None
    if spec.mask == "padding":  # each example 2 keys fewer than the one before (at least 1)
        valid = np.maximum(1, T_k - 2 * np.arange(lead[0]) - (lead[0] == 1))
        return padding_mask(np.arange(T_k) < valid[:, None], heads=len(lead) == 2)
    if spec.mask in ("per example", "shared by heads", "pattern"):
        shape = {"per example": lead, "shared by heads": lead[:1] + (1,)}.get(spec.mask, ())
        mask = rng.random((*shape, T_q, T_k)) < 0.7
        mask[(-1,) * len(shape) + (0,)] = False  # the last example's first query reads nothing
        return mask
    mask = {
        "one key": np.arange(T_k) == (2 * np.arange(T_q)[:, None] + 1) % T_k,
        "every key": np.ones((T_q, T_k), dtype=bool),
    }.get(spec.mask, causal_mask(T_q, T_k))
    if spec.mask == "empty row":
        mask[min(2, T_q - 1)] = False
    return mask


def inputs(spec):
    """Q, K, V, mask and the output gradient of ``spec``, in its dtype."""
    rng = np.random.default_rng(zlib.crc32(repr(spec).encode()))
    lead, root = spec.lead, math.sqrt(spec.d_k)  # scores below are after the scale
    Q, K = (rng.standard_normal((*lead, T, spec.d_k)) for T in (spec.T_q, spec.T_k))
    V = rng.standard_normal((*lead, spec.T_k, spec.d_v))
    grad_output = rng.standard_normal((*lead, spec.T_q, spec.d_v))
    if spec.scores == "tiny":
        Q *= 1e-3
    elif spec.scores in ("about 850", "about -900", "800 and -800"):
        Q[..., 0], K[..., 0], Q[..., 1:] = (
            (-900 if "-9" in spec.scores else 850) * root,
            1,
            Q[..., 1:] / 100,
        )
        if spec.scores == "800 and -800":  # two keys on top, the rest 1600 below: no subnormals
            Q[..., 0], K[..., 1, 0], K[..., 2:, 0] = 800 * root, 799 / 800, -1
    elif spec.scores == "rows 780 apart":  # row 0 reads key 0 alone: exactly 700
        Q[..., 0, :], Q[..., 1:, 0], K[..., 0] = 0, -80 * root, 1
        Q[..., 0, 0] = 700 * root
    elif spec.scores == "blocked 800 above":  # the last key, blocked for all but the last query
        Q[..., 0], K[..., 0], Q[..., -1, 0], K[..., -1, 0] = 1, 0, 0, 800 * root
    if spec.grad == "queries 0 and 1":
        grad_output[..., 2:, :] = 0
    mask = _mask(spec, rng)
    return (*(a.astype(spec.dtype) for a in (Q, K, V)), mask, grad_output.astype(spec.dtype))


class Probe:
    """One probe's inputs, the right output and gradients, and what the models need."""

    def __init__(self, spec):
        self.spec = spec
        self.Q, self.K, self.V, self.mask, self.grad_output = inputs(spec)
        self.label = label(spec, self.Q, self.K, self.V, self.mask)
        Q, K, V, G = (a.astype(np.float64) for a in (self.Q, self.K, self.V, self.grad_output))
        self.output, cache = attention_forward(Q, K, V, self.mask, return_cache=True)
        self.grads = self.analytic = attention_backward(G, cache)
        if spec == MAIN:  # the first probe's truth: central differences themselves
            arrays = {"Q": Q, "K": K, "V": V}

            def loss(**arrays):
                return float(np.sum(G * attention_forward(**arrays, mask=self.mask)))

            self.grads = tuple(numerical_gradient(loss, arrays, name) for name in arrays)
        self.Q64, self.K64, self.V64, self.G64, self.weights = Q, K, V, G, cache.weights
        self.raw = attention_scores(Q, K, scaled=False)
        self.allowed = np.broadcast_to(True if self.mask is None else self.mask, self.raw.shape)
        self.scaled = self.raw / math.sqrt(spec.d_k)
        self.step = SimpleNamespace(weights=self.weights, grad_weights=G @ np.swapaxes(V, -1, -2))
        self.grad_scores, self.root = (
            softmax_backward_of(self.step),
            math.sqrt(spec.d_k),
        )
        self.extreme, self.square = spec.scores in EXTREME, spec.T_q == spec.T_k
        self.where = f"{self.label[0].upper()}{self.label[1:]}:"

    def attend(self, scores, mask=None):
        mask = self.allowed if mask is None else np.broadcast_to(mask, scores.shape)
        return masked_softmax(scores, mask) @ self.V64

    def through(self, grad_scores, scale_Q=1.0, scale_K=1.0):
        """The gradients a ``grad_scores`` gives, the rest of backward right."""
        grad_K = np.swapaxes(grad_scores, -1, -2) @ self.Q64 * scale_K / self.root
        return grad_scores @ self.K64 * scale_Q / self.root, grad_K, self.grads[2]

    def own_masks(self):
        """The causal masks a student may build instead of the one given."""
        T_q, T_k = self.spec.T_q, self.spec.T_k
        own = [causal_mask(T_q, T_k), np.tril(np.ones((T_q, T_k), dtype=bool), T_k - T_q)]
        return own if self.mask is None else [*own, own[0] & self.mask]


@functools.cache
def probe(spec):
    """The probe of ``spec``, computed once (the checker hands out copies)."""
    return Probe(spec)


def label(spec, Q, K, V, mask):
    """'with Q (..), K (..), V (..), <the mask>, <what is special>', for the messages."""
    shape, T_k = np.shape(mask), f", {spec.T_k}" * (spec.T_q != spec.T_k)
    words = [f"Q {Q.shape}, K {K.shape}, V {V.shape}"]
    words += [
        {
            "causal": f"mask=causal_mask({spec.T_q}{T_k})",
            "None": "mask=None",
            "omitted": "no mask argument, forward(Q, K, V)",
            "empty row": f"a mask whose row {min(2, spec.T_q - 1)} is all False",
            "padding": f"a padding mask of shape {shape}",
            "per example": f"a mask of shape {shape}, one per example",
            "shared by heads": f"a mask of shape {shape}, shared by the heads",
            "one key": f"a mask of shape {shape} that lets each query read one key",
            "every key": f"a mask of shape {shape}, all True",
        }.get(spec.mask, f"a mask of shape {shape}")
    ]
    words += [EXTREME.get(spec.scores, "scores of about 0.001")] * (spec.scores != "ordinary")
    words += ["float32 inputs"] * (spec.dtype == "float32")
    words += ["an output gradient on queries 0 and 1 only"] * (spec.grad != "every query")
    return "with " + ", ".join(words)

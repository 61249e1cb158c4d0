"""Checkers for the chapter's exercises 19.1-19.4 that name the mistake.

Each checker takes the student's answer (a dict of choices, or the functions
the exercise asks for), runs it on fixed, seeded probes and returns an
:class:`ExerciseReport`: ``.passed``, a list of :class:`Finding` (each with a
diagnosis name, what is wrong and why, and where to read about it), named
notes that do not fail the answer, and a plain-text display for the notebook.
A checker never lets the student's exception escape: it reports the exception
with the lines of the student's code that raised it. An untouched scaffold
(``raise NotImplementedError()``) is reported as "not attempted yet", naming
the function that raised. No array a checker hands to the student may change,
nor NumPy's global random state.

How a mistake is named: the checker computes the right answer from the
library (:func:`attention_lib.attention_forward`, ``attention_backward``,
``softmax_backward``, central finite differences from
:func:`attention_lib.numerical_gradient`) and, when the student's answer
differs, the answers that each typical mistake would give on the same probe:
the library's result with one step changed, several from
:mod:`attention_lib.pitfalls`. A mistake is named when the student's answer
matches its model within the same tolerance a right answer must meet. A ✓
line says only what was checked. Printed numbers are rounded to what the
verdict needs, so a report reads the same on every machine.

Tolerances, relative and norm-wise (:func:`attention_lib.relative_error`):

* ``1e-6`` for float64 answers: central differences with a step of ``1e-6``
  agree with an exact float64 gradient to about ``1e-9``;
* ``1e-4`` for float32 answers: about 800 times float32's machine epsilon
  (``1.2e-7``), room for the rounding of a few products and a row sum, and
  still two orders of magnitude below the smallest error any listed mistake
  makes on the probes (tests/test_exercises.py measures it). A float64 input
  answered in float32 passes at this tolerance, with a note on the lost digits;
* an answer right to a few digits only (float16 on the way) is named as such;
* 19.2 derives its tolerances from the Monte Carlo standard error, so that a
  right estimator fails with probability below 1e-4 (:mod:`.score_variance`).

One module per exercise: :mod:`.soft_lookup` (19.1), :mod:`.score_variance`
(19.2), :mod:`.softmax_row` (19.3), :mod:`.masked_attention` (19.4 (a)) and
:mod:`.finite_differences` (19.4 (c)); ``_harness`` runs the student's code
(each call on a thread of its own, stopped after 10 s of CPU time), ``_report``
holds what a checker returns. Each code checker's module docstring has the
table of what its probes cover; docs/teaching.md gathers them.

The catalogue of diagnoses is data: ``DIAGNOSES`` holds one
:class:`Diagnosis` per name a checker can give (its exercise and part, a title
in plain words, the hint it gives, and whether it is a note), gathered from each
checker's table of mistakes; ``GENERIC_DIAGNOSES`` are the names that say only
"wrong" (no mistake named, no relation found), the last resort.
"""

from . import finite_differences, masked_attention, score_variance, soft_lookup, softmax_row
from ._harness import GENERIC_DIAGNOSES
from ._report import Diagnosis, ExerciseReport, Finding
from .finite_differences import check_exercise_19_4c
from .masked_attention import check_exercise_19_4
from .score_variance import check_exercise_19_2
from .soft_lookup import (
    EQUAL_SCORES_CHOICES,
    ROLE_CHOICES,
    VALUES_DOUBLED_CHOICES,
    check_exercise_19_1,
)
from .softmax_row import check_exercise_19_3

DIAGNOSES = tuple(
    diagnosis
    for module in (soft_lookup, score_variance, softmax_row, masked_attention, finite_differences)
    for diagnosis in module.MISTAKES.diagnoses()
)

__all__ = [
    "DIAGNOSES",
    "EQUAL_SCORES_CHOICES",
    "GENERIC_DIAGNOSES",
    "ROLE_CHOICES",
    "VALUES_DOUBLED_CHOICES",
    "Diagnosis",
    "ExerciseReport",
    "Finding",
    "check_exercise_19_1",
    "check_exercise_19_2",
    "check_exercise_19_3",
    "check_exercise_19_4",
    "check_exercise_19_4c",
]

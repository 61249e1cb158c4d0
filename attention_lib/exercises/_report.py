"""What a checker returns: findings with fixed names, and a report that reads as plain text."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import NamedTuple

WIDTH = 88  # characters per line of a report
_CODE_SPAN = re.compile(r"`[^`]*`")


class Finding(NamedTuple):
    """One thing a checker found wrong, or one note about a passing answer.

    ``diagnosis`` is a short fixed name (for example ``"no_scaling"``) that
    tests and graders can rely on; ``message`` says what is wrong and why;
    ``hint`` says where the chapter and the series explain it.

    Examples
    --------
    >>> Finding("no_scaling", "the scores are not scaled").diagnosis
    'no_scaling'
    """

    diagnosis: str
    message: str
    hint: str = ""


class Diagnosis(NamedTuple):
    """One entry of the catalogue of diagnoses: where a name is given, in plain words.

    ``exercise`` and ``part`` say which checker gives it (``"19.4"``, ``"a"``);
    ``title`` says the mistake in a few words, for a board or a table;
    ``hint`` is where the checker sends the student to read; ``note`` marks a
    remark that does not fail the answer.

    Examples
    --------
    >>> Diagnosis("19.3", "b", "row_term_sign", "the row term added, not subtracted").part
    'b'
    """

    exercise: str
    part: str
    name: str
    title: str
    hint: str = ""
    note: bool = False


@dataclass(frozen=True)
class ExerciseReport:
    """What a checker found: ``.passed``, ``.findings`` and a readable display.

    ``attempted`` is False when the answer is still the untouched scaffold
    (then the one finding, ``not_attempted``, says which part); ``checked``
    lists what a passing answer was checked against, one ✓ line each;
    ``notes`` are named remarks that do not fail the answer (a float32 input
    that came back as float64, for example); ``tolerance_note`` is a line
    about the tolerance, shown whenever the answer was attempted; ``part`` is
    the part of the exercise the checker judges (``"b"`` for 19.1-19.3, ``"a"``
    and ``"c"`` for 19.4), the key of the catalogue of diagnoses with
    ``exercise``.

    Examples
    --------
    >>> report = ExerciseReport("19.9", "an example", checked=("it runs",), part="b")
    >>> report.passed
    True
    >>> print(report)
    Exercise 19.9 (b) · an example: passed
      ✓ it runs
    """

    exercise: str
    title: str
    findings: tuple = ()
    checked: tuple = ()
    attempted: bool = True
    tolerance_note: str = ""
    notes: tuple = ()
    part: str = ""

    @property
    def passed(self):
        """True when the answer was attempted and nothing is wrong (notes do not count)."""
        return self.attempted and not self.findings

    @property
    def diagnoses(self):
        """The diagnosis names of the findings, in order."""
        return tuple(finding.diagnosis for finding in self.findings)

    @property
    def note_names(self):
        """The names of the notes, in order."""
        return tuple(note.diagnosis for note in self.notes)

    def __str__(self):
        part = f" ({self.part})" if self.part else ""
        head = f"Exercise {self.exercise}{part} · {self.title}: "
        if not self.attempted:
            lines = [head + "not attempted yet"]
            lines += [line for finding in self.findings for line in wrap(finding.message, "  ")]
            return "\n".join(lines)
        if self.passed:
            lines = [head + "passed"]
            lines += [line for text in self.checked for line in wrap(text, "  ✓ ", "    ")]
        else:
            count = len(self.findings)
            lines = [head + f"not yet ({count} problem{'s' if count > 1 else ''})"]
            for finding in self.findings:
                lines += wrap(f"{finding.message} [{finding.diagnosis}]", "  ✗ ", "    ")
                if finding.hint:
                    lines += wrap("Read: " + finding.hint, "    ")
        for note in self.notes:
            lines += wrap(f"Note: {note.message} [{note.diagnosis}]", "  ", "    ")
        if self.tolerance_note:
            lines += wrap(self.tolerance_note, "  ")
        return "\n".join(lines)

    def __repr__(self):
        return str(self)


def wrap(text, first_indent, later_indent=None):
    """Wrap ``text`` to WIDTH columns, never inside a `code span`; ``\\n`` starts a new line."""
    later_indent = first_indent if later_indent is None else later_indent
    # Spaces inside code spans become no-break spaces while wrapping, then spaces again.
    text = _CODE_SPAN.sub(lambda span: span[0].replace(" ", "\xa0"), text)
    lines = []
    for number, paragraph in enumerate(text.split("\n")):
        indent = first_indent if number == 0 else later_indent
        lines += textwrap.wrap(
            paragraph,
            WIDTH,
            initial_indent=indent,
            subsequent_indent=later_indent,
            break_on_hyphens=False,
        ) or [indent.rstrip()]
    return [line.replace("\xa0", " ") for line in lines]

"""What the board can count: the exercise parts the checkers judge and their diagnoses.

Loaded from attention_lib in this one place, so the board never holds a list of its own:
the parts from the checkers themselves (each checker, handed a scaffold, names its exercise
and title in its "not attempted" report), and the diagnoses (name, exercise and part,
plain-words title, hint) from ``attention_lib.exercises.DIAGNOSES``, with the generic
verdicts in ``GENERIC_DIAGNOSES``. Where the library does not export that catalogue yet,
any well-formed name counts, titled by its own words and without a hint
(:attr:`Catalogue.strict` is False, and the board says so).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Mapping

from .sink.attention_misconceptions_sink import exercise_and_part

NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


@dataclasses.dataclass(frozen=True)
class Part:
    exercise: str
    part: str
    title: str
    checker: str = ""  # the checker's name in attention_lib.exercises

    @property
    def key(self) -> str:
        """``19.4`` or ``19.4 (c)``: the label the checker's report prints."""
        return f"{self.exercise} ({self.part})" if self.part else self.exercise


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    name: str
    title: str
    hint: str = ""
    generic: bool = False


@dataclasses.dataclass(frozen=True)
class Catalogue:
    parts: tuple[Part, ...]
    diagnoses: dict[tuple[str, str], dict[str, Diagnosis]]
    generic: frozenset[str] = frozenset()
    strict: bool = True

    def part(self, exercise: str, part: str) -> Part | None:
        return next((p for p in self.parts if (p.exercise, p.part) == (exercise, part)), None)

    def diagnosis(self, exercise: str, part: str, name: str) -> Diagnosis | None:
        """The diagnosis ``name`` of that part, or None when the board does not know it."""
        known = self.diagnoses.get((exercise, part), {}).get(name)
        if known is not None or self.strict:
            return known
        if not isinstance(name, str) or not NAME.fullmatch(name):
            return None
        return Diagnosis(name, name.replace("_", " "), "", name in self.generic)


def _scaffold(*args, **kwargs):
    raise NotImplementedError()


def checker_parts() -> tuple[Part, ...]:
    """Every checker attention_lib exports, in its order, as the part it reports."""
    from attention_lib import exercises

    parts = []
    for name in exercises.__all__:
        if name.startswith("check_exercise_"):
            checker = getattr(exercises, name)
            arguments = [_scaffold] * sum(
                p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                for p in inspect.signature(checker).parameters.values()
            )
            report = checker(*arguments)
            parts.append(Part(*exercise_and_part(report), report.title, checker=name))
    return tuple(parts)


def load() -> Catalogue:
    """The catalogue of the attention_lib this process imports."""
    from attention_lib import exercises

    parts = checker_parts()
    generic = frozenset(getattr(exercises, "GENERIC_DIAGNOSES", ()))
    records = getattr(exercises, "DIAGNOSES", None)
    if records is None:
        return Catalogue(parts, {}, generic, strict=False)
    diagnoses: dict[tuple[str, str], dict[str, Diagnosis]] = {}
    for record in records:
        name, exercise, part, title, hint = (
            record[field] if isinstance(record, Mapping) else getattr(record, field)
            for field in ("name", "exercise", "part", "title", "hint")
        )
        diagnoses.setdefault((exercise, part or ""), {})[name] = Diagnosis(
            name, title, hint or "", name in generic
        )
    return Catalogue(parts, diagnoses, generic, strict=True)

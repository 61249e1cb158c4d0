from typing import Any, Callable, NamedTuple, Optional


class Attempt(NamedTuple):
    id: str  # unique, e.g. "19.4-017"
    exercise: str  # "19.1", "19.2", "19.3", "19.4" (part a) or "19.4c"
    label: str  # "right" or "wrong"
    meant: str  # one sentence: what the student meant, and for a wrong one what the mistake is
    answer: Any  # what is handed to the checker
    witness: Optional[Callable[[], str]] = None  # wrong attempts: proves the label

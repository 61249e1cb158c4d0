"""Exercise 19.1: the soft lookup, a self-check of five multiple-choice questions."""

from __future__ import annotations

from collections.abc import Mapping

from ._harness import Mistakes, NotAttempted, Stop, run

__all__ = [
    "EQUAL_SCORES_CHOICES",
    "ROLE_CHOICES",
    "VALUES_DOUBLED_CHOICES",
    "check_exercise_19_1",
]

ROLE_CHOICES = {
    "a": "the rows that are mixed into the output, in proportions set by the weights",
    "b": "what one position is looking for; it is compared with every key",
    "c": "what a position offers to be found by; it is compared with the query and "
    "is never mixed into the output",
}
VALUES_DOUBLED_CHOICES = {
    "a": "the weights stay the same and the output doubles",
    "b": "the weights double and the output grows four times",
    "c": "the weights move towards the keys whose values are largest",
    "d": "nothing changes, because softmax normalises",
}
EQUAL_SCORES_CHOICES = {
    "a": "the value row of the first key",
    "b": "the sum of the four value rows",
    "c": "the average of the four value rows",
    "d": "a row of zeros",
}


# For each question: the right choice, and why each wrong choice is wrong.
_QUESTIONS = {
    "query": (
        "b",
        {
            "a": "No query is mixed into the output (O = A V mixes rows of V). A query "
            "decides, through its scores with the keys, how much of each value to take.",
            "c": "That describes a key. Query and key meet in the score q·k, but the query is "
            "the side that asks: one row per output position.",
        },
    ),
    "key": (
        "c",
        {
            "a": "Keys only enter the scores Q Kᵀ and are never mixed into the output. The "
            "rows that are mixed are the values.",
            "b": "That is the query, the side that asks. A key is what a position can be found by.",
        },
    ),
    "value": (
        "a",
        {
            "b": "Values take no part in the scores, so they cannot be what is compared; "
            "they are what is handed over: O = A V.",
            "c": "Values take no part in the scores: changing V never changes the weights. "
            "They are exactly what reaches the output: O = A V.",
        },
    ),
    "values_doubled": (
        "a",
        {
            "b": "The weights are a softmax of the scores, which come from Q and K alone, so "
            "they do not change; each row still sums to 1.",
            "c": "That is the misconception 'the values decide the weights'. The scores, hence "
            "the weights, come from Q and K only.",
            "d": "Softmax normalises the weights, not the output. O = A V is linear in V: "
            "twice the values, twice the output.",
        },
    ),
    "equal_scores": (
        "c",
        {
            "a": "That would be a hard lookup (argmax). Softmax of four equal scores gives four "
            "equal weights, 1/4 each.",
            "b": "The weights of a row sum to 1, so each of four equal weights is 1/4, not 1.",
            "d": "Zeros come only from a row with no readable key (fully masked). Equal scores "
            "give `exp(s) / (4 exp(s))` = 1/4 per key.",
        },
    ),
}
MISTAKES = Mistakes("19.1", "b")
_CHOICES = {
    "query": ROLE_CHOICES,
    "key": ROLE_CHOICES,
    "value": ROLE_CHOICES,
    "values_doubled": VALUES_DOUBLED_CHOICES,
    "equal_scores": EQUAL_SCORES_CHOICES,
}


def _findings(student, answers):
    if callable(answers):
        answers = student.call(answers, "your answers function")
    if not isinstance(answers, Mapping):
        raise MISTAKES.stop(
            "wrong_type",
            "the answers should be a dict that maps each question to a letter, "
            f"{{'query': '?', 'key': '?', ...}}, got {type(answers).__name__}.",
        )
    unknown = sorted(map(str, set(answers) - set(_QUESTIONS)))
    if all(answers.get(question) is None for question in _QUESTIONS) and not unknown:
        raise NotAttempted("No question has an answer yet: give each one a letter.")
    findings = [
        MISTAKES.finding(
            "unknown_question",
            f"there is no question {name!r}; the questions are {', '.join(_QUESTIONS)}.",
        )
        for name in unknown
    ]
    for question, (right, explanations) in _QUESTIONS.items():
        choice = answers.get(question)
        choices = _CHOICES[question]
        if choice is None:
            findings.append(MISTAKES.finding("not_answered", f"{question}: not answered yet."))
            continue
        choice = str(choice).strip().lower()
        if choice not in choices:
            message = f"{question}: {choice!r} is not one of the choices {', '.join(choices)}."
            findings.append(MISTAKES.finding("invalid_choice", message))
        elif choice != right:
            message = f"{question}: you chose ({choice}) {choices[choice]}. {explanations[choice]}"
            findings.append(MISTAKES.finding(f"{question}_choice", message))
    if findings:
        raise Stop(*findings)
    return MISTAKES.checked()


def check_exercise_19_1(answers):
    """Check the soft-lookup self-check of exercise 19.1.

    Parameters
    ----------
    answers : dict or callable
        ``{"query": ..., "key": ..., "value": ..., "values_doubled": ...,
        "equal_scores": ...}``, each a choice letter (see ``ROLE_CHOICES``,
        ``VALUES_DOUBLED_CHOICES``, ``EQUAL_SCORES_CHOICES``); or a function
        returning that dict. ``None`` marks a question not answered yet.

    Returns
    -------
    ExerciseReport
        One finding per wrong choice, explaining why it is wrong.

    Examples
    --------
    >>> report = check_exercise_19_1({"query": "b", "key": "c", "value": "c",
    ...                               "values_doubled": "a", "equal_scores": "c"})
    >>> report.passed, report.diagnoses
    (False, ('value_choice',))
    """
    return run("19.1", "b", "soft lookup", lambda student: _findings(student, answers))

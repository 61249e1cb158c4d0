"""Exercise 19.1 (b): the self-check letters, as students hand them in."""

try:
    from . import reference as ref
    from .common import Attempt
except ImportError:  # run from inside the folder
    import reference as ref
    from common import Attempt


# ---------------------------------------------------------------- right


def soft_lookup_answers_plain():
    """Exercise 19.1 (b): one letter per question."""
    return {"query": "b", "key": "c", "value": "a", "values_doubled": "a", "equal_scores": "c"}


def soft_lookup_answers_reasoned():
    """Exercise 19.1 (b): derived from the role table rather than typed in."""
    roles = {
        "a": "rows mixed into the output",
        "b": "what a position is looking for",
        "c": "what a position offers to be found by",
    }
    pick = {name: letter for letter, text in roles.items() for name, word in
            (("value", "mixed"), ("query", "looking"), ("key", "offers")) if word in text}
    # doubling V leaves Q K^T alone, so the weights stay and the output doubles -> (a)
    # equal scores -> uniform weights 1/4 -> average of the value rows -> (c)
    pick["values_doubled"] = "a"
    pick["equal_scores"] = "c"
    return pick


ANSWER_ZIP = dict(zip(
    ["query", "key", "value", "values_doubled", "equal_scores"],
    "bcaac",
))


# ---------------------------------------------------------------- wrong


def soft_lookup_answers_swapped_qk():
    return {"query": "c", "key": "b", "value": "a", "values_doubled": "a", "equal_scores": "c"}


def soft_lookup_answers_normalises():
    # "softmax normalises, so scaling V cannot matter"
    return {"query": "b", "key": "c", "value": "a", "values_doubled": "d", "equal_scores": "c"}


def soft_lookup_answers_values_drive_weights():
    return {"query": "b", "key": "c", "value": "a", "values_doubled": "c", "equal_scores": "c"}


def soft_lookup_answers_sum():
    # forgot the weights are 1/4 each: "it adds the four rows"
    return {"query": "b", "key": "c", "value": "a", "values_doubled": "a", "equal_scores": "b"}


def soft_lookup_answers_hard_lookup():
    # thinks of a Python dict: ties go to the first key
    return {"query": "b", "key": "c", "value": "a", "values_doubled": "a", "equal_scores": "a"}


def soft_lookup_answers_printed():
    answers = {"query": "b", "key": "c", "value": "a", "values_doubled": "a", "equal_scores": "c"}
    print(answers)  # forgot to return it


def soft_lookup_answers_list():
    return ["b", "c", "a", "a", "c"]


def soft_lookup_answers_spelling():
    return {"query": "b", "key": "c", "value": "a", "values doubled": "a", "equal scores": "c"}


def soft_lookup_answers_plural_keys():
    return {"queries": "b", "keys": "c", "values": "a", "values_doubled": "a", "equal_scores": "c"}


def soft_lookup_answers_half_done():
    return {"query": "b", "key": "c", "value": "a", "values_doubled": None, "equal_scores": None}


def soft_lookup_answers_full_text():
    return {
        "query": "b",
        "key": "c",
        "value": "a",
        "values_doubled": "a) the weights stay the same and the output doubles",
        "equal_scores": "c",
    }


def _w(answer):
    return lambda: ref.found(ref.check_19_1(answer), "wrong letter")


ATTEMPTS = [
    Attempt("19.1-001", "19.1", "right", "All five letters typed in: b, c, a, a, c.",
            soft_lookup_answers_plain),
    Attempt("19.1-002", "19.1", "right",
            "Letters looked up from the role descriptions by keyword, then a and c for the two questions.",
            soft_lookup_answers_reasoned),
    Attempt("19.1-003", "19.1", "right",
            "The dict itself (not a function), built with dict(zip(names, 'bcaac')).",
            ANSWER_ZIP),
    Attempt("19.1-004", "19.1", "wrong", "Swaps the roles of query and key (query=c, key=b).",
            soft_lookup_answers_swapped_qk, _w(soft_lookup_answers_swapped_qk)),
    Attempt("19.1-005", "19.1", "wrong",
            "Believes softmax normalisation cancels a scaling of V (values_doubled=d).",
            soft_lookup_answers_normalises, _w(soft_lookup_answers_normalises)),
    Attempt("19.1-006", "19.1", "wrong",
            "The misconception 'values decide the weights' (values_doubled=c).",
            soft_lookup_answers_values_drive_weights, _w(soft_lookup_answers_values_drive_weights)),
    Attempt("19.1-007", "19.1", "wrong",
            "Equal scores give the sum of the value rows (forgets the weights are 1/4): equal_scores=b.",
            soft_lookup_answers_sum, _w(soft_lookup_answers_sum)),
    Attempt("19.1-008", "19.1", "wrong",
            "Hard-dictionary thinking: a tie returns the first key's value (equal_scores=a).",
            soft_lookup_answers_hard_lookup, _w(soft_lookup_answers_hard_lookup)),
    Attempt("19.1-009", "19.1", "wrong",
            "Right letters printed but never returned, so the function returns None.",
            soft_lookup_answers_printed, _w(soft_lookup_answers_printed)),
    Attempt("19.1-010", "19.1", "wrong",
            "Right letters, but as a list in question order instead of the dict the statement asks for.",
            soft_lookup_answers_list, _w(soft_lookup_answers_list)),
    Attempt("19.1-011", "19.1", "wrong",
            "Right letters, but keys spelled with spaces ('values doubled', 'equal scores').",
            soft_lookup_answers_spelling, _w(soft_lookup_answers_spelling)),
    Attempt("19.1-012", "19.1", "wrong",
            "Right letters under plural keys 'queries', 'keys', 'values'.",
            soft_lookup_answers_plural_keys, _w(soft_lookup_answers_plural_keys)),
    Attempt("19.1-013", "19.1", "wrong",
            "Roles answered, the two questions left as None (skipped, so not answered).",
            soft_lookup_answers_half_done, _w(soft_lookup_answers_half_done)),
    Attempt("19.1-014", "19.1", "wrong",
            "Right choice but the whole table row pasted instead of one letter for values_doubled.",
            soft_lookup_answers_full_text, _w(soft_lookup_answers_full_text)),
]

"""show_source: a library function's code, as the notebooks display it."""

import inspect

import pytest

from attention_lib import attention_backward, attention_forward, causal_mask
from attention_lib.source import SourceCode, show_source


def _without_docstring(function):
    """The function's lines with the docstring's lines dropped, found by its text."""
    lines = inspect.getsource(function).splitlines()
    opening = next(i for i, line in enumerate(lines) if line.strip().startswith('"""'))
    closing = next(i for i in range(opening + 1, len(lines)) if lines[i].strip().endswith('"""'))
    return lines[:opening] + lines[closing + 1 :]


@pytest.mark.parametrize("function", [attention_forward, attention_backward, causal_mask])
def test_shows_the_library_code_line_for_line_without_the_docstring(function):
    shown = show_source(function)
    assert shown.splitlines() == _without_docstring(function)
    assert shown.startswith(f"def {function.__name__}(")
    assert '"""' not in shown and function.__doc__.strip().splitlines()[0] not in shown


def test_comments_and_strings_that_are_not_the_docstring_stay():
    def scaled(x):
        """Doc."""
        label = """a string, not a docstring"""  # a comment
        return x, label

    assert show_source(scaled) == (
        "def scaled(x):\n"
        '    label = """a string, not a docstring"""  # a comment\n'
        "    return x, label"
    )


def test_a_function_without_a_docstring_is_shown_whole_and_dedented():
    def plain(x):
        return x + 1  # nothing to remove

    assert show_source(plain) == "def plain(x):\n    return x + 1  # nothing to remove"


def test_a_function_that_is_only_a_docstring_keeps_it_so_the_code_stays_valid():
    def only():
        """Nothing else."""

    assert show_source(only) == 'def only():\n    """Nothing else."""'


def test_a_notebook_shows_it_as_python_and_compares_the_plain_code():
    shown = show_source(causal_mask)
    assert isinstance(shown, SourceCode) and isinstance(shown, str)
    assert repr(shown) == str(shown)  # text/plain, what nbval compares
    assert shown._repr_markdown_() == f"```python\n{shown}\n```"


@pytest.mark.parametrize("not_a_function", [len, SourceCode, lambda x: x, "attention_forward"])
def test_anything_but_a_python_function_is_refused_by_name(not_a_function):
    with pytest.raises(TypeError, match="show_source takes a function written in Python"):
        show_source(not_a_function)

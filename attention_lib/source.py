"""A library function's code on the notebook page, read from the library itself.

The notebooks show the chapter's listings as the library runs them, through
:func:`show_source`: the text comes from the module's file when the cell runs,
so the page cannot drift from the code (nbval compares the shown text, so a
change in the library fails until the notebook is re-executed). The docstring is
left out, since the notebook's prose explains what it would.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

__all__ = ["SourceCode", "show_source"]


class SourceCode(str):
    """Python source text that a notebook shows as a highlighted code block."""

    __slots__ = ()

    def __repr__(self):
        return str(self)

    def _repr_markdown_(self):
        return f"```python\n{self}\n```"


def show_source(function):
    """The source of ``function`` without its docstring, for a notebook to display.

    Parameters
    ----------
    function : function
        A function defined in Python (not a builtin, class or lambda).

    Returns
    -------
    SourceCode
        A ``str`` of the function's code, dedented, with the docstring removed and
        comments kept. A notebook shows it as a Python code block; its plain text
        (what nbval compares) is the code itself.

    Examples
    --------
    >>> def half(x):
    ...     '''Half of x.'''
    ...     return x / 2  # exact for floats
    >>> print(show_source(half))
    def half(x):
        return x / 2  # exact for floats
    >>> show_source(len)
    Traceback (most recent call last):
    ...
    TypeError: show_source takes a function written in Python; got builtin_function_or_method 'len'.
    """
    if not inspect.isfunction(function) or function.__name__ == "<lambda>":
        kind, name = type(function).__name__, getattr(function, "__name__", function)
        raise TypeError(f"show_source takes a function written in Python; got {kind} {name!r}.")
    lines = textwrap.dedent(inspect.getsource(function)).splitlines()
    definition = ast.parse("\n".join(lines)).body[0]
    first = definition.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
        and len(definition.body) > 1
    ):
        del lines[first.lineno - 1 : first.end_lineno]
    return SourceCode("\n".join(lines))

"""Count the lines that hold code in Python files: no docstrings, comments or blank lines.

The measure issue 22 sets its target in (at least 20% fewer code lines in
``attention_lib/widgets/`` and ``attention_lib/plots/``), so that deleting
documentation or cramming statements onto fewer lines does not count as
simpler code. A line counts when it holds a token that is neither a comment
nor part of a docstring (a string expression standing alone as a statement:
module, class and function docstrings, and the attribute strings after them).

Usage::

    python scripts/count_code_lines.py                      # widgets/ and plots/
    python scripts/count_code_lines.py attention_lib/plots  # any files or folders
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

DEFAULT_PATHS = ("attention_lib/widgets", "attention_lib/plots")
_NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


def _docstring_lines(tree):
    """Line numbers covered by string expressions that stand alone as statements."""
    lines = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def code_lines(source):
    """Number of lines of ``source`` (Python text) that hold code.

    Examples
    --------
    >>> code_lines("'''Doc.'''\\n\\n# note\\nx = 1  # why\\ndef f():\\n    'Doc.'\\n    return x")
    3
    """
    docstrings = _docstring_lines(ast.parse(source))
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in _NOT_CODE:
            continue
        for line in range(token.start[0], token.end[0] + 1):
            if line not in docstrings:
                lines.add(line)
    return len(lines)


def python_files(paths):
    for path in map(Path, paths):
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def main(argv=None):
    paths = (argv if argv is not None else sys.argv[1:]) or DEFAULT_PATHS
    total = 0
    for path in python_files(paths):
        count = code_lines(path.read_text(encoding="utf-8"))
        total += count
        print(f"{count:6d}  {path}")
    print(f"{total:6d}  total")
    return total


if __name__ == "__main__":
    main()

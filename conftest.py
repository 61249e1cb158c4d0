"""Shared by every pytest run of this checkout.

The doctest namespace (every docstring example can use ``np`` and the public API),
under ``pytest --nbval`` the check of every static figure's text size
(``tests/nbval_figure_text.py``), and the order items run in: the longest first, so
that ``make test-fast``'s two pytest-xdist workers run out of work together.
"""

import matplotlib

matplotlib.use("Agg")  # tests and doctests never open windows; set before pyplot is imported

import numpy as np
import pytest

import attention_lib

pytest_plugins = ["tests.nbval_figure_text"]


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    doctest_namespace["np"] = np
    for name in attention_lib.__all__:
        doctest_namespace[name] = getattr(attention_lib, name)


#: What runs first, longest first: pytest-xdist hands items out in this order, so
#: the long ones start early and the workers run out of work together (a long test
#: started last keeps one core busy alone). Matched against the start of the path.
LONGEST_FIRST = (
    "tests/test_bench_smoke.py",
    "tests/test_widgets_stateful.py",
    "tests/test_widgets_template.py",
)


def _rank(item):
    where = item.path.relative_to(item.config.rootpath).as_posix()
    return next((i for i, start in enumerate(LONGEST_FIRST) if where.startswith(start)), 99)


def pytest_collection_modifyitems(items):
    items.sort(key=_rank)  # stable: a file's items keep their order

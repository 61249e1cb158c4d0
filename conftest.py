"""Shared by every pytest run of this checkout.

The doctest namespace (every docstring example can use ``np`` and the public API),
and under ``pytest --nbval`` the check of every static figure's text size
(``tests/nbval_figure_text.py``).
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

"""Doctest namespace: every docstring example can use ``np`` and the public API."""

import matplotlib

matplotlib.use("Agg")  # tests and doctests never open windows; set before pyplot is imported

import numpy as np
import pytest

import attention_lib


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    doctest_namespace["np"] = np
    for name in attention_lib.__all__:
        doctest_namespace[name] = getattr(attention_lib, name)

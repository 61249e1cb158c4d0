"""Assertions shared by the explorer tests (imported; pytest does not collect this file)."""

import numpy as np


def assert_same_state(state, expected):
    """Two explorer states (NamedTuples of arrays and numbers) are equal field by field."""
    assert type(state) is type(expected)
    for field, value in zip(state._fields, state, strict=True):
        np.testing.assert_array_equal(value, getattr(expected, field), err_msg=field)

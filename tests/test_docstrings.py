"""Every public name is documented, numpydoc-style, with an example that runs.

The examples themselves run as doctests (pytest --doctest-modules over
attention_lib); this test makes sure nobody adds a public function without one.
"""

import inspect

import pytest

import attention_lib

PUBLIC = sorted(attention_lib.__all__)


@pytest.mark.parametrize("name", PUBLIC)
def test_public_name_has_a_docstring_with_a_runnable_example(name):
    obj = getattr(attention_lib, name)
    doc = inspect.getdoc(obj)
    assert doc, f"{name} has no docstring"
    if inspect.isfunction(obj):
        assert "Examples\n--------" in doc, f"{name}'s docstring has no numpydoc Examples section"
        assert ">>> " in doc, f"{name}'s Examples section has no runnable example"


def test_everything_in_all_exists():
    missing = [name for name in attention_lib.__all__ if not hasattr(attention_lib, name)]
    assert not missing

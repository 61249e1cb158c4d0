"""Every public function is documented, numpydoc-style, with an example that runs.

The examples themselves run as doctests (pytest --doctest-modules over
attention_lib); this test makes sure nobody adds a public function without one,
in the top-level namespace or in any submodule (plots, pitfalls, widgets and
each explorer module). What the package exports is public wherever it is
defined (``AttentionCache`` lives in the private module both attention paths
share). The library's own functions, outside ``plots`` and ``widgets``, also
name every parameter under Parameters and say what they return.
"""

import importlib
import inspect
import pkgutil

import pytest

import attention_lib


def public_modules():
    names = []
    for info in pkgutil.walk_packages(attention_lib.__path__, "attention_lib."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    # the shell and the front end are private as modules, but their classes and
    # helpers are public API
    return [*names, "attention_lib.widgets._shell", "attention_lib.widgets._frontend"]


def public_callables():
    found = {}
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        names = getattr(module, "__all__", None) or [
            name for name in vars(module) if not name.startswith("_")
        ]
        for name in names:
            obj = getattr(module, name)
            defined_here = getattr(obj, "__module__", None) == module_name
            if defined_here and (inspect.isfunction(obj) or inspect.isclass(obj)):
                found[f"{module_name}.{name}"] = obj
    for name in attention_lib.__all__:
        obj = getattr(attention_lib, name)
        if obj not in found.values():
            found[f"attention_lib.{name}"] = obj
    return found


PUBLIC = public_callables()


def test_the_walk_finds_the_library():
    assert "attention_lib.attention.attention_forward" in PUBLIC
    assert "attention_lib.plots.heatmaps.attention_heatmap" in PUBLIC
    assert "attention_lib.widgets.soft_lookup.update" in PUBLIC
    assert "attention_lib.pitfalls.large_negative_fill" in PUBLIC
    assert "attention_lib.attention.attention_path" in PUBLIC
    assert "attention_lib.AttentionCache" in PUBLIC  # defined in a private module


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_callable_has_a_docstring_with_a_runnable_example(name):
    obj = PUBLIC[name]
    doc = inspect.getdoc(obj)
    assert doc, f"{name} has no docstring"
    if inspect.isfunction(obj):
        assert "Examples\n--------" in doc, f"{name}'s docstring has no numpydoc Examples section"
        assert ">>> " in doc, f"{name}'s Examples section has no runnable example"


# The library itself, as against its figures and explorers (whose hooks carry one-line
# docstrings): numpydoc with every section a reader looks for.
CORE = {
    name: obj
    for name, obj in PUBLIC.items()
    if not name.startswith(("attention_lib.plots", "attention_lib.widgets"))
    and inspect.isfunction(obj)
    and inspect.signature(obj).parameters
}


def test_the_core_is_found():
    assert "attention_lib.attention.attention_path" in CORE
    assert "attention_lib.streaming.online_softmax_trace" in CORE
    assert not any(name.startswith("attention_lib.widgets") for name in CORE)


@pytest.mark.parametrize("name", sorted(CORE))
def test_core_function_documents_its_parameters_and_what_it_returns(name):
    doc = inspect.getdoc(CORE[name])
    for section in ("Parameters", "Returns"):
        assert f"\n{section}\n{'-' * len(section)}\n" in doc, f"{name} has no {section} section"
    documented = set()
    for line in doc.split("Parameters\n----------\n", 1)[1].split("\n\n")[0].splitlines():
        if line and not line.startswith(" "):  # "name : type", "a, b : type" or "*masks : ..."
            names = line.split(" : ")[0]
            documented |= {part.strip().lstrip("*") for part in names.split(",")}
    for parameter in inspect.signature(CORE[name]).parameters:
        assert parameter in documented, f"{name}: parameter {parameter!r} is not documented"


def test_everything_in_all_exists():
    missing = [name for name in attention_lib.__all__ if not hasattr(attention_lib, name)]
    assert not missing

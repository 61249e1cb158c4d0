"""requirements.txt, environment.yml, constraints.txt and pyproject.toml agree.

requirements.txt is the source of truth: every line is an exact ``name==version``
pin. environment.yml must carry exactly the same pins (conda/Binder), and
constraints.txt (the transitive lock, ``make lock``) must hold every one of them at
the same version and list exactly these as its top-level requirements. Bumping one
file only fails here. requirements-torch.txt, the test-only PyTorch, is exact pins too,
none of them at another version than the series' own.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)$")


def requirement_lines(text: str) -> list[str]:
    """Non-blank lines with comments removed."""
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line]


def parse_pins(lines: list[str], source: str) -> dict[str, str]:
    """``{canonical name: version}`` from exact pins; anything else is an error."""
    pins: dict[str, str] = {}
    for line in lines:
        match = PIN.match(line)
        if match is None:
            raise AssertionError(f"{source}: {line!r} is not an exact pin name==version")
        name = canonicalize_name(match[1])
        if name in pins:
            raise AssertionError(f"{source}: {match[1]} is pinned twice")
        pins[name] = match[2]
    return pins


def requirements_pins(text: str) -> dict[str, str]:
    return parse_pins(requirement_lines(text), "requirements.txt")


def environment_pins(text: str) -> tuple[list[str], dict[str, str]]:
    """Conda dependencies (strings) and the pins of the pip section."""
    env = yaml.safe_load(text)
    conda = [dep for dep in env["dependencies"] if isinstance(dep, str)]
    pip_sections = [dep["pip"] for dep in env["dependencies"] if isinstance(dep, dict)]
    assert len(pip_sections) == 1, "environment.yml: expected exactly one pip section"
    pip = [line for line in pip_sections[0] if line != "-e ."]
    return conda, parse_pins(pip, "environment.yml")


def constraints_pins(text: str) -> tuple[dict[str, set[str]], set[str]]:
    """Versions per package (one per platform/Python marker) and the top-level names.

    The top-level names are the ones uv annotates ``via -r requirements.txt``.
    """
    versions: dict[str, set[str]] = {}
    top_level: set[str] = set()
    current = None
    for raw in text.splitlines():
        if raw and not raw[0].isspace() and not raw.startswith("#"):
            spec = raw.split(";", 1)[0].strip()
            match = PIN.match(spec)
            assert match is not None, f"constraints.txt: {raw!r} is not an exact pin"
            current = canonicalize_name(match[1])
            versions.setdefault(current, set()).add(match[2])
        elif "-r requirements.txt" in raw and current is not None:
            top_level.add(current)
    return versions, top_level


def disagreements(
    requirements: dict[str, str], environment: dict[str, str], constraints: dict[str, set[str]]
) -> list[str]:
    """Every way the three files disagree, in words (empty when they agree)."""
    problems = []
    for name in sorted(requirements.keys() | environment.keys()):
        req, env = requirements.get(name), environment.get(name)
        if req != env:
            problems.append(f"{name}: requirements.txt has {req}, environment.yml has {env}")
    for name, version in sorted(requirements.items()):
        locked = constraints.get(name, set())
        if locked != {version}:
            problems.append(
                f"{name}: requirements.txt has {version}, constraints.txt has "
                f"{sorted(locked) or 'nothing'} (run `make lock`)"
            )
    return problems


def read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def pins():
    requirements = requirements_pins(read("requirements.txt"))
    conda, environment = environment_pins(read("environment.yml"))
    constraints, top_level = constraints_pins(read("constraints.txt"))
    return requirements, conda, environment, constraints, top_level


def test_requirements_are_exact_pins(pins):
    requirements = pins[0]
    assert len(requirements) >= 10, "requirements.txt lost its pins"


def test_environment_yml_and_constraints_match_requirements(pins):
    requirements, _, environment, constraints, _ = pins
    assert disagreements(requirements, environment, constraints) == []


def test_constraints_top_level_is_requirements(pins):
    """Adding or removing a requirement without `make lock` leaves the lock stale."""
    requirements, *_, top_level = pins
    assert top_level == set(requirements), "constraints.txt is stale: run `make lock`"


def test_environment_python_matches_pyproject(pins):
    conda = pins[1]
    assert "python=3.11" in conda
    pyproject = tomllib.loads(read("pyproject.toml"))
    assert pyproject["project"]["requires-python"] == ">=3.11"


def test_pyproject_dependencies_admit_the_pins(pins):
    """`pip install -e .` must not pull a different numpy/matplotlib than the pins."""
    requirements = pins[0]
    for dependency in tomllib.loads(read("pyproject.toml"))["project"]["dependencies"]:
        requirement = Requirement(dependency)
        name = canonicalize_name(requirement.name)
        assert name in requirements, f"pyproject needs {name}, which requirements.txt does not pin"
        assert requirement.specifier.contains(requirements[name]), (
            f"pyproject wants {requirement}, requirements.txt pins {requirements[name]}"
        )


@pytest.mark.parametrize("where", ["requirements", "environment", "constraints"])
def test_a_bump_in_one_file_is_caught(where):
    """The comparison itself works: bumping numpy in one file only is reported."""
    files = {
        "requirements": {"numpy": "2.4.6", "pytest": "9.2.0"},
        "environment": {"numpy": "2.4.6", "pytest": "9.2.0"},
        "constraints": {"numpy": {"2.4.6"}, "pytest": {"9.2.0"}, "tornado": {"6.5"}},
    }
    assert disagreements(*files.values()) == []
    files[where]["numpy"] = {"2.4.7"} if where == "constraints" else "2.4.7"
    problems = disagreements(*files.values())
    assert problems and all(problem.startswith("numpy:") for problem in problems)


def torch_pins(text: str) -> dict[str, str]:
    return parse_pins(requirement_lines(text), "requirements-torch.txt")


def clashes_with_the_series(
    test_only: dict[str, str], requirements: dict[str, str], constraints: dict[str, set[str]]
) -> list[str]:
    """How requirements-torch.txt disagrees with the series' own pins, in words."""
    problems = [
        f"{name}: pinned in requirements.txt too" for name in test_only.keys() & requirements
    ]
    for name, version in sorted(test_only.items()):
        if name in constraints and constraints[name] != {version}:
            problems.append(
                f"{name}: {version} here, {sorted(constraints[name])} in constraints.txt"
            )
    return problems


def test_torch_is_pinned_for_the_tests_only_and_agrees_with_the_lock(pins):
    """requirements-torch.txt (make test and make execute install it, make lab does not)."""
    requirements, _, environment, constraints, _ = pins
    test_only = torch_pins(read("requirements-torch.txt"))
    assert test_only["torch"] == "2.13.0"  # the version that resolves to the CPU build here
    assert "torch" not in environment
    assert clashes_with_the_series(test_only, requirements, constraints) == []


def test_a_test_only_pin_that_clashes_is_caught():
    constraints = {"jinja2": {"3.1.6"}}
    assert clashes_with_the_series({"jinja2": "3.1.6"}, {}, constraints) == []
    assert clashes_with_the_series({"jinja2": "3.1.5"}, {}, constraints)
    assert clashes_with_the_series({"numpy": "2.4.6"}, {"numpy": "2.4.6"}, {})


def test_loose_pins_are_refused():
    with pytest.raises(AssertionError, match="not an exact pin"):
        requirements_pins("numpy>=2.0\n")
    with pytest.raises(AssertionError, match="pinned twice"):
        requirements_pins("numpy==2.0\nNumPy==2.1\n")

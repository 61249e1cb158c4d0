"""The class server's files agree with each other and keep the answers with the instructor.

* The students' copy (``hub/students_copy.py``, ``make students``) holds no solution: no
  ``notebooks/solutions/``, and no line of any answer in the exercises' master, neither in
  its files nor anywhere in its object store; it holds every student notebook unchanged.
* The environments: the hub's and the students' servers' jupyterhub pins are one version;
  each requirements file's pins are in its lock; the students' lock has the series'
  versions of everything the two share.
* The proxy: package.json pins one configurable-http-proxy, the lock holds it, and every
  package in the lock declares engines that Node 20 (and this machine's Node) meets.
* The hub's configuration loads and keeps what a restart needs; ``deploy/`` installs the
  same files as ``make`` and its Z2JH config names the image the Dockerfile builds.

The hub itself runs in ``benchmarks/bench_class.py --smoke`` (``make test``, with
``ATTENTION_REQUIRE_HUB=1`` in ``.ci/run``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import types
from pathlib import Path

import pytest
import yaml
from packaging.utils import canonicalize_name
from test_pins import PIN, constraints_pins, requirement_lines
from traitlets.config import Config

ROOT = Path(__file__).resolve().parent.parent
HUB = ROOT / "hub"
MASTER = ROOT / "notebooks" / "solutions" / "07_exercises_solutions.ipynb"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def _load(name: str, path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


students_copy = _load("hub_students_copy", HUB / "students_copy.py")


# --------------------------------------------------------------------------------------
# The students' copy
# --------------------------------------------------------------------------------------


def answers(master: Path = MASTER) -> list[frozenset[str]]:
    """Each solution region of the master as its set of distinctive lines (stripped; at
    least 20 characters, so that ``return output`` or ``import numpy`` do not count)."""
    found = []
    for cell in json.loads(master.read_text())["cells"]:
        source = "".join(cell["source"])
        for region in re.findall(rf"{BEGIN}\n(.*?){END}", source, re.DOTALL):
            lines = frozenset(
                line.strip() for line in region.splitlines() if len(line.strip()) >= 20
            )
            if lines:
                found.append(lines)
    return found


def searchable(text: str) -> str:
    """The text, plus a notebook's cell sources unescaped (JSON hides lines with quotes)."""
    try:
        cells = json.loads(text)["cells"]
    except (ValueError, KeyError, TypeError):
        return text
    return text + "\n" + "\n".join("".join(cell["source"]) for cell in cells)


def leaks(texts: dict[str, str], regions: list[frozenset[str]]) -> dict[str, int]:
    """Which of ``texts`` (name -> text) hold a whole answer (every distinctive line of a
    solution region), and how many. Single lines do not count: the library itself has
    ``if mask is not None:`` and a seeded ``default_rng``."""
    found = {}
    for name, text in texts.items():
        text = searchable(text)
        whole = sum(all(line in text for line in region) for region in regions)
        if whole:
            found[name] = whole
    return found


def tree_texts(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): path.read_text(errors="replace")
        for path in root.rglob("*")
        if path.is_file() and ".git" not in path.relative_to(root).parts
    }


def object_texts(git_dir: Path) -> dict[str, str]:
    """Every object in a repository's store, as text."""
    listed = subprocess.run(
        ["git", f"--git-dir={git_dir}", "cat-file", "--batch-all-objects", "--batch-check"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    ids = [line.split()[0] for line in listed if line]
    return {
        oid: subprocess.run(
            ["git", f"--git-dir={git_dir}", "cat-file", "-p", oid], check=True, capture_output=True
        ).stdout.decode(errors="replace")
        for oid in ids
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> tuple[Path, Path]:
    """The students' copy of this checkout's HEAD, and a clone of it (as nbgitpuller makes)."""
    if shutil.which("git") is None:
        pytest.fail("git is needed to build the students' copy")
    scratch = tmp_path_factory.mktemp("students")
    repo = scratch / "students.git"
    students_copy.build(repo, ROOT)
    clone = scratch / "clone"
    subprocess.run(["git", "clone", "-q", repo.as_uri(), str(clone)], check=True)
    return repo, clone


def test_the_leak_check_finds_the_masters_answers():
    """The check below can fail: in the checkout's notebooks, the master holds every answer,
    and the student notebook none."""
    regions = answers()
    assert len(regions) >= 8, regions
    found = leaks(tree_texts(ROOT / "notebooks"), regions)
    assert found == {"solutions/07_exercises_solutions.ipynb": len(regions)}


def test_students_copy_holds_no_solution(served):
    repo, clone = served
    regions = answers()
    assert not (clone / "notebooks" / "solutions").exists()
    assert not leaks(tree_texts(clone), regions)
    assert not leaks(object_texts(repo), regions)  # nor in its history or loose objects


def test_students_copy_holds_every_student_notebook_unchanged(served):
    _repo, clone = served
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "notebooks/*.ipynb"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    student_notebooks = [p for p in tracked if "/solutions/" not in p]
    assert student_notebooks
    for rel in student_notebooks:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"HEAD:{rel}"], check=True, capture_output=True
        ).stdout
        assert (clone / rel).read_bytes() == head, rel


def test_a_new_copy_is_a_new_commit_on_the_old_one(tmp_path):
    """A student who pulls again gets an ordinary descendant to merge, not a new history."""
    repo = tmp_path / "students.git"
    first = students_copy.build(repo, ROOT)
    assert students_copy.build(repo, ROOT) == first  # same tree: no new commit
    scratch = tmp_path / "upstream"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(scratch)], check=True)
    git = ["git", "-C", str(scratch), "-c", "user.name=t", "-c", "user.email=t@localhost"]
    (scratch / "notebooks" / "new_note.md").write_text("next lecture\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "note"], check=True)
    second = students_copy.build(repo, scratch)
    parents = subprocess.run(
        ["git", f"--git-dir={repo}", "rev-parse", f"{second}^@"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert parents == [first]


# --------------------------------------------------------------------------------------
# Environments and the proxy
# --------------------------------------------------------------------------------------


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in requirement_lines(path.read_text()):
        if line.startswith("-r "):
            continue
        match = PIN.match(line)
        assert match, f"{path.name}: {line!r} is not an exact pin"
        found[canonicalize_name(match[1])] = match[2]
    return found


def test_hub_and_student_servers_run_one_jupyterhub():
    instructor = pins(HUB / "requirements-instructor.txt")
    singleuser = pins(HUB / "requirements-singleuser.txt")
    assert instructor["jupyterhub"] == singleuser["jupyterhub"]


def test_students_servers_run_the_series_environment():
    lines = requirement_lines((HUB / "requirements-singleuser.txt").read_text())
    assert "-r ../requirements.txt" in lines
    series, _ = constraints_pins((ROOT / "constraints.txt").read_text())
    students, _ = constraints_pins((HUB / "constraints-singleuser.txt").read_text())
    differ = {
        n: (series[n], students[n])
        for n in series.keys() & students.keys()
        if series[n] != students[n]
    }
    assert not differ, f"hub/constraints-singleuser.txt disagrees with constraints.txt: {differ}"
    assert set(series) <= set(students), set(series) - set(students)


@pytest.mark.parametrize("name", ["instructor", "singleuser"])
def test_each_pin_is_in_its_lock(name):
    locked, _ = constraints_pins((HUB / f"constraints-{name}.txt").read_text())
    for package, version in pins(HUB / f"requirements-{name}.txt").items():
        assert locked.get(package) == {version}, (package, version, locked.get(package))


def node_satisfies(node: tuple[int, int, int], spec: str) -> bool:
    """Does a Node version meet an npm ``engines.node`` range (the forms npm packages use:
    ``*``, ``>=X[.Y.Z]``, ``^X``, ``X``, joined by ``||``)?

    >>> node_satisfies((20, 20, 2), ">= 18"), node_satisfies((20, 20, 2), ">=22.12.0")
    (True, False)
    >>> node_satisfies((20, 1, 0), "^16 || ^18 || >=20"), node_satisfies((19, 0, 0), "^16 || ^18")
    (True, False)
    """

    def version(text: str) -> tuple[int, ...]:
        parts = [int(p) for p in text.split(".")]
        return tuple(parts + [0] * (3 - len(parts)))

    for alternative in spec.split("||"):
        alternative = alternative.strip()
        if alternative in ("*", ""):
            return True
        if match := re.fullmatch(r">=\s*([\d.]+)", alternative):
            if node >= version(match[1]):
                return True
        elif match := re.fullmatch(r"\^?\s*(\d+)(?:\.[\dx]+)*", alternative):
            if node[0] == int(match[1]):
                return True
        else:
            raise ValueError(f"engines range {alternative!r}: teach node_satisfies this form")
    return False


def test_proxy_lock_pins_a_proxy_node_20_can_run():
    package = json.loads((HUB / "package.json").read_text())
    lock = json.loads((HUB / "package-lock.json").read_text())
    wanted = package["dependencies"]["configurable-http-proxy"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", wanted), "pin the proxy exactly"
    assert lock["packages"]["node_modules/configurable-http-proxy"]["version"] == wanted
    machine = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
    nodes = [(20, 0, 0)]
    if machine.startswith("v"):
        nodes.append(tuple(int(p) for p in machine[1:].split(".")))
    too_new = {
        f"{name} {entry['version']}": entry["engines"]["node"]
        for name, entry in lock["packages"].items()
        if name and "node" in entry.get("engines", {})
        for node in nodes
        if not node_satisfies(node, entry["engines"]["node"])
    }
    assert not too_new, f"packages in hub/package-lock.json that Node {nodes} cannot run: {too_new}"
    assert "engine-strict=true" in (HUB / ".npmrc").read_text()


# --------------------------------------------------------------------------------------
# The hub's configuration and deploy/
# --------------------------------------------------------------------------------------


@pytest.fixture
def hub_config(monkeypatch, tmp_path) -> Config:
    for var, value in {
        "ATTENTION_HUB_STATE": str(tmp_path),
        "ATTENTION_HUB_PASSWORD": "p" * 16,
        "ATTENTION_HUB_ADMIN_PASSWORD": "a" * 64,
    }.items():
        monkeypatch.setenv(var, value)
    config = Config()
    path = HUB / "jupyterhub_config.py"
    exec(
        compile(path.read_text(), str(path), "exec"),
        {"get_config": lambda: config, "__file__": str(path)},
    )
    return config


def test_hub_survives_its_own_restart(hub_config, tmp_path):
    c = hub_config
    assert c.JupyterHub.cleanup_servers is False
    assert c.ConfigurableHTTPProxy.should_start is False
    assert c.JupyterHub.db_url == f"sqlite:///{tmp_path / 'jupyterhub.sqlite'}"
    assert Path(c.JupyterHub.cookie_secret_file).parent == tmp_path


def test_hub_serves_127_0_0_1_with_the_students_environment(hub_config):
    c = hub_config
    assert c.JupyterHub.bind_url.startswith("http://127.0.0.1:")
    assert c.JupyterHub.hub_ip == "127.0.0.1"
    assert c.Spawner.cmd == [str(ROOT / ".venv-singleuser" / "bin" / "jupyterhub-singleuser")]
    assert "PYTHONPATH" not in c.Spawner.env_keep
    # The series' quiet JupyterLab, as `make lab` starts it.
    assert c.Spawner.environment["JUPYTER_CONFIG_PATH"] == str(ROOT / "etc" / "jupyter")
    assert (ROOT / "etc" / "jupyter" / "labconfig" / "default_setting_overrides.json").is_file()
    culler = next(s for s in c.JupyterHub.services if s["name"] == "idle-culler")
    assert culler["command"][1:3] == ["-m", "jupyterhub_idle_culler"]
    assert "--timeout=3600" in culler["command"]


def test_each_server_has_a_port_and_kernel_sockets_of_its_own(hub_config, monkeypatch, tmp_path):
    """Kernels over Unix sockets in a per-student folder whose socket paths fit in the 107
    bytes a socket's path may have, however deep the hub's state folder is."""
    assert "--KernelManager.transport=ipc" in hub_config.Spawner.args
    deep = tmp_path / ("state-of-a-course-checked-out-somewhere-deep-" * 3)
    monkeypatch.setenv("ATTENTION_HUB_STATE", str(deep))
    config = Config()
    path = HUB / "jupyterhub_config.py"
    exec(
        compile(path.read_text(), str(path), "exec"),
        {"get_config": lambda: config, "__file__": str(path)},
    )
    spawners = [
        types.SimpleNamespace(user=types.SimpleNamespace(id=uid), environment={"A": "1"})
        for uid in (1, 999)
    ]
    for spawner in spawners:
        config.Spawner.pre_spawn_hook(spawner)
    runtimes = [Path(s.environment["JUPYTER_RUNTIME_DIR"]) for s in spawners]
    assert [s.environment["A"] for s in spawners] == ["1", "1"]
    assert [s.port for s in spawners] == [20001, 20999]
    assert runtimes[0] != runtimes[1] and str(deep) not in str(runtimes[0])
    socket = runtimes[1] / f"kernel-{'0' * 8}-{'0' * 4}-{'0' * 4}-{'0' * 4}-{'0' * 12}-ipc-5"
    assert len(str(socket).encode()) <= 107, socket


def test_deploy_installs_what_make_installs():
    """The Dockerfile's pip steps name the files the Makefile's singleuser rule names."""
    makefile = (ROOT / "Makefile").read_text()
    rule = makefile[makefile.index("$(SINGLEUSER_VENV)/.attention-installed:") :].split("\n\n")[0]
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()

    def steps(text: str) -> list[str]:
        return re.findall(
            r"pip install (?:--no-cache-dir )?(-r \S+ *\\?\s*-c \S+|--no-deps (?:-e )?\.\S*)", text
        )

    def normalized(found: list[str]) -> list[str]:
        return [re.sub(r"[\s\\]+", " ", step).replace("-e .", ".") for step in found]

    assert normalized(steps(rule)) == normalized(steps(dockerfile)) != []


def test_deploy_config_names_the_image_and_the_class_settings():
    config = yaml.safe_load((ROOT / "deploy" / "config.yaml").read_text())
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    image = config["singleuser"]["image"]
    assert f"{image['name']}:{image['tag']}" in dockerfile  # the build command it documents
    assert config["cull"]["enabled"] is True
    assert config["singleuser"]["defaultUrl"] == "/lab"
    assert config["singleuser"]["extraEnv"]["OPENBLAS_NUM_THREADS"] == "1"
    guarantee = config["singleuser"]["memory"]["guarantee"]
    assert re.fullmatch(r"\d+M", guarantee)

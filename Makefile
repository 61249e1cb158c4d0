# Two commands for a fresh machine with Python 3.11+: `make lab` and `make test`.
# Contributors' inner loop: `make test-fast`, everything but the browser tests.
# VENV=/path uses an existing environment as it is (see the setup rule below).
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.attention-installed
NOTEBOOKS := $(shell find notebooks -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' 2>/dev/null)

# Tests and kernels import attention_lib from this checkout, whatever the venv holds.
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))

.PHONY: lab board slides test test-fast test-browser execute exercises lock setup

setup: $(STAMP)

# Test-only: PyTorch, which notebook 03 and its tests compare attention_lib with
# (requirements-torch.txt, about 750 MB). The targets that test or execute notebooks install
# it, so stored outputs are what CI computes; `make lab` does not.
TEST_STAMP := $(VENV)/.attention-test-installed
.PHONY: test-setup
test-setup: $(TEST_STAMP)
$(TEST_STAMP): requirements-torch.txt constraints.txt | $(STAMP)
	@if [ -e $(VENV)/.made-by-make ]; then \
	  $(BIN)/python -m pip install -r requirements-torch.txt -c constraints.txt && touch $@; \
	else echo "$(VENV) was not made by this Makefile: install requirements-torch.txt into it yourself"; fi

# Install only into a venv this Makefile created (marked by .made-by-make), never into
# one passed in with VENV=: a shared venv must not be flipped to this checkout by -e.
$(STAMP): requirements.txt constraints.txt pyproject.toml
	@test -x $(BIN)/python || { \
	  $(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed"' && \
	  $(PYTHON) -m venv $(VENV) && touch $(VENV)/.made-by-make; }
	@if [ -e $(VENV)/.made-by-make ]; then \
	  $(BIN)/python -m pip install -r requirements.txt -c constraints.txt && \
	  $(BIN)/python -m pip install --no-deps -e . && touch $@; \
	else echo "$(VENV) was not made by this Makefile: using it as it is, installing nothing"; fi

# The series' Jupyter configuration, etc/jupyter (docs/teaching.md): no news prompt, no news
# or update fetches, no PyPI from the extension manager, no kernel to choose for a new notebook.
# JUPYTER_CONFIG_PATH outranks ~/.jupyter for the few options it sets; settings a user saves in
# JupyterLab still win, and so does a JUPYTER_CONFIG_PATH of the caller's. The browser tests
# start what `make -n lab LAB_ROOT=<their copy>` prints, adding only a port and a token.
# It opens where the series starts (LAB_START, a path under LAB_ROOT), not on the launcher.
LAB_ROOT ?= notebooks
LAB_START ?= 01_soft_lookup.ipynb
lab: setup
	mkdir -p $(LAB_ROOT)
	JUPYTER_CONFIG_PATH=$(if $(JUPYTER_CONFIG_PATH),$(JUPYTER_CONFIG_PATH):)$(CURDIR)/etc/jupyter \
	  $(BIN)/jupyter lab --ServerApp.root_dir=$(LAB_ROOT) --ServerApp.ip=127.0.0.1 \
	  --LabApp.default_url=/lab/tree/$(LAB_START) $(if $(filter 0,$(shell id -u)),--allow-root)

# Board mode (docs/teaching.md): Voila on 127.0.0.1 with the board template of
# share/jupyter/voila/templates/board, so no page asks a CDN for anything. NB= serves one
# notebook, THEME=dark the dark theme (any page also takes ?theme=dark), PORT= another port.
# ATTENTION_STYLE=board is read by the explorers and figures as their default style.
# Voila's own kernel shutdown on closing a page is refused (no _xsrf cookie in 0.5.13), so
# kernels left without a page are culled after 10 idle minutes; a page still open keeps its.
NB ?=
THEME ?= light
PORT ?= 8866
board: setup
	ATTENTION_STYLE=board JUPYTER_PATH=$(CURDIR)/share/jupyter$(if $(JUPYTER_PATH),:$(JUPYTER_PATH)) \
	  $(BIN)/voila $(or $(NB),notebooks) --template=board --theme=$(THEME) \
	  --Voila.ip=127.0.0.1 --port=$(PORT) --classic_tree=True --show_tracebacks=True \
	  --VoilaConfiguration.allow_theme_override=YES \
	  --MappingKernelManager.cull_idle_timeout=600 --MappingKernelManager.cull_interval=60

# A reveal.js slide deck of one notebook from its stored outputs (static figures), code
# hidden, instructor notes left out: build/slides/NAME.slides.html. reveal.js, MathJax and
# require.js come from CDNs (docs/teaching.md, "Slides").
slides: setup
	@test -n "$(NB)" || { echo "usage: make slides NB=notebooks/NN_name.ipynb" >&2; exit 2; }
	$(BIN)/jupyter nbconvert --to slides --no-input --no-prompt \
	  --TagRemovePreprocessor.remove_cell_tags='["instructor-note"]' \
	  --output-dir build/slides $(NB)

# `make test` is `make test-fast`, the hub's environments, then `make test-browser`, what drives Chromium
# (CONTRIBUTING.md): the browser tests, the tests marked `hub` (the nbgrader loop, a kernel
# later than its server waits) and the simulated class's smoke run (a hub, six students, one
# in Chromium); the last two skip without the hub's environments unless ATTENTION_REQUIRE_HUB=1. pytest-xdist shares the
# other tests out over WORKERS processes (auto: one per core; WORKERS=0 runs them in this
# process). The browser tests run on BROWSER_WORKERS processes, a test file at a time
# (--dist loadfile), each with its own JupyterLab, Voila and Chromium, started only if one
# of its tests asks: much of their time is waiting (pages, kernels, the quiet start's idle
# minute), which the other worker fills; BROWSER_WORKERS=0 runs them in this process (for
# latency figures, on a quiet machine). Under make -j2 (.ci/run) the grading loop runs beside them (no
# server; its kernels, like the test servers, take ports the system picks free; the page
# timings it shares the cores with are a measurement, enforced only with
# ATTENTION_ENFORCE_LATENCY=1). Under make -j2 the class smoke follows the grading loop on
# that second slot, so it too runs beside the browser tests; its culler timeout (120 s in
# --smoke) leaves an open page's heartbeat and activity reports 95 s of slack for a loaded
# machine. Without -j the three run one after the other.
WORKERS ?= auto
BROWSER_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest
CLASS_BENCHMARK := benchmarks/bench_class.py

# Where npm is, `make test` also builds the hub's environments and proxy the class smoke
# and the grading tests need (`make hub-setup`; under `make -j2`, as .ci/run runs it, beside `make test-fast`);
# without npm the smoke says so and skips.
HUB_FOR_TESTS := $(if $(shell command -v npm),hub-setup)
test: test-fast $(HUB_FOR_TESTS)
	@$(MAKE) --no-print-directory test-browser

.PHONY: browser-tests hub-tests class-smoke axe
# The order of the prerequisites is the order make -j2 starts them: the browser tests (the
# longest) on one slot, the grading loop and then the class smoke on the other.
test-browser: browser-tests hub-tests class-smoke
browser-tests: setup $(if $(shell command -v npm),axe)
	$(PYTEST) -m browser -n $(BROWSER_WORKERS) --dist loadfile

# axe-core, which the browser tests put into the pages they check for accessibility
# (tests/browser/browser_harness.py): npm ci from tests/browser/package-lock.json into
# tests/browser/node_modules, this checkout's own copy, so no page asks a CDN for it.
AXE_CORE := tests/browser/node_modules/axe-core/axe.min.js
axe: $(AXE_CORE)
$(AXE_CORE): tests/browser/package.json tests/browser/package-lock.json
	@command -v npm >/dev/null || { echo "axe-core (the browser tests' accessibility \
	checks) is an npm package: apt-get install nodejs npm" >&2; exit 1; }
	cd tests/browser && npm ci --no-audit --no-fund
	touch $@
hub-tests: setup
	$(PYTEST) -m hub
class-smoke: setup | hub-tests
	$(BIN)/python $(CLASS_BENCHMARK) --smoke

# pytest exits 5 when it collects nothing: accepted for the notebook step only when
# there is no notebook at all (the series is still being written). nbval runs whole
# notebooks per worker (--dist loadfile): one notebook's cells share one kernel.
# Every benchmark's --smoke is a test (tests/test_bench_smoke.py), so it runs beside
# the others instead of after them, one at a time.
test-fast: setup test-setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(PYTEST) -m "not browser and not hub" -n $(WORKERS)
ifeq ($(NOTEBOOKS),)
	@echo "No notebooks yet: nbval step skipped."
else
	$(PYTEST) --nbval notebooks/ --nbval-current-env -n $(WORKERS) --dist loadfile \
	  --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600
endif

execute: setup test-setup
	$(BIN)/python scripts/execute_notebooks.py $(NB)

# The solutions notebook is the master; the student notebook is generated from it
# (solution regions replaced as nbgrader does), then both are executed.
EXERCISES_MASTER := notebooks/solutions/07_exercises_solutions.ipynb
exercises: setup
	$(BIN)/python scripts/execute_notebooks.py $(EXERCISES_MASTER)
	$(BIN)/python scripts/make_exercises.py
	$(BIN)/python scripts/execute_notebooks.py notebooks/07_exercises.ipynb

# uv is not a runtime requirement: use the venv's uv if present, else uv on PATH.
UV ?= $(firstword $(wildcard $(BIN)/uv) uv)
lock:
	$(UV) pip compile requirements.txt --universal --python-version 3.11 \
	  -q -o constraints.txt \
	  --custom-compile-command "make lock  (uv pip compile requirements.txt --universal --python-version 3.11)"

# ---------------------------------------------------------------------------------------
# A class on one server (docs/teaching.md, "A class on one server"): JupyterHub with its
# proxy, the idle culler and nbgitpuller links, in environments of their own.
# - $(HUB_VENV): the instructor's environment (hub/requirements-instructor.txt): the hub,
#   the culler and nbgrader, whose server and lab extensions students must not get.
# - $(SINGLEUSER_VENV): what each student's server runs (hub/requirements-singleuser.txt):
#   the series' environment plus jupyterhub at the hub's version and nbgitpuller.
# - hub/node_modules: configurable-http-proxy, `npm ci` from hub/package-lock.json.
HUB_VENV ?= .venv-hub
SINGLEUSER_VENV ?= .venv-singleuser
HUB_STATE ?= build/hub
STUDENTS_REPO ?= build/students.git

.PHONY: instructor singleuser proxy hub-setup hub hub-stop students lock-hub

define make_venv
	@test -x $(1)/bin/python || { \
	  $(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed"' && \
	  $(PYTHON) -m venv $(1); }
endef

instructor: $(HUB_VENV)/.attention-installed
$(HUB_VENV)/.attention-installed: hub/requirements-instructor.txt hub/constraints-instructor.txt
	$(call make_venv,$(HUB_VENV))
	$(HUB_VENV)/bin/python -m pip install -r hub/requirements-instructor.txt \
	  -c hub/constraints-instructor.txt && touch $@

# The students' environment alone gets the misconceptions board's report sink
# (hub/misconceptions/sink): the series' own environment reports to nobody.
MISCONCEPTIONS_SINK := hub/misconceptions/sink
singleuser: $(SINGLEUSER_VENV)/.attention-installed
$(SINGLEUSER_VENV)/.attention-installed: hub/requirements-singleuser.txt \
    hub/constraints-singleuser.txt requirements.txt pyproject.toml \
    $(wildcard $(MISCONCEPTIONS_SINK)/*.py $(MISCONCEPTIONS_SINK)/*.toml) | $(STAMP)
	$(call make_venv,$(SINGLEUSER_VENV))
	$(SINGLEUSER_VENV)/bin/python -m pip install -r hub/requirements-singleuser.txt \
	  -c hub/constraints-singleuser.txt && \
	  $(SINGLEUSER_VENV)/bin/python -m pip install --no-deps -e . && \
	  $(SINGLEUSER_VENV)/bin/python -m pip install --no-deps ./hub/misconceptions/sink && touch $@

# The proxy's lock names versions whose engines this machine's Node meets; npm ci
# (engine-strict, hub/.npmrc) refuses any other. Node is checked first, with the fix.
proxy: hub/node_modules/.package-lock.json
hub/node_modules/.package-lock.json: hub/package.json hub/package-lock.json
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "The hub's proxy \
	(configurable-http-proxy, an npm package) needs Node.js and npm: apt-get install nodejs npm" >&2; \
	exit 1; }
	cd hub && node check_node.js && npm ci --no-audit --no-fund

hub-setup: instructor singleuser proxy grading-kernel

# The copy students pull: this checkout's HEAD without the instructor's files
# (hub/students_copy.py says which), committed to $(STUDENTS_REPO), branch main.
students:
	$(PYTHON) hub/students_copy.py $(STUDENTS_REPO)

# The hub on http://127.0.0.1:8000 (PORT_HUB=), its proxy started beside it and left
# running across hub restarts; Ctrl-C stops the hub only (student servers keep running,
# the next `make hub` picks them up); `make hub-stop` stops servers and proxy too.
PORT_HUB ?= 8000
hub: hub-setup students
	$(HUB_VENV)/bin/python hub/serve.py --state $(HUB_STATE) --port $(PORT_HUB) \
	  --repo $(abspath $(STUDENTS_REPO))
hub-stop:
	$(HUB_VENV)/bin/python hub/serve.py --state $(HUB_STATE) --stop

# The misconceptions board's data (docs/teaching.md, "Seeing the class's mistakes live"):
# every session of course MISCONCEPTIONS_COURSE wiped from $(HUB_STATE), the hub running
# or not; and the same counts for a graded assignment from nbgrader's autograded notebooks
# of $(COURSE), as an HTML page and a CSV in $(COURSE)/misconceptions/.
MISCONCEPTIONS_COURSE ?= attention-notebooks
ASSIGNMENT ?= 07_exercises
.PHONY: misconceptions-wipe misconceptions-graded
misconceptions-wipe:
	$(PYTHON) hub/misconceptions/store.py wipe --state $(HUB_STATE) --course $(MISCONCEPTIONS_COURSE)
misconceptions-graded: singleuser
	$(SINGLEUSER_VENV)/bin/python hub/misconceptions/graded.py --course $(COURSE) \
	  --assignment $(ASSIGNMENT)

lock-hub:
	$(UV) pip compile hub/requirements-instructor.txt --universal --python-version 3.11 \
	  -q -o hub/constraints-instructor.txt --custom-compile-command "make lock-hub"
	$(UV) pip compile hub/requirements-singleuser.txt -c constraints.txt --universal \
	  --python-version 3.11 -q -o hub/constraints-singleuser.txt \
	  --custom-compile-command "make lock-hub"
	cd hub && npm install --package-lock-only --no-audit --no-fund

# ---------------------------------------------------------------------------------------
# Grading the exercises with nbgrader (docs/teaching.md, "Grading the exercises").
# - grading-kernel: the series' Python ($(VENV), `make setup`) as the Jupyter kernel that
#   hub/nbgrader/nbgrader_config.py tells autograde to run, registered in $(HUB_VENV)
#   (ipykernel warns that .venv's own Jupyter would not look there; the instructor's does).
# - course: the course directory $(COURSE) for a real class: its config and the master as
#   the assignment's source (hub/nbgrader/course.py setup); nbgrader runs from there.
# - grading-demo: nbgrader's whole loop for a simulated class with known answers, checked
#   (hub/nbgrader/course.py demo; its own folder, build/grading-demo).
COURSE ?= build/course
EXCHANGE ?= build/exchange
GRADING_KERNEL := $(HUB_VENV)/share/jupyter/kernels/attention-series/kernel.json

.PHONY: grading-kernel course grading-demo

grading-kernel: $(GRADING_KERNEL)
$(GRADING_KERNEL): $(HUB_VENV)/.attention-installed | setup
	$(BIN)/python -m ipykernel install --prefix $(abspath $(HUB_VENV)) --name attention-series \
	  --display-name "Python 3 (attention series, for grading)"

course: instructor
	$(HUB_VENV)/bin/python hub/nbgrader/course.py setup --course $(COURSE) --exchange $(EXCHANGE)

grading-demo: grading-kernel
	$(HUB_VENV)/bin/python hub/nbgrader/course.py demo

# The project's two commands: `make run` and `make test`. Both share one .venv at the repo root
# and reinstall only when a requirements file changed, or the library's C source (stamp files
# record what was installed).
PYTHON ?= python3
PORT ?= 8501
VENV := .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_TELEMETRY := 1
export STREAMLIT_BROWSER_GATHER_USAGE_STATS := false

.PHONY: run test test-fast lint bench clean-venv

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.runtime-stamp: requirements.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

# crbc itself, editable; pip builds its optional C extension (crbc/io/blockmatch.c, declared in
# setup.py) in place, again whenever the C source or setup.py changes. Without a C compiler the
# build goes on without it and crbc.io.similarity uses its pure-Python path.
$(VENV)/.install-stamp: $(VENV)/.runtime-stamp crbc/io/blockmatch.c setup.py
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

# requirements-verl.txt is installed without dependencies (verl's full set would replace
# transformers and bring ray[default], wandb, ...; torch must stay as it is): see its comment.
$(VENV)/.dev-stamp: requirements-dev.txt requirements.txt requirements-verl.txt $(VENV)/.install-stamp
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-verl.txt
	touch $@

run: $(VENV)/.install-stamp
	$(PY) studio.py --server.address 127.0.0.1 --server.port $(PORT) \
	  --server.headless true --browser.gatherUsageStats false

# two test processes (pytest-xdist), each test file's tests in one of them: 11 min instead of 18
# on the 2-core machine (docs/ARCHITECTURE.md, "A test")
TEST_PROCESSES ?= 2
test: $(VENV)/.dev-stamp
	$(PY) -m pytest -q -n $(TEST_PROCESSES) --dist loadfile

# the quick loop while editing: everything but the tests marked slow (training, long runs) and
# the browser tests (headless Chromium)
test-fast: $(VENV)/.dev-stamp
	$(PY) -m pytest -q -n $(TEST_PROCESSES) --dist loadfile -m "not slow and not browser"

# every Python file of the repo (ruff finds them; .venv and generated folders are excluded)
lint: $(VENV)/.dev-stamp
	$(PY) -m ruff check .

bench: $(VENV)/.install-stamp
	$(PY) -m crbc bench

clean-venv:
	rm -rf $(VENV)

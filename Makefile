# Every target sets up what it needs in .venv (and node_modules), so each works on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The CPU wheel of this torch lies on the build machines' disk; an unpinned torch would
# pull a CUDA build of several GB. Users with their own GPU build keep theirs (torch>=2.4).
TORCH ?= torch==2.13.0

NODE_STAMP := node_modules/.package-lock.json
# Pure-Python wheels for the calculators' tests inside Pyodide (its own pytest wheel lives on
# its CDN). hypothesis: the last release with a pure wheel.
PYODIDE_WHEELS := .wheels/pyodide
PYODIDE_TEST_REQS := pytest==9.2.0 pluggy==1.7.0 iniconfig==2.3.1 packaging==26.4 \
	pygments==2.21.0 hypothesis==6.155.7 sortedcontainers==2.4.0 attrs==26.1.0
export NO_MKDOCS_2_WARNING := 1

# pytest-xdist workers for `make test` and `make check` (auto: one per core).
JOBS ?= auto

.PHONY: setup test check test-profile lint demo bench clean node chromium build serve \
	pyodide-wheels test-pyodide

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet '$(TORCH)'
	$(PY) -m pip install --quiet -e '.[test,docs,probes]'
	touch $(STAMP)

setup: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Node.js (Pyodide needs >= 18) from Debian where it is missing, then the pinned packages.
$(NODE_STAMP): package.json package-lock.json
	@command -v npm >/dev/null 2>&1 || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs npm; }
	npm ci --no-audit --no-fund
	touch $(NODE_STAMP)

node: $(NODE_STAMP)

# Headless Chromium for the browser tests, from Debian's package (never `playwright install`).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

$(PYODIDE_WHEELS)/.done: Makefile $(STAMP)
	rm -rf $(PYODIDE_WHEELS)
	$(PY) -m pip download --quiet --only-binary=:all: --no-deps --platform any \
		--python-version 3.14 --implementation py --abi none \
		--dest $(PYODIDE_WHEELS) $(PYODIDE_TEST_REQS)
	touch $@

pyodide-wheels: $(PYODIDE_WHEELS)/.done

build: $(STAMP) $(NODE_STAMP)
	$(VENV)/bin/mkdocs build --strict

serve: $(STAMP) $(NODE_STAMP)
	$(VENV)/bin/mkdocs serve --strict -a 127.0.0.1:8000

# The calculators' unit tests again, inside the pinned Pyodide under Node.
test-pyodide: $(NODE_STAMP) $(PYODIDE_WHEELS)/.done
	node tests/pyodide/run.mjs $(PYODIDE_WHEELS)

# Everything, from a clean clone: lint, then the Python suite on every core (unit tests, the
# site built once with its notebooks, the browser tests) while the Pyodide run takes what
# CPU they leave (nice 19: at nice 10 it slowed the browser tests as much as it saved; its
# log is printed after). PROFILE=thorough multiplies the hypothesis example counts by ten
# (tests/conftest.py).
test: lint chromium $(NODE_STAMP) $(PYODIDE_WHEELS)/.done
	@mkdir -p test-artifacts
	@nice -n 19 node tests/pyodide/run.mjs $(PYODIDE_WHEELS) > test-artifacts/pyodide.log 2>&1 & \
	pyodide=$$!; \
	$(PY) -m pytest -q -n $(JOBS); python=$$?; \
	wait $$pyodide; status=$$?; \
	echo "---- the calculators' tests inside Pyodide (test-artifacts/pyodide.log) ----"; \
	cat test-artifacts/pyodide.log; \
	test $$python -eq 0 -a $$status -eq 0

# For every commit, in under three minutes once set up: lint, the calculators' unit tests
# and the tests of what changed since HEAD (tests/changed.py; BASE=REV to compare with
# another revision). No site build, no browser, no Pyodide: `make test` runs those.
check: lint
	$(PY) -m pytest -q -n $(JOBS) $$($(PY) -m tests.changed $(BASE))

# Where the time of `make test` goes, from a clean clone of HEAD: installs, lint, the site
# build (each notebook), the Python suite by kind of test, the Pyodide run.
test-profile: $(STAMP)
	$(PY) -m benchmarks.test_profile

# Accuracy against published figures and speed, as medians; never run as timed tests.
bench: $(STAMP)
	$(PY) -m benchmarks.accuracy_weights
	$(PY) -m benchmarks.accuracy_training
	$(PY) -m benchmarks.speed_calculators
	$(PY) -m benchmarks.speed_leakage
	$(PY) -m benchmarks.lesson_times
	$(MAKE) --no-print-directory chromium node
	$(PY) -m benchmarks.pyodide_calculators
	$(PY) -m benchmarks.site_load
	$(PY) -m benchmarks.page_leakage

# The CLI on a real preset (the site is `make serve`).
demo: $(STAMP)
	$(PY) -m calculators envelope --model llama-3.1-8b --format bf16 --kv-format bf16 \
		--context 8192 --batch 4 --gpu l40s

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .hypothesis site node_modules .wheels \
		test-artifacts .cache

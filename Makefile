# Every target sets up what it needs in .venv (and node_modules), so each works on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The CPU wheel of this torch lies on the build machines' disk; an unpinned torch would
# pull a CUDA build of several GB. Users with their own GPU build keep theirs (torch>=2.4).
TORCH ?= torch==2.13.0

.PHONY: setup test lint demo bench clean

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

test: lint
	$(PY) -m pytest -q

# Accuracy against published figures and speed, as medians; never run as timed tests.
bench: $(STAMP)
	$(PY) -m benchmarks.accuracy_weights
	$(PY) -m benchmarks.speed_calculators

# The site issue turns this into `make serve`; until then, the CLI on a real preset.
demo: $(STAMP)
	$(PY) -m calculators envelope --model llama-3.1-8b --format bf16 --kv-format bf16 \
		--context 8192 --batch 4 --gpu l40s

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .hypothesis

# Every target sets up what it needs in .venv, so each works on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup test lint demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check calculators tests benchmarks

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

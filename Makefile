# Poolweb — the two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

## make test: create .venv, install, run the whole suite
test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

## make bench: print engine figures and write bench/results.json
bench: $(STAMP)
	$(PY) -m bench.engine

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

# Poolweb — the two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

## make run: install, migrate, create the admin and the demo once, serve on PORT (default 8000)
run: $(STAMP)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py bootstrap
	$(PY) manage.py collectstatic --noinput --verbosity 0
	$(PY) manage.py serve

## make test: install, check that the models need no new migration, run the whole suite
test: $(STAMP)
	$(PY) manage.py makemigrations --check --dry-run
	$(PY) -m pytest $(PYTEST_ARGS)

## make bench: print the engine's, the service's, the event stream's and the front door's figures; write bench/results.json
bench: $(STAMP)
	$(PY) -m bench.engine
	$(PY) -m bench.runtime
	$(PY) -m bench.events
	$(PY) -m bench.front_door

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

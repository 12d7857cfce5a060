# Poolweb — the two commands a newcomer needs: `make run` and `make test`.
# The interpreter: PYTHON=… if given, else the first of python3.13, python3.12, python3.11 on the
# PATH that runs (a pyenv shim for a version it does not enable is on the PATH but fails).
SUPPORTED := python3.13 python3.12 python3.11
ifndef PYTHON
PYTHON := $(firstword $(foreach p,$(SUPPORTED),$(shell $(p) -c 'import sys; assert (3, 11) <= sys.version_info < (3, 14)' >/dev/null 2>&1 && echo $(p))))
endif
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

BENCHES := engine runtime events front_door console config_pages metrics usage budgets request_batches slurm_bridge hosts time_rules

.PHONY: run test bench bench-smoke clean

# The server, its test tools, the client (poolctl, in client/) and the Slurm gate (poolweb-slurm,
# in bridge/): each its own distribution.
$(STAMP): pyproject.toml client/pyproject.toml bridge/pyproject.toml
	@test -n "$(PYTHON)" || { echo "No Python 3.11, 3.12 or 3.13 found on the PATH ($(SUPPORTED))." \
		"Install one, or name it: make run PYTHON=/path/to/python3.12" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]' -e './client[yaml]' -e ./bridge
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

## make bench: print the engine's, the service's, the event stream's, the front door's, the console's, the configuration pages', the metrics' and the batches' figures; write bench/results.json
bench: $(STAMP)
	@set -e; for module in $(BENCHES); do echo "$(PY) -m bench.$$module"; $(PY) -m bench.$$module; done

## make bench-smoke: the same at tiny sizes, once, on SQLite, writing nothing: does every bench still run? (CI runs it)
bench-smoke:
	@$(MAKE) --no-print-directory bench BENCH_SHORT=1

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

# Two entry points for a fresh machine; both create .venv once and reuse it.
#   make demo   -- install protosim and run every built-in scenario (one table)
#   make test   -- install protosim with test dependencies and run the test suite
# Also: make bench (benchmarks, prints tables), make slow (long property suites).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: demo test bench slow clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/protosim demo

test: $(VENV)/.installed
	$(PY) -m pytest -q

slow: $(VENV)/.installed
	$(PY) -m pytest -q -m slow

bench: $(VENV)/.installed
	$(PY) benchmarks/bench_engine.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info

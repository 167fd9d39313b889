# Two entry points for a fresh machine; both create .venv once and reuse it.
#   make demo   -- install protosim and run every built-in scenario (one table)
#   make test   -- install protosim with test dependencies and run the test suite
# Also: make bench (benchmarks, prints tables), make slow (long property suites and the large fuzz runs),
#       make fuzz / make census (the input fuzzer; a table of exit statuses per input path),
#       make kernels (build the H200 bundle in .gpu/), make silicon (tables of results/silicon).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: demo test bench slow fuzz census kernels silicon clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

# The kernel tests build real TIRx kernels: they need the apache-tvm wheel (~100 MB).
$(VENV)/.installed-kernels: $(VENV)/.installed
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test,kernels]'
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/protosim demo

# -n auto: one worker per core (pytest-xdist); --dist loadscope keeps each module in one worker,
# so a module's fixtures (kernel builds, the silicon replays) are built once.
test: $(VENV)/.installed-kernels
	$(PY) -m pytest -q -n auto --dist loadscope

slow: $(VENV)/.installed-kernels
	PROTOSIM_SLOW=1 $(PY) -m pytest -q -m slow
	PROTOSIM_SLOW=1 $(PY) -m pytest -q tests/test_ptx_models.py
	PROTOSIM_TIRX_EXAMPLES=200 $(PY) -m pytest -q tests/test_tirx_frontend.py -k builders_verdicts

# The input fuzzer alone (tests/fuzz; CI size: PROTOSIM_FUZZ_EXAMPLES=N for more), and its census table.
fuzz: $(VENV)/.installed
	PROTOSIM_FUZZ_RANDOM=1 $(PY) -m pytest -q tests/fuzz

census: $(VENV)/.installed
	$(PY) -m tests.fuzz.census --examples 150 --seed 0 --json results/fuzz/census.json --txt results/fuzz/census.txt

# Issue 15's table (full chip h200/b200, 8192x8192x4096 b200, cold run, verdicts/s, sweep 1/2/N
# workers, peak memory per row; appends to results/bench/bench.jsonl), then TIRx extraction, then
# where the full chip's memory goes stage by stage (appends to results/bench/memory.jsonl).
# BENCH_ARGS=--quick skips the two slow b200 rows.
bench: $(VENV)/.installed-kernels
	$(PY) benchmarks/bench.py $(BENCH_ARGS)
	$(PY) benchmarks/bench_tirx.py $(BENCH_ARGS)
	$(PY) benchmarks/memory_by_stage.py
	$(PY) benchmarks/lockstep_share.py

kernels: $(VENV)/.installed-kernels
	$(PY) -m kernels.toolchain.build --plan silicon --bundle .gpu

silicon: $(VENV)/.installed
	$(PY) -m kernels.report.gemm

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info

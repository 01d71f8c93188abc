# Two commands matter: `make demo` and `make test`. Each sets everything up first.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= results/demo
BUILD_DIR ?= build/wheel
PYTEST_ARGS ?=

.PHONY: all setup deps venv install demo test lint native-test clean

all: setup

setup: deps install

deps:
	@scripts/install-deps.sh

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

venv: $(BIN)/python
	$(BIN)/pip install -q "scikit-build-core>=0.8" "pydantic>=2.5" "PyYAML>=6" "numpy>=1.24" \
	  "scipy>=1.10" "psycopg[binary]>=3.1" "pyarrow>=12" "pytest>=7" "pytest-timeout>=2" \
	  "ruff>=0.4" "prometheus_client>=0.17"

# Non-editable on purpose: the wheel build compiles the native kernels into the package.
install: venv
	$(BIN)/pip install -q --no-build-isolation --no-deps --force-reinstall \
	  -C build-dir=$(BUILD_DIR) .
	@$(BIN)/fabench --version

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

test: setup lint native-test
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

clean:
	rm -rf build $(VENV) results .pytest_cache .ruff_cache

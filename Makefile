# The two commands of the README's quick start: `make demo` and `make test`.
VENV := .venv
BIN := $(VENV)/bin
export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)
export SPARK_LOCAL_IP ?= 127.0.0.1

.PHONY: setup demo test lint bench e2e

setup:
	@bash scripts/setup.sh

demo: setup
	$(BIN)/wmon demo $(DEMO_ARGS)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

test: setup lint
	$(BIN)/pytest $(PYTEST_ARGS)

e2e: setup
	$(BIN)/pytest -m e2e $(PYTEST_ARGS)

bench: setup
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

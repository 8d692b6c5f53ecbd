# The two commands of the README's quick start: `make demo` and `make test`.
VENV := .venv
BIN := $(VENV)/bin
export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)
export SPARK_LOCAL_IP ?= 127.0.0.1

.PHONY: setup demo test lint bench e2e dist

setup:
	@bash scripts/setup.sh

demo: setup
	$(BIN)/wmon demo $(DEMO_ARGS)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# The suite runs on a worker process per core (pytest-xdist; at most four, each with its own
# SparkSession), a test file on one worker; TEST_WORKERS=0 runs it in this process. The 25
# slowest tests are listed at the end, so that each run says where the suite's time goes.
TEST_WORKERS ?= auto
test: setup lint
	$(BIN)/pytest -n $(TEST_WORKERS) --maxprocesses 4 --dist loadfile --durations 25 $(PYTEST_ARGS)

e2e: setup
	$(BIN)/pytest -m e2e $(PYTEST_ARGS)

# The sdist and the wheel, with the JVM listener and the front-end libraries inside (dist/).
dist: setup
	@bash scripts/dist.sh

bench: setup
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

# The two commands of the README's quick start: `make demo` and `make test`.
VENV := .venv
BIN := $(VENV)/bin
export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)
export SPARK_LOCAL_IP ?= 127.0.0.1

.PHONY: setup setup-dev setup-tests demo test lint bench e2e dist

# Set-up in three steps, each safe to run again (scripts/setup.sh says what each installs):
# what the demo needs; the development tools in .venv; the Debian packages the tests drive
# (a browser, Prometheus, Alertmanager).
setup:
	@bash scripts/setup.sh

setup-dev:
	@bash scripts/setup.sh --dev

setup-tests:
	@bash scripts/setup.sh --tests

demo: setup
	$(BIN)/wmon demo $(DEMO_ARGS)

define LINT
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
endef

lint: setup-dev
	$(LINT)

# The suite runs on a worker process per core (pytest-xdist; at most four, each with its own
# SparkSession), a test file on one worker, in the order tests/conftest.py gives the files
# (those using Spark, the longest, first: xdist's own order, most tests first, left a Spark
# file of one test for last); TEST_WORKERS=0 runs it in this process. The 25 slowest tests are
# listed at the end, so that each run says where the suite's time goes.
TEST_WORKERS ?= auto
test: setup-tests
	$(LINT)
	$(BIN)/pytest -n $(TEST_WORKERS) --maxprocesses 4 --dist loadfile --no-loadscope-reorder \
		--durations 25 $(PYTEST_ARGS)

e2e: setup-tests
	$(BIN)/pytest -m e2e $(PYTEST_ARGS)

# The sdist and the wheel, with the JVM listener and the front-end libraries inside (dist/).
dist: setup-dev
	@bash scripts/dist.sh

bench: setup-dev
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

"""Shared fixtures: one SparkSession per test session (per worker under `make test`), real
SQLite and PostgreSQL stores."""

import os
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.stores import POSTGRES_SERVER, migrated

if TYPE_CHECKING:
    from tests.support.databases import ReusedDatabase

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Every JVM the tests start (each worker's SparkSession, and the jobs, Connect servers and
# pipelines they run as processes: spark-submit adds SPARK_SUBMIT_OPTS) compiles with the quick
# compiler only and collects with one thread: the tests' small batches never repay the
# optimizing compiler's work, and on two cores its threads slow the other worker. A Spark file
# alone, idle, one after the other: 137 and 146 s of the machine's CPU with the defaults, 115
# and 131 s with these (tests/monitor/spark/test_instrument_jvm.py).
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
# The tests' stores hold fixed dates (November 2026) and every app they serve prunes on its
# first request: keep every tier a century, so that no test's history is pruned as the calendar
# moves on. Tests of retention set their own.
for tier, longest in (("BATCHES_HOURS", "876000"), ("DAYS", "36500"), ("HOURS_DAYS", "36500")):
    os.environ[f"WMON_RETENTION_{tier}"] = longest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files that use Spark first, each kept whole and in its order: they are the longest,
    and a worker that takes one last keeps the run waiting while the others are done."""
    with_spark = {item.path for item in items if item.get_closest_marker("spark")}
    items.sort(key=lambda item: item.path not in with_spark)


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test run, with the partitioned-log source registered."""
    from pyspark.sql import SparkSession

    from streaming.partitioned_log import register

    warehouse = tempfile.mkdtemp(prefix="wmon-spark-")
    event_logs = Path(warehouse) / "event-logs"
    event_logs.mkdir()
    session = (
        # Two cores, and a failed task tried once more, as a cluster retries one (local[2]
        # would fail the query at once): test_instrument fails tasks' first attempts.
        SparkSession.builder.master("local[2,2]")
        .appName("wmon-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.driver.memory", "2g")
        # A Python worker (our source's, a foreachBatch's) waits this long for the driver to
        # accept it; 15 s by default, which a loaded 2-core machine has run past.
        .config("spark.python.authenticate.socketTimeout", "60s")
        # Spark's own event log, as a cluster writes it, for `wmon ingest` to read back;
        # uncompressed: zstd, Spark's default, cost every Spark test of a worker 8% more of the
        # machine's CPU (the JVM operator's shapes: 102-108 s, 93 s without; every codec is read
        # in tests/monitor/ingest from logs written for them).
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.compress", "false")
        .config("spark.eventLog.dir", event_logs.as_uri())
        # The JVM listener (jvm/, built by `make setup`), for tests/jvm to construct.
        .config("spark.jars", str(Path(__file__).resolve().parents[1] / "wmon/jars/wmon-spark.jar"))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_event_log(spark) -> Path:
    """The directory of the test session's own rolling event log, uncompressed."""
    directory = Path(spark.conf.get("spark.eventLog.dir").removeprefix("file:"))
    return directory / f"eventlog_v2_{spark.sparkContext.applicationId}"


@pytest.fixture
def rocksdb(spark):
    """transformWithState needs the RocksDB state store; other queries keep the default."""
    from streaming.scooters import ROCKSDB_PROVIDER

    spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    yield
    spark.conf.unset("spark.sql.streaming.stateStore.providerClass")


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """An empty directory for a partitioned log."""
    path = tmp_path / "log"
    path.mkdir()
    return path


@pytest.fixture
def checkpoint(tmp_path: Path) -> str:
    """A fresh checkpoint location for one streaming query."""
    return str(tmp_path / "checkpoint")


@pytest.fixture(scope="session")
def postgres_template() -> Iterator[str]:
    """A migrated PostgreSQL database that each test copies; unreachable PostgreSQL fails."""
    import sqlalchemy.exc

    from monitor.store.schema.engine import parse_url
    from tests.support.databases import create_database, drop_database

    try:
        url = migrated(create_database(POSTGRES_SERVER, "wmon_template"))
    except sqlalchemy.exc.OperationalError as error:
        pytest.fail(f"PostgreSQL at {POSTGRES_SERVER} is required and unreachable: {error}")
    yield parse_url(url).database
    drop_database(url)


def _empty_postgres_database() -> Iterator[str]:
    import sqlalchemy.exc

    from tests.support.databases import create_database, drop_database

    try:
        url = create_database(POSTGRES_SERVER, "wmon_test")
    except sqlalchemy.exc.OperationalError as error:
        pytest.fail(f"PostgreSQL at {POSTGRES_SERVER} is required and unreachable: {error}")
    yield url
    drop_database(url)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite store that each test copies."""
    path = tmp_path_factory.mktemp("template") / "wmon.db"
    migrated(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def postgres_store(postgres_template: str) -> Iterator["ReusedDatabase"]:
    """This worker's copy of the migrated PostgreSQL database, restored after each test
    rather than copied and dropped for each (docs/development.md: 87 tests took 99.6 s of the
    machine's CPU with a copy each, 55.0 s restored)."""
    from tests.support.databases import ReusedDatabase

    store = ReusedDatabase(POSTGRES_SERVER, postgres_template, "wmon_test")
    yield store
    store.drop()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a migrated, empty store: once on SQLite, once on PostgreSQL."""
    if request.param == "sqlite":
        shutil.copyfile(request.getfixturevalue("sqlite_template"), tmp_path / "wmon.db")
        yield f"sqlite:///{tmp_path / 'wmon.db'}"
    else:
        store = request.getfixturevalue("postgres_store")
        yield store.url
        store.restore()


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a store with no schema at all: once on SQLite, once on PostgreSQL."""
    if request.param == "sqlite":
        sqlite3.connect(tmp_path / "empty.db").close()
        yield f"sqlite:///{tmp_path / 'empty.db'}"
    else:
        yield from _empty_postgres_database()


@pytest.fixture
def engine(database_url: str):
    """An engine on the migrated store."""
    from monitor.store.schema.engine import create_engine

    engine = create_engine(database_url)
    yield engine
    engine.dispose()

"""The demo: scenarios played live into the instrumented scooter pipeline, and the dashboard.

One query per scenario (skewed backfill, idle partition, stalled partition, late burst, a
future timestamp), each reading its own topic that :func:`~streaming.player.play_in_rounds`
writes round after round, each the offline-scooter pipeline of the Bird story with the monitor
attached; the dashboard (served by whoever runs the demo: `wmon demo`) shows the store they
write. Everything stops cleanly on Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from streaming.log import PartitionedLog
from streaming.player import play_in_rounds
from streaming.scenarios import SCENARIOS

DEMO_SCENARIOS = (
    "skewed_backfill",
    "idle_partition",
    "stalled_partition",
    "late_burst",
    "future_timestamp",
)
QUERY_PREFIX = "scooters_"
# The scenarios are sized for a delay of about 10 s; a scooter silent for a minute is offline.
DELAY = "10 seconds"
OFFLINE_AFTER_MS = 60_000
REPORT_EVERY_S = 10.0


class DemoError(Exception):
    """The demo cannot start; the message says why."""


class Dashboard(Protocol):
    """What the demo needs of the dashboard beside it: its port, its overview, a way to stop."""

    port: int

    def overview(self) -> dict[str, Any]:
        """The body of GET /api/queries: `queries`, or `error` when the store cannot be read."""
        ...

    def stop(self) -> None:
        """Stop serving."""
        ...


@dataclass(frozen=True)
class DemoOptions:
    """What `wmon demo` runs: where, for how long, which scenarios, and the dashboard's address."""

    workdir: Path
    seconds: int = 0
    scenarios: tuple[str, ...] = DEMO_SCENARIOS
    partitions: int = 4
    rate: float = 20.0
    round_seconds: float = 60.0
    trigger_seconds: float = 5.0
    idle_timeout: float = 10.0
    stall_timeout: float = 30.0
    host: str = "127.0.0.1"
    port: int = 5000
    database_url: str | None = None  # None: the configured store (`wmon demo` names its own)
    jar: Path | None = None  # wmon-spark.jar: the instrumented operator measures in the JVM

    def __post_init__(self) -> None:
        unknown = [name for name in self.scenarios if name not in SCENARIOS]
        if unknown or not self.scenarios:
            known = ", ".join(sorted(SCENARIOS))
            raise ValueError(f"unknown scenario {', '.join(unknown) or '(none)'}; known: {known}")


def run_demo(options: DemoOptions, serve: Callable[[DemoOptions], Dashboard]) -> None:
    """Run the demo, with the dashboard that `serve` starts, until Ctrl-C (or options.seconds),
    printing each query's status."""
    workdir = options.workdir.resolve()
    server = serve(options)
    stop = threading.Event()
    sources = _start_players(PartitionedLog(workdir / "log"), stop, options)
    spark = _start_spark(options.jar)
    handle = _attach_monitor(spark, options)
    queries: list[Any] = []
    try:
        queries = [_start_query(spark, workdir, name, options, sources[name]) for name in sources]
        _print_running(handle.database_url, server.port, options)
        _watch(queries, server, options.seconds)
    finally:
        _shut_down(stop, queries, handle, server, spark)


def _start_players(
    log: PartitionedLog, stop: threading.Event, options: DemoOptions
) -> dict[str, dict[str, str]]:
    """Play every scenario into a topic of its own until `stop`; each one's source options."""
    print(f"demo: playing {', '.join(options.scenarios)} into {log.root}", flush=True)
    return {name: _start_player(log, name, stop, options) for name in options.scenarios}


def _start_spark(jar: Path | None) -> Any:
    """The demo's SparkSession, with the state store that transformWithState needs and, if
    given, wmon-spark.jar on its class path."""
    from streaming.scooters import ROCKSDB_PROVIDER

    where = "in the JVM, with wmon-spark.jar" if jar else "in Python (no wmon-spark.jar)"
    print(f"demo: starting Spark; the instrumented operator measures {where}...", flush=True)
    # Two cores run five stateful queries: fewer state partitions, fewer tasks per batch.
    spark = spark_session(shuffle_partitions=2, config={"spark.jars": str(jar)} if jar else None)
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    return spark


def _attach_monitor(spark: Any, options: DemoOptions) -> Any:
    """The monitor, attached to the session with the demo's store and timeouts."""
    import monitor

    return monitor.attach(
        spark,
        options.database_url,
        idle_timeout=options.idle_timeout,
        stall_timeout=options.stall_timeout,
    )


def _print_running(database_url: str, port: int, options: DemoOptions) -> None:
    """Where the queries are stored and the dashboard served, and how the demo stops."""
    print(f"demo: queries are monitored in {database_url}")
    print(f"demo: dashboard on http://{options.host}:{port}/", flush=True)
    print(
        f"demo: running for {options.seconds} s"
        if options.seconds
        else "demo: press Ctrl-C to stop",
        flush=True,
    )


def _shut_down(
    stop: threading.Event, queries: list[Any], handle: Any, server: Dashboard, spark: Any
) -> None:
    """Stop the players, the dashboard (its alert evaluation with it: the demo's own stop is
    no problem to alert on), the queries between batches, the monitor and Spark."""
    stop.set()
    server.stop()
    for query in queries:
        stop_between_batches(query)
    detached = handle.detach()
    spark.stop()
    _print_summary(handle, detached)


def _start_player(
    log: PartitionedLog, name: str, stop: threading.Event, options: DemoOptions
) -> dict[str, str]:
    """Play one scenario in rounds on a background thread; its source options."""
    rounds = play_in_rounds(
        log,
        name,
        stop=stop,
        topic=name,
        round_seconds=options.round_seconds,
        rate=options.rate,
        partitions=options.partitions,
        trigger_seconds=options.trigger_seconds,
    )
    # The first round is written here, so the query starts with a backlog and the read
    # limits that give the scenario its shape (which partition is fast, which held back).
    first = next(rounds)
    threading.Thread(target=_drain, args=(rounds,), name=f"player-{name}", daemon=True).start()
    return first.source_options(log.root) | {"subscribe": name}


def _drain(rounds: Iterator[Any]) -> None:
    for _ in rounds:
        pass


def _start_query(
    spark: Any, workdir: Path, name: str, options: DemoOptions, source: dict[str, str]
) -> Any:
    """The instrumented scooter pipeline over one scenario's topic."""
    from streaming.scooters import BufferedOfflineDetector, scooter_pipeline

    checkpoint = str(workdir / "checkpoints" / name)
    pipeline = scooter_pipeline(
        spark,
        source["path"],
        checkpoint,
        BufferedOfflineDetector(OFFLINE_AFTER_MS),
        options=source,
        delay=DELAY,
    )
    return (
        pipeline.writeStream.queryName(QUERY_PREFIX + name)
        .format("noop")
        .outputMode("append")
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime=f"{options.trigger_seconds:g} seconds")
        .start()
    )


def spark_session(
    app_name: str = "wmon-demo",
    shuffle_partitions: int = 4,
    config: Mapping[str, str] | None = None,
) -> Any:
    """A local SparkSession whose Python workers use this interpreter, with `config` too."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from streaming.partitioned_log import register

    builder = (
        SparkSession.builder.master("local[*]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        # Spark's console progress bars would interleave with the demo's own status lines.
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    )
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def stop_between_batches(query: Any, timeout: float = 15.0) -> None:
    """Stop a query once its running batch is done, so Spark does not abort a write midway."""
    deadline = time.monotonic() + timeout
    while query.isActive and query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(0.05)
    query.stop()


def _interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def _stop_on_signals() -> None:
    """Ctrl-C and SIGTERM end the watch, and the queries then stop between batches."""
    # PySpark's own Ctrl-C handler cancels every running job first, which fails a query
    # midway through its batch.
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)


def _watch(queries: list[Any], dashboard: Dashboard, seconds: int) -> None:
    """Print every query's status as the dashboard's overview has it, until stopped."""
    _stop_on_signals()
    deadline = time.monotonic() + seconds if seconds else None
    next_report = time.monotonic() + REPORT_EVERY_S
    try:
        while all(q.isActive for q in queries) and (
            deadline is None or time.monotonic() < deadline
        ):
            if time.monotonic() >= next_report:
                next_report += REPORT_EVERY_S
                for line in status_lines(dashboard):
                    print(line, flush=True)
            time.sleep(0.2)
    except KeyboardInterrupt:
        print("\ndemo: stopping", flush=True)
    for query in queries:
        if not query.isActive and query.exception() is not None:
            print(f"demo: {query.name} failed: {query.exception()}", file=sys.stderr)


def status_lines(dashboard: Dashboard) -> list[str]:
    """One line per query of the dashboard's overview: status, batch, skew, late records."""
    overview = dashboard.overview()
    if "error" in overview:
        return [f"demo: the dashboard cannot read the store: {overview['error']}"]
    return [_status_line(entry) for entry in overview["queries"]]


def _status_line(entry: dict[str, Any]) -> str:
    skew = entry["skew_ms"]
    return (
        f"{entry['name']}: {entry['status']}, batch {_or_dash(entry['last_batch_id'])}, "
        f"skew {'-' if skew is None else f'{skew / 1000:.1f} s'}, "
        f"late records {entry['late_records']}, offset lag {_or_dash(entry['offset_lag'])}"
    )


def _or_dash(value: object) -> str:
    """A figure, or - before a query has one (no batch yet)."""
    return "-" if value is None else str(value)


def _print_summary(handle: Any, detached: bool) -> None:
    stats = handle.stats()
    unwritten = "" if detached else f" ({stats.pending} could not be written)"
    print(f"demo: stored {stats.written} events in {handle.database_url}{unwritten}")
    print(
        f"demo: inspect them with: wmon queries --database-url {handle.database_url} "
        f"(and wmon serve, wmon partitions {QUERY_PREFIX}{DEMO_SCENARIOS[0]} …)"
    )

"""Attach the monitor to a SparkSession: a listener feeding a background store writer, and a
watch telling of the batches in flight."""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from typing import Any

import sqlalchemy as sa

from monitor.collect.sender import HttpSender
from monitor.collect.writer import BufferedWriter, StoreWriter, WriterStats
from monitor.config import load_settings
from monitor.health.predicates import Timeouts
from monitor.spark.instrument import interval_ms
from monitor.spark.listener import WatermarkListener
from monitor.spark.running import RunningWatch
from monitor.spark.sessions import application_id
from monitor.spark.timer_watch import TimerWatch
from monitor.spark.triggers import trigger_of
from monitor.store.schema.engine import create_engine, display_url
from monitor.store.write.writes import write_events

log = logging.getLogger(__name__)


class MonitorHandle:
    """A running attachment: flush it, read its stats, detach it; database_url is where events
    go (a store's URL without its password, or the collector's), engine the store's, if any."""

    def __init__(
        self,
        spark: Any,
        listener: WatermarkListener,
        writer: BufferedWriter,
        engine: sa.Engine | None,
        destination: str,
    ) -> None:
        self._spark, self.listener, self._writer, self.engine = spark, listener, writer, engine
        self.database_url = destination
        self.attached = True
        self._watches: list[TimerWatch | RunningWatch] = []

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until everything Spark has told of so far is in the store: a stopped query's last
        batches and its end included, which Spark announces after `awaitTermination` returns.
        False if that did not happen within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        ended = self._await_terminations(min(timeout, 10.0))
        return self._writer.flush(max(deadline - time.monotonic(), 0.0)) and ended

    def stats(self) -> WriterStats:
        """Counters: written, pending, dropped, rejected (unreadable or unstorable), retries."""
        stats = self._writer.stats()
        return dataclasses.replace(stats, rejected=stats.rejected + self.listener.rejected)

    def detach(self, timeout: float = 30.0) -> bool:
        """Stop listening, write what is pending and close; False if events were left unwritten."""
        if not self.attached:
            return True
        for watch in self._watches:
            watch.stop()
        if not self._await_terminations(min(timeout, 10.0)):
            log.warning(
                "wmon: detached before Spark reported the end of runs %s",
                sorted(self.listener.running_runs()),
            )
        self._spark.streams.removeListener(self.listener)
        self.attached = False
        closed = self._writer.close(timeout)
        if self.engine is not None:
            self.engine.dispose()
        return closed

    def watch_running(self) -> RunningWatch:
        """Tell of each query's batch in flight while it runs (monitor.spark.running)."""
        watch = RunningWatch(self._spark, self._writer.submit)
        self._watches.append(watch)
        return watch

    def watch_timers(
        self, query: Any, checkpoint: str, interval: float = 30.0, due_within: str = "30 minutes"
    ) -> TimerWatch:
        """Snapshot the query's pending timers from its checkpoint every `interval` seconds."""
        if self.engine is None:
            raise ValueError(
                "timer snapshots are stored directly: attach with a database URL to watch timers"
            )
        watch = TimerWatch(
            self._spark, query, checkpoint, self._writer.submit, interval, interval_ms(due_within)
        )
        self._watches.append(watch)
        return watch

    def _await_terminations(self, timeout: float) -> bool:
        """Spark announces a stopped query's end asynchronously: give that event time to come.
        False if a run Spark no longer runs has still not been reported ended."""
        deadline = time.monotonic() + timeout
        while True:
            running = self.listener.running_runs()
            if not running or running <= {str(query.runId) for query in self._spark.streams.active}:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def __enter__(self) -> MonitorHandle:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.detach()


def _is_collector(url: str | None) -> bool:
    return url is not None and url.lower().startswith(("http://", "https://"))


def attach(
    spark: Any,
    database_url: str | None = None,
    *,
    token: str | None = None,
    buffer_size: int | None = None,
    idle_timeout: float | None = None,
    stall_timeout: float | None = None,
) -> MonitorHandle:
    """Record every streaming query of `spark` in the store at `database_url`, or post them to
    the collector of `wmon serve` when it is an http(s):// URL (with `token`, default
    WMON_INGEST_TOKEN) for drivers that cannot reach the store.

    What is not given comes from the WMON_ settings; timeouts are in seconds: a partition with
    no new data for `idle_timeout` is idle, one that does not advance for `stall_timeout`
    while work waits is stalled (through a collector, the server's own settings decide).
    """
    settings = load_settings()
    capacity = buffer_size or settings.buffer_size
    if _is_collector(database_url):
        assert database_url is not None
        if idle_timeout is not None or stall_timeout is not None:
            raise ValueError("through a collector, the timeouts are the server's to set")
        sender = HttpSender(
            database_url,
            token or settings.ingest_token,
            sender=application_id(spark),
            capacity=capacity,
        )
        listener = WatermarkListener(
            sender.submit, forward_json=True, trigger_of=functools.partial(trigger_of, spark)
        )
        spark.streams.addListener(listener)
        log.info("wmon: monitoring streaming queries through %s", sender.endpoint)
        handle = MonitorHandle(spark, listener, sender, None, database_url)
        handle.watch_running()
        return handle
    timeouts = Timeouts(
        idle_ms=int(1000 * (settings.idle_timeout_s if idle_timeout is None else idle_timeout)),
        stall_ms=int(1000 * (settings.stall_timeout_s if stall_timeout is None else stall_timeout)),
    )
    engine = create_engine(database_url or settings.database_url)
    writer = StoreWriter(
        engine,
        capacity=capacity,
        write=functools.partial(write_events, timeouts=timeouts),
    )
    # Spark's JSON goes to the writer, which can then set aside what the store refuses.
    listener = WatermarkListener(
        writer.submit, forward_json=True, trigger_of=functools.partial(trigger_of, spark)
    )
    spark.streams.addListener(listener)
    log.info("wmon: monitoring streaming queries into %s", display_url(engine))
    handle = MonitorHandle(spark, listener, writer, engine, display_url(engine))
    handle.watch_running()
    return handle

"""The series of /metrics, each once: its name, type and help, its scope (what it has samples
for, with its label names) and what it reads from each of the scope's rows, None for no sample
(Prometheus has no null). A scrape writes them in this order. Times are seconds since the
epoch, durations seconds, as Prometheus' conventions have them. docs/prometheus.md lists these
series and no other (a test compares them)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic

from monitor.durations import age_ms
from monitor.health.backlog import Backlog, QueryBacklog
from web.api.metrics.exposition import COUNTER, GAUGE
from web.api.metrics.scopes import (
    ALERTS,
    EVENT_TIMES,
    HEALTH,
    NEWEST_BATCH,
    OPERATORS,
    OWN,
    PACE,
    PARTITION_BACKLOGS,
    PARTITION_VERDICTS,
    PARTITIONS,
    QUERY,
    QUERY_BACKLOG,
    STANDING,
    STATUSES,
    TIMERS,
    Labels,
    Newest,
    OwnHealth,
    R,
    S,
    Scope,
)


@dataclass(frozen=True, eq=False)
class Series(Generic[S, R]):
    """One series: its name, type and help, its scope and what it reads from a row of it."""

    name: str
    type: str
    documentation: str
    scope: Scope[S, R]
    reads: Callable[[R], float | None]

    @property
    def labels(self) -> Labels:
        """Its label names, its scope's."""
        return self.scope.labels


def gauge(
    name: str, documentation: str, scope: Scope[S, R], reads: Callable[[R], float | None]
) -> Series[S, R]:
    """A gauge."""
    return Series(name, GAUGE, documentation, scope, reads)


def counter(
    name: str, documentation: str, scope: Scope[S, R], reads: Callable[[R], float | None]
) -> Series[S, R]:
    """A counter (its samples are written with `_total`)."""
    return Series(name, COUNTER, documentation, scope, reads)


def _seconds(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


def _catch_up_seconds(backlog: Backlog | QueryBacklog) -> float | None:
    """When a backlog will have been read, in seconds: +Inf when it does not drain
    (Prometheus has no null), none while its verdict is not known."""
    if backlog.verdict is None:
        return None
    return math.inf if backlog.catch_up_ms is None else backlog.catch_up_ms / 1000


def _ingest_lag_seconds(newest: Newest) -> float | None:
    """How long after the newest batch ended it was stored."""
    batch = newest.batch
    if batch.stored_at_ms is None:
        return None
    ended_ms = batch.batch_time_ms + (batch.trigger_duration_ms or 0)
    return max(batch.stored_at_ms - ended_ms, 0) / 1000


def _evaluation_lag_seconds(own: OwnHealth) -> float | None:
    if own.evaluated_ms is None:
        return None
    return max(own.now_ms - own.evaluated_ms, 0) / 1000


# A query's figures: all of them, or none when one of its rows cannot be read.
QUERY_SERIES = (
    gauge(
        "wmon_query_watermark_seconds",
        "Spark's event-time watermark",
        NEWEST_BATCH,
        lambda newest: _seconds(newest.batch.watermark_ms),
    ),
    gauge(
        "wmon_query_watermark_age_seconds",
        "How far the watermark is behind the wall clock (FLIP-33's watermarkLag)",
        NEWEST_BATCH,
        lambda newest: _seconds(age_ms(newest.now_ms, newest.batch.watermark_ms)),
    ),
    gauge(
        "wmon_query_watermark_skew_seconds",
        "The spread of the partition watermarks of the non-idle partitions",
        NEWEST_BATCH,
        lambda newest: _seconds(newest.batch.watermark_skew_ms),
    ),
    gauge(
        "wmon_query_flink_watermark_seconds",
        "The watermark Flink would have had: the smallest non-idle partition watermark",
        NEWEST_BATCH,
        lambda newest: _seconds(newest.batch.flink_watermark_ms),
    ),
    gauge(
        "wmon_query_watermark_stalled",
        "1 when the watermark has not advanced for the stall timeout while input waits",
        NEWEST_BATCH,
        lambda newest: newest.batch.watermark_stalled,
    ),
    gauge(
        "wmon_query_offset_lag",
        "Offsets available but not yet processed, over all source partitions",
        NEWEST_BATCH,
        lambda newest: newest.facts.offset_lag,
    ),
    gauge(
        "wmon_query_input_rows_per_second",
        "Spark's input rate of the last batch",
        NEWEST_BATCH,
        lambda newest: newest.batch.input_rows_per_second,
    ),
    gauge(
        "wmon_query_processed_rows_per_second",
        "Spark's processing rate of the last batch",
        NEWEST_BATCH,
        lambda newest: newest.batch.processed_rows_per_second,
    ),
    gauge(
        "wmon_query_last_batch_id",
        "The id of the newest batch",
        NEWEST_BATCH,
        lambda newest: newest.batch.batch_id,
    ),
    gauge(
        "wmon_query_last_batch_timestamp_seconds",
        "When the newest batch ran",
        NEWEST_BATCH,
        lambda newest: _seconds(newest.batch.batch_time_ms),
    ),
    gauge(
        "wmon_query_ingest_lag_seconds",
        "How long after the newest batch ended it was stored: the way in's delay",
        NEWEST_BATCH,
        _ingest_lag_seconds,
    ),
    gauge(
        "wmon_query_last_progress_timestamp_seconds",
        "When the query last reported anything",
        QUERY,
        lambda exported: _seconds(exported.summary.query.updated_at_ms),
    ),
    gauge(
        "wmon_query_clock_ahead_seconds",
        "How far ahead of the monitor's clock the time the job last claimed was",
        QUERY,
        lambda exported: _seconds(exported.summary.query.clock_ahead_ms),
    ),
    gauge(
        "wmon_query_clock_behind_seconds",
        "How far behind its arrival the time the job last claimed was (events that arrive "
        "as they happen)",
        QUERY,
        lambda exported: _seconds(exported.summary.query.clock_behind_ms),
    ),
    gauge(
        "wmon_query_pending_timers",
        "Timers registered and not yet fired",
        TIMERS,
        lambda timers: timers.pending,
    ),
    gauge(
        "wmon_query_next_timer_expiry_timestamp_seconds",
        "When the earliest pending timer is due",
        TIMERS,
        lambda timers: _seconds(timers.next_expiry_ms),
    ),
    gauge(
        "wmon_query_backlog_seconds",
        "How long the oldest record not yet read of any partition has been available",
        QUERY_BACKLOG,
        lambda backlog: _seconds(backlog.age_ms),
    ),
    gauge(
        "wmon_query_catch_up_seconds",
        "When every partition's backlog will have been read at the current rates "
        "(+Inf: a partition does not catch up, or keeps pace with a steady backlog; none "
        "while a verdict is not known yet)",
        QUERY_BACKLOG,
        _catch_up_seconds,
    ),
    gauge(
        "wmon_query_trigger_interval_seconds",
        "The interval of the query's periodic trigger (0: each batch as soon as the last "
        "ends), where the way in read it",
        PACE,
        lambda pace: _seconds(pace.interval_ms),
    ),
    gauge(
        "wmon_query_batch_duration_seconds",
        "The median duration of the query's batches over the last 5 minutes of batches",
        PACE,
        lambda pace: _seconds(pace.duration_ms),
    ),
    gauge(
        "wmon_query_behind_trigger",
        "1 when the query's batches over the last 5 minutes took longer than its trigger's "
        "interval (their median)",
        PACE,
        lambda pace: pace.behind,
    ),
    gauge(
        "wmon_operator_state_rows",
        "Rows in the stateful operator's state (left out where Spark does not count "
        "them: trackTotalNumberOfRows=false)",
        OPERATORS,
        lambda growth: growth.rows,
    ),
    gauge(
        "wmon_operator_state_memory_bytes",
        "Memory the operator's state stores use",
        OPERATORS,
        lambda growth: growth.memory_bytes,
    ),
    gauge(
        "wmon_operator_state_store_bytes",
        "Size of the operator's RocksDB SST files",
        OPERATORS,
        lambda growth: growth.store_bytes,
    ),
    gauge(
        "wmon_operator_state_snapshot_lag",
        "Versions the operator's state store partition with the oldest uploaded "
        "snapshot is behind the batch",
        OPERATORS,
        lambda growth: growth.snapshot_lag,
    ),
    gauge(
        "wmon_operator_state_growing",
        "1 when the operator's state never fell and ended higher over the last 5 "
        "minutes of batches",
        OPERATORS,
        lambda growth: growth.growing,
    ),
    gauge(
        "wmon_partition_watermark_seconds",
        "The partition's watermark W_p: its max event time minus the watermark delay",
        EVENT_TIMES,
        lambda measured: _seconds(measured.times.partition_watermark_ms),
    ),
    gauge(
        "wmon_partition_max_event_time_seconds",
        "The latest event time the partition has shown",
        EVENT_TIMES,
        lambda measured: _seconds(measured.times.max_event_time_ms),
    ),
    gauge(
        "wmon_partition_time_lag_seconds",
        "How far the partition's max event time is behind its batch's time",
        EVENT_TIMES,
        lambda measured: _seconds(measured.times.time_lag_ms),
    ),
    gauge(
        "wmon_partition_offset_lag",
        "Offsets available but not yet processed in the partition",
        PARTITIONS,
        lambda partition: partition.offset_lag,
    ),
    counter(
        "wmon_partition_late_records",
        "Records dropped as late, counted by the instrumented operator",
        EVENT_TIMES,
        lambda measured: measured.times.late_records_total,
    ),
    counter(
        "wmon_partition_future_records",
        "Records more than the tolerance ahead of their batch's time, counted by the "
        "instrumented operator",
        EVENT_TIMES,
        lambda measured: measured.times.future_records_total,
    ),
    gauge(
        "wmon_partition_watermark_driver",
        "1 for the partition whose record set the query's watermark in its newest batch",
        EVENT_TIMES,
        lambda measured: measured.drives,
    ),
    gauge(
        "wmon_partition_idle",
        "1 when the partition is idle",
        PARTITIONS,
        lambda partition: partition.idle,
    ),
    gauge(
        "wmon_partition_stalled",
        "1 when the partition is stalled",
        PARTITIONS,
        lambda partition: partition.stalled,
    ),
    gauge(
        "wmon_partition_rewound",
        "1 when the partition is rewound",
        PARTITIONS,
        lambda partition: partition.rewound,
    ),
    gauge(
        "wmon_partition_backlog_seconds",
        "How long the partition's oldest record not yet read has been available (0: nothing waits)",
        PARTITION_BACKLOGS,
        lambda backlog: _seconds(backlog.age_ms),
    ),
    gauge(
        "wmon_partition_catch_up_seconds",
        "When the partition's backlog will have been read at the current rates "
        "(+Inf: it does not catch up, or keeps pace with a steady backlog; none while its "
        "verdict is not known yet)",
        PARTITION_BACKLOGS,
        _catch_up_seconds,
    ),
    gauge(
        "wmon_partition_backlog_verdict",
        "1 for the partition's backlog verdict (ok, catching_up, falling_behind, stalled, "
        "stopped, rewound), 0 for the others",
        PARTITION_VERDICTS,
        lambda same: same,
    ),
)

# What a scrape says of every query, its figures readable or not.
STANDING_SERIES = (
    gauge(
        "wmon_query_status",
        "1 for the query's status (active, idle, terminated, failed), 0 for the others",
        STATUSES,
        lambda same: same,
    ),
    gauge(
        "wmon_query_health",
        "The query's health as the dashboard judges it, in its label (failed, error, stalled, "
        "lagging, idle, waiting, healthy, terminated): one series a query, always 1",
        HEALTH,
        lambda standing: 1,
    ),
    gauge(
        "wmon_query_unreadable",
        "1 when the query's stored rows cannot be read; its other figures are left out",
        STANDING,
        lambda standing: standing.unreadable,
    ),
)

ALERT_SERIES = (
    gauge(
        "wmon_alerts",
        "Live alerts (pending or firing) of the built-in rules",
        ALERTS,
        lambda count: count,
    ),
)

OWN_SERIES = (
    gauge(
        "wmon_store_up",
        "1 when the store could be read",
        OWN,
        lambda own: own.store_up,
    ),
    gauge(
        "wmon_rejected_events",
        "Events refused as invalid and set aside, to list and replay with `wmon rejected`",
        OWN,
        lambda own: own.rejected,
    ),
    gauge(
        "wmon_exported_queries",
        "Queries in this scrape: running, or recently ended",
        OWN,
        lambda own: own.exported,
    ),
    gauge(
        "wmon_alert_evaluation_lag_seconds",
        "How long ago the alert rules were last evaluated, by whichever process evaluates",
        OWN,
        _evaluation_lag_seconds,
    ),
)

SERIES = (
    *QUERY_SERIES,
    *STANDING_SERIES,
    *ALERT_SERIES,
    *OWN_SERIES,
)

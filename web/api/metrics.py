"""GET /metrics: the store's latest state in Prometheus' text format.

Every scrape reads the store afresh (nothing is kept between scrapes): each running query, and
each query that ended within METRICS_KEEP_ENDED_S, with its newest batch, partitions, event
times and timers, and the live alerts. The text is written here, as prometheus_client writes
it (:func:`exposition`). Times are seconds since the epoch, durations seconds, as Prometheus'
conventions have them. A store that cannot be read is a 503 saying why, which still carries
the monitor's own series (`wmon_store_up 0`). The monitor's own health also says how long ago
the alert rules were evaluated and, per query, how long its newest batch took to reach the
store.
[Prometheus](../docs/prometheus.md) lists every series.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, Response, current_app
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.utils import floatToGoString

from monitor.alerts.runner import LEASE
from monitor.durations import age_ms
from monitor.health.backlog import Verdict
from monitor.health.facts import StoredStatus
from monitor.health.status import Status
from monitor.store.packed.batch_event_times import StoredEventTimes, newest_measured
from monitor.store.read.alerts import live_alert_counts
from monitor.store.read.queries import exported_queries
from monitor.store.read.summary import QuerySummary
from monitor.store.schema.engine import STORE_FAILURES, unusable
from monitor.store.schema.isolation import is_outage, unreadable_reason
from monitor.store.signals.leases import job_done_at
from monitor.store.write.rejected import count_rejected
from web import db
from web.api.payloads import Lens
from web.background.evaluation import evaluator
from web.guards.errors import RETRY_AFTER_S

bp = Blueprint("metrics", __name__)

QUERY_LABELS = ["query", "query_id"]
PARTITION_LABELS = [*QUERY_LABELS, "topic", "partition"]


def _seconds(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


def _catch_up_seconds(ms: int | None) -> float:
    """A catch-up time in seconds; one that does not come is +Inf (Prometheus has no null)."""
    return math.inf if ms is None else ms / 1000


@dataclass
class Family:
    """One metric family of a scrape: a gauge or a counter, its label names, and its samples
    as label values and a value, in the order they were added."""

    name: str
    documentation: str
    type: str
    labels: list[str]
    samples: list[tuple[tuple[str, ...], float]] = field(default_factory=list)

    def add_sample(self, labels: Sequence[str], value: float) -> None:
        """A sample with these label values, in the order of the family's label names."""
        self.samples.append((tuple(labels), value))


class Families:
    """The metric families of one scrape, filled query by query."""

    def __init__(self) -> None:
        self.all: list[Family] = []

    def gauge(self, name: str, documentation: str, labels: list[str]) -> Family:
        """A new gauge family of this scrape."""
        return self._new(Family(name, documentation, "gauge", labels))

    def counter(self, name: str, documentation: str, labels: list[str]) -> Family:
        """A new counter family of this scrape (its samples are named with `_total`)."""
        return self._new(Family(name, documentation, "counter", labels))

    def _new(self, family: Family) -> Family:
        self.all.append(family)
        return family


class Samples:
    """One query's samples, added to their families only once all of them are made: a bad
    row of the query leaves none of its figures half written."""

    def __init__(self) -> None:
        self.made: list[tuple[Family, Sequence[str], float]] = []

    def add(self, family: Family, labels: Sequence[str], value: Any) -> None:
        """A sample, unless the value is unknown: Prometheus has no null."""
        if value is not None:
            self.made.append((family, labels, float(value)))

    def commit(self) -> None:
        """Add the samples to their families."""
        for family, labels, value in self.made:
            family.add_sample(labels, value)


@dataclass(frozen=True)
class Exported:
    """A query as a scrape exports it: its summary, judged, and its newest measured batch's
    partitions' event times, by partition."""

    summary: QuerySummary
    event_times: Mapping[str, StoredEventTimes]


def query_families(queries: Iterable[Exported], now_ms: int, families: Families) -> None:
    """The per-query and per-partition families; a query whose rows cannot be read or
    exported has only its stored status, its health (`error`) and `wmon_query_unreadable` 1."""
    figures = _QueryFamilies(families)
    status = families.gauge(
        "wmon_query_status",
        "1 for the query's status (active, idle, terminated, failed), 0 for the others",
        [*QUERY_LABELS, "status"],
    )
    health = families.gauge(
        "wmon_query_health",
        "The query's health as the dashboard judges it, in its label (failed, error, stalled, "
        "lagging, idle, waiting, healthy, terminated): one series a query, always 1",
        [*QUERY_LABELS, "status"],
    )
    unreadable = families.gauge(
        "wmon_query_unreadable",
        "1 when the query's stored rows cannot be read; its other figures are left out",
        QUERY_LABELS,
    )
    for exported in queries:
        query, judged = exported.summary.query, exported.summary.judgment.status
        labels = [query.name or query.id, query.id]
        samples = Samples()
        why = exported.summary.facts.unreadable
        if why is None:
            try:
                figures.add(exported, labels, now_ms, samples)
            except Exception as error:  # a bad row of this query: its figures alone
                if is_outage(error):
                    raise
                why, judged = unreadable_reason(error), Status.ERROR
                samples = Samples()
        for stored in StoredStatus:
            samples.add(status, [*labels, stored.value], query.status == stored)
        samples.add(health, [*labels, judged.label], 1)
        samples.add(unreadable, labels, why is not None)
        samples.commit()


class _QueryFamilies:
    """The per-query families of the newest batch and timers, with the partitions'."""

    def __init__(self, families: Families) -> None:
        gauge = families.gauge
        self.watermark = gauge(
            "wmon_query_watermark_seconds", "Spark's event-time watermark", QUERY_LABELS
        )
        self.age = gauge(
            "wmon_query_watermark_age_seconds",
            "How far the watermark is behind the wall clock (FLIP-33's watermarkLag)",
            QUERY_LABELS,
        )
        self.skew = gauge(
            "wmon_query_watermark_skew_seconds",
            "The spread of the partition watermarks of the non-idle partitions",
            QUERY_LABELS,
        )
        self.flink = gauge(
            "wmon_query_flink_watermark_seconds",
            "The watermark Flink would have had: the smallest non-idle partition watermark",
            QUERY_LABELS,
        )
        self.stalled = gauge(
            "wmon_query_watermark_stalled",
            "1 when the watermark has not advanced for the stall timeout while input waits",
            QUERY_LABELS,
        )
        self.offset_lag = gauge(
            "wmon_query_offset_lag",
            "Offsets available but not yet processed, over all source partitions",
            QUERY_LABELS,
        )
        self.input_rate = gauge(
            "wmon_query_input_rows_per_second", "Spark's input rate of the last batch", QUERY_LABELS
        )
        self.processed_rate = gauge(
            "wmon_query_processed_rows_per_second",
            "Spark's processing rate of the last batch",
            QUERY_LABELS,
        )
        self.batch_id = gauge(
            "wmon_query_last_batch_id", "The id of the newest batch", QUERY_LABELS
        )
        self.batch_time = gauge(
            "wmon_query_last_batch_timestamp_seconds", "When the newest batch ran", QUERY_LABELS
        )
        self.ingest_lag = gauge(
            "wmon_query_ingest_lag_seconds",
            "How long after the newest batch ended it was stored: the way in's delay",
            QUERY_LABELS,
        )
        self.progress = gauge(
            "wmon_query_last_progress_timestamp_seconds",
            "When the query last reported anything",
            QUERY_LABELS,
        )
        self.clock_ahead = gauge(
            "wmon_query_clock_ahead_seconds",
            "How far ahead of the monitor's clock the time the job last claimed was",
            QUERY_LABELS,
        )
        self.clock_behind = gauge(
            "wmon_query_clock_behind_seconds",
            "How far behind its arrival the time the job last claimed was (events that arrive "
            "as they happen)",
            QUERY_LABELS,
        )
        self.pending = gauge(
            "wmon_query_pending_timers", "Timers registered and not yet fired", QUERY_LABELS
        )
        self.next_expiry = gauge(
            "wmon_query_next_timer_expiry_timestamp_seconds",
            "When the earliest pending timer is due",
            QUERY_LABELS,
        )
        self.backlog = gauge(
            "wmon_query_backlog_seconds",
            "How long the oldest record not yet read of any partition has been available",
            QUERY_LABELS,
        )
        self.catch_up = gauge(
            "wmon_query_catch_up_seconds",
            "When every partition's backlog will have been read at the current rates "
            "(+Inf: a partition does not catch up, or keeps pace with a steady backlog; none "
            "while a verdict is not known yet)",
            QUERY_LABELS,
        )
        self.trigger_interval = gauge(
            "wmon_query_trigger_interval_seconds",
            "The interval of the query's periodic trigger (0: each batch as soon as the last "
            "ends), where the way in read it",
            QUERY_LABELS,
        )
        self.batch_duration = gauge(
            "wmon_query_batch_duration_seconds",
            "The median duration of the query's batches over the last 5 minutes of batches",
            QUERY_LABELS,
        )
        self.behind_trigger = gauge(
            "wmon_query_behind_trigger",
            "1 when the query's batches over the last 5 minutes took longer than its trigger's "
            "interval (their median)",
            QUERY_LABELS,
        )
        operator_labels = [*QUERY_LABELS, "operator", "operator_index"]
        self.state = {
            "rows": gauge(
                "wmon_operator_state_rows",
                "Rows in the stateful operator's state (left out where Spark does not count "
                "them: trackTotalNumberOfRows=false)",
                operator_labels,
            ),
            "memory_bytes": gauge(
                "wmon_operator_state_memory_bytes",
                "Memory the operator's state stores use",
                operator_labels,
            ),
            "store_bytes": gauge(
                "wmon_operator_state_store_bytes",
                "Size of the operator's RocksDB SST files",
                operator_labels,
            ),
            "snapshot_lag": gauge(
                "wmon_operator_state_snapshot_lag",
                "Versions the operator's state store partition with the oldest uploaded "
                "snapshot is behind the batch",
                operator_labels,
            ),
            "growing": gauge(
                "wmon_operator_state_growing",
                "1 when the operator's state never fell and ended higher over the last 5 "
                "minutes of batches",
                operator_labels,
            ),
        }
        self.partitions = _PartitionFamilies(families)

    def add(self, exported: Exported, labels: list[str], now_ms: int, samples: Samples) -> None:
        """The query's samples, its partitions' too."""
        summary = exported.summary
        state, timers = summary.facts, summary.timers
        samples.add(self.progress, labels, _seconds(summary.query.updated_at_ms))
        samples.add(self.clock_ahead, labels, _seconds(summary.query.clock_ahead_ms))
        samples.add(self.clock_behind, labels, _seconds(summary.query.clock_behind_ms))
        if timers is not None:
            samples.add(self.pending, labels, timers.pending)
            samples.add(self.next_expiry, labels, _seconds(timers.next_expiry_ms))
        batch = summary.latest
        if batch is None:
            return
        samples.add(self.watermark, labels, _seconds(batch.watermark_ms))
        samples.add(self.age, labels, _seconds(age_ms(now_ms, batch.watermark_ms)))
        samples.add(self.skew, labels, _seconds(batch.watermark_skew_ms))
        samples.add(self.flink, labels, _seconds(batch.flink_watermark_ms))
        samples.add(self.stalled, labels, batch.watermark_stalled)
        samples.add(self.offset_lag, labels, state.offset_lag)
        samples.add(self.input_rate, labels, batch.input_rows_per_second)
        samples.add(self.processed_rate, labels, batch.processed_rows_per_second)
        samples.add(self.batch_id, labels, batch.batch_id)
        samples.add(self.batch_time, labels, _seconds(batch.batch_time_ms))
        if batch.stored_at_ms is not None:
            ended_ms = batch.batch_time_ms + (batch.trigger_duration_ms or 0)
            samples.add(self.ingest_lag, labels, max(batch.stored_at_ms - ended_ms, 0) / 1000)
        for growth in state.state:
            operator = [*labels, growth.operator or "", str(growth.operator_index)]
            for figure, family in self.state.items():
                samples.add(family, operator, getattr(growth, figure))
        if state.pace is not None:
            samples.add(self.trigger_interval, labels, _seconds(state.pace.interval_ms))
            samples.add(self.batch_duration, labels, _seconds(state.pace.duration_ms))
            samples.add(self.behind_trigger, labels, state.pace.behind)
        if state.backlog is not None:
            behind = state.backlog.query
            samples.add(self.backlog, labels, _seconds(behind.age_ms))
            if behind.verdict is not None:
                samples.add(self.catch_up, labels, _catch_up_seconds(behind.catch_up_ms))
        self.partitions.add(labels, exported, samples)


class _PartitionFamilies:
    """The per-partition families: offsets and health from the newest batch's partitions,
    event times from each partition's newest measurement."""

    def __init__(self, families: Families) -> None:
        gauge = families.gauge
        self.watermark = gauge(
            "wmon_partition_watermark_seconds",
            "The partition's watermark W_p: its max event time minus the watermark delay",
            PARTITION_LABELS,
        )
        self.max_event_time = gauge(
            "wmon_partition_max_event_time_seconds",
            "The latest event time the partition has shown",
            PARTITION_LABELS,
        )
        self.time_lag = gauge(
            "wmon_partition_time_lag_seconds",
            "How far the partition's max event time is behind its batch's time",
            PARTITION_LABELS,
        )
        self.offset_lag = gauge(
            "wmon_partition_offset_lag",
            "Offsets available but not yet processed in the partition",
            PARTITION_LABELS,
        )
        self.late = families.counter(
            "wmon_partition_late_records",
            "Records dropped as late, counted by the instrumented operator",
            PARTITION_LABELS,
        )
        self.future = families.counter(
            "wmon_partition_future_records",
            "Records more than the tolerance ahead of their batch's time, counted by the "
            "instrumented operator",
            PARTITION_LABELS,
        )
        self.driver = gauge(
            "wmon_partition_watermark_driver",
            "1 for the partition whose record set the query's watermark in its newest batch",
            PARTITION_LABELS,
        )
        self.flags = {
            flag: gauge(
                f"wmon_partition_{flag}", f"1 when the partition is {flag}", PARTITION_LABELS
            )
            for flag in ("idle", "stalled", "rewound")
        }
        self.backlog = gauge(
            "wmon_partition_backlog_seconds",
            "How long the partition's oldest record not yet read has been available "
            "(0: nothing waits)",
            PARTITION_LABELS,
        )
        self.catch_up = gauge(
            "wmon_partition_catch_up_seconds",
            "When the partition's backlog will have been read at the current rates "
            "(+Inf: it does not catch up, or keeps pace with a steady backlog; none while its "
            "verdict is not known yet)",
            PARTITION_LABELS,
        )
        self.verdict = gauge(
            "wmon_partition_backlog_verdict",
            "1 for the partition's backlog verdict (ok, catching_up, falling_behind, stalled, "
            "stopped, rewound), 0 for the others",
            [*PARTITION_LABELS, "verdict"],
        )

    def add(self, query_labels: list[str], exported: Exported, samples: Samples) -> None:
        """The samples of the query's partitions."""
        state, batch = exported.summary.facts, exported.summary.latest
        topics: dict[str, str] = {}
        # The facts hold one row a partition name (of two sources', the first source's).
        for row in state.latest_partitions:
            topics[row.name] = row.topic or ""
            labels = [*query_labels, *_topic_and_partition(row.topic, row.name)]
            samples.add(self.offset_lag, labels, row.offset_lag)
            for flag, family in self.flags.items():
                samples.add(family, labels, bool(getattr(row, flag)))
        behind = {} if state.backlog is None else state.backlog.by_partition()
        for name, backlog in behind.items():
            if backlog.records is None:
                continue
            labels = [*query_labels, *_topic_and_partition(topics.get(name), name)]
            samples.add(self.backlog, labels, _seconds(backlog.age_ms))
            if backlog.verdict is not None:
                samples.add(self.catch_up, labels, _catch_up_seconds(backlog.catch_up_ms))
            for verdict in Verdict:
                samples.add(self.verdict, [*labels, verdict.label], backlog.verdict is verdict)
        driver = batch.watermark_driver_partition if batch else None
        for name, times in exported.event_times.items():
            labels = [*query_labels, *_topic_and_partition(topics.get(name), name)]
            samples.add(self.watermark, labels, _seconds(times.partition_watermark_ms))
            samples.add(self.max_event_time, labels, _seconds(times.max_event_time_ms))
            samples.add(self.time_lag, labels, _seconds(times.time_lag_ms))
            samples.add(self.late, labels, times.late_records_total)
            samples.add(self.future, labels, times.future_records_total)
            samples.add(self.driver, labels, name == driver)


def _topic_and_partition(topic: str | None, name: str) -> list[str]:
    """The labels of a partition stored as `topic/partition`: the topic, and the partition
    without it, as Kafka's exporters label them."""
    if topic and name.startswith(f"{topic}/"):
        return [topic, name[len(topic) + 1 :]]
    return [topic or "", name]


def alert_family(counts: dict[tuple[str, str, str], int], families: Families) -> None:
    """The live alerts by rule, severity and state."""
    alerts = families.gauge(
        "wmon_alerts",
        "Live alerts (pending or firing) of the built-in rules",
        ["rule", "severity", "state"],
    )
    for (rule, severity, state), count in sorted(counts.items()):
        alerts.add_sample([rule, severity, state], float(count))


def own_families(
    store_up: bool,
    exported: int,
    evaluated_ms: int | None,
    rejected: int | None,
    now_ms: int,
    families: Families,
) -> None:
    """The monitor's own health; `evaluated_ms`, when the alert rules were last evaluated;
    `rejected`, how many refused events are set aside."""
    families.gauge("wmon_store_up", "1 when the store could be read", []).add_sample(
        [], 1.0 if store_up else 0.0
    )
    aside = families.gauge(
        "wmon_rejected_events",
        "Events refused as invalid and set aside, to list and replay with `wmon rejected`",
        [],
    )
    if rejected is not None:
        aside.add_sample([], float(rejected))
    families.gauge(
        "wmon_exported_queries", "Queries in this scrape: running, or recently ended", []
    ).add_sample([], float(exported))
    evaluation_lag = families.gauge(
        "wmon_alert_evaluation_lag_seconds",
        "How long ago the alert rules were last evaluated, by whichever process evaluates",
        [],
    )
    if evaluated_ms is not None:
        evaluation_lag.add_sample([], max(now_ms - evaluated_ms, 0) / 1000)


def exposition(families: Families) -> bytes:
    """The families in Prometheus' text format (0.0.4), byte for byte as prometheus_client's
    `generate_latest` writes them (label names sorted, a counter named with `_total`). The
    labels of a series are written once a scrape: a partition's are in a dozen families."""
    written: dict[tuple[tuple[str, ...], tuple[str, ...]], str] = {}
    lines: list[str] = []
    for family in families.all:
        name = f"{family.name}_total" if family.type == "counter" else family.name
        documentation = family.documentation.replace("\\", r"\\").replace("\n", r"\n")
        lines += [f"# HELP {name} {documentation}", f"# TYPE {name} {family.type}"]
        names = tuple(family.labels)
        for labels, value in family.samples:
            pairs = written.get((names, labels))
            if pairs is None:
                pairs = written[names, labels] = _label_pairs(names, labels)
            lines.append(f"{name}{pairs} {floatToGoString(value)}")
    return "".join(f"{line}\n" for line in lines).encode()


def _label_pairs(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    """`{name="value",...}` in the order of the names, values quoted; "" with no labels."""
    if not names:
        return ""
    quoted = (v.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"") for v in values)
    pairs = sorted(zip(names, quoted, strict=True))
    return "{" + ",".join(f'{name}="{value}"' for name, value in pairs) + "}"


@bp.get("/metrics")
def metrics() -> Response:
    """The exposition; 503 with the reason when the store cannot be read."""
    config = current_app.config
    now_ms = config["CLOCK"]()
    families = Families()
    try:
        session = db.session()
        queries = exported_queries(session, now_ms, config["METRICS_KEEP_ENDED_S"] * 1000)
        judged = Lens(now_ms, evaluator(current_app).rules).summaries(session, queries)
        measured = newest_measured(session, [query.id for query in queries])
        exported = [Exported(s, measured.get(s.query.id, {})) for s in judged]
        counts = live_alert_counts(session)
        evaluated_ms = job_done_at(session, LEASE)
        rejected = count_rejected(session)
    except STORE_FAILURES as error:
        own_families(False, 0, None, None, now_ms, families)
        reason = " ".join(unusable(error).split())
        body = f"# wmon: {reason}\n".encode() + exposition(families)
        response = Response(body, status=503, content_type=CONTENT_TYPE_LATEST)
        response.headers["Retry-After"] = str(RETRY_AFTER_S)
        return response
    query_families(exported, now_ms, families)
    alert_family(counts, families)
    own_families(True, len(exported), evaluated_ms, rejected, now_ms, families)
    return Response(exposition(families), content_type=CONTENT_TYPE_LATEST)

"""The JSON the API serves and the live push sends: one shape for each thing, used by both."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy.orm as so
from flask import Flask

from monitor.alerts.rulefile import RuleSet, thresholds_of
from monitor.alerts.rules import MEANINGS
from monitor.durations import age_ms
from monitor.health.backlog import (
    UNKNOWN,
    Backlog,
    Backlogs,
    Verdict,
    backlog_fields,
    query_backlog_fields,
)
from monitor.health.facts import PartitionFacts, QueryFacts
from monitor.health.judgment import AlertCounts, partition_status
from monitor.store.read.backlog import backlogs
from monitor.store.read.batches import rows_dropped
from monitor.store.read.partitions import PartitionState, partition_details, partition_states
from monitor.store.read.read_facts import FactsAsked
from monitor.store.read.summary import QuerySummary, summaries, summarize, unreadable_summary
from monitor.store.schema.isolation import recover, unreadable_reason
from monitor.store.schema.models import Batch, Query, TimerSnapshotRow
from web.background import evaluation

QUERY_FIELDS = (
    "id",
    "name",
    "run_id",
    "started_at_ms",
    "updated_at_ms",
    "last_batch_id",
    "terminated_at_ms",
    "exception",
    "error_class",
    "clock_ahead_ms",
    "clock_behind_ms",
    "running_batch_id",
    "running_since_ms",
    "replaces_id",
)
BATCH_FIELDS = (
    "batch_id",
    "run_id",
    "batch_time_ms",
    "watermark_ms",
    "event_time_min_ms",
    "event_time_max_ms",
    "event_time_avg_ms",
    "num_input_rows",
    "input_rows_per_second",
    "processed_rows_per_second",
    "trigger_duration_ms",
    "durations_ms",
    "watermark_skew_ms",
    "flink_watermark_ms",
    "watermark_advanced_at_ms",
    "watermark_stalled",
    "watermark_rewound",
)
TIMER_FIELDS = ("taken_at_ms", "watermark_ms", "pending", "next_expiry_ms", "due_within_ms", "due")


@dataclass(frozen=True)
class Summarizer:
    """Summarizes queries as the app judges them now: the time, and the rules whose parameters
    set the facts' thresholds (the same the alert evaluation uses, so status and alerts
    agree); their alerts weigh as each rule means (rules.MEANINGS)."""

    now_ms: int
    rules: RuleSet

    @classmethod
    def of(cls, app: Flask) -> Summarizer:
        """The app's rules in force, at the app clock's current time."""
        return cls(app.config["CLOCK"](), evaluation.evaluator(app).rules)

    def summarize(self, session: so.Session, query: Query) -> QuerySummary:
        """The query's summary, its facts read over its rules' thresholds."""
        thresholds = self.rules.thresholds_for(query.name)
        return summarize(session, query, self.now_ms, thresholds, MEANINGS)

    def summaries(
        self, session: so.Session, queries: Sequence[Query], overview: bool = True
    ) -> list[QuerySummary]:
        """The summaries of `queries`, in their order, read together; without `overview`,
        without what only the overview shows (trends, backlogs' ages)."""
        configs = self.rules.for_queries(query.name for query in queries)
        asked = [
            FactsAsked(query, thresholds_of(config))
            for query, config in zip(queries, configs, strict=True)
        ]
        return summaries(session, asked, self.now_ms, MEANINGS, overview)


def fields(row: Any, names: Sequence[str]) -> dict[str, Any]:
    """Some attributes of a row as a dict."""
    return {name: getattr(row, name) for name in names}


def batch_json(batch: Batch, dropped: int | None) -> dict[str, Any]:
    """A batch, with the rows its stateful operators dropped by watermark."""
    return fields(batch, BATCH_FIELDS) | {"rows_dropped_by_watermark": dropped}


def timers_json(snapshot: TimerSnapshotRow | None) -> dict[str, Any] | None:
    """A pending-timer snapshot, None when there is none."""
    return None if snapshot is None else fields(snapshot, TIMER_FIELDS)


def summary_json(summary: QuerySummary, summarizer: Summarizer) -> dict[str, Any]:
    """A query as the overview lists it."""
    query, latest, timers, facts = summary.query, summary.latest, summary.timers, summary.facts
    judgment = summary.judgment
    watermark = latest.watermark_ms if latest else None
    return {
        "id": query.id,
        "name": query.name,
        "run_id": query.run_id,
        "status": judgment.status.label,
        "severity": judgment.severity,
        "alerts": alert_counts_json(judgment.alerts),
        "urgency": judgment.urgency,
        "stored_status": query.status,
        "error_class": query.error_class,
        "exception": query.exception,
        "last_batch_id": latest.batch_id if latest else None,
        "watermark_ms": watermark,
        "watermark_age_ms": age_ms(summarizer.now_ms, watermark),
        "skew_ms": latest.watermark_skew_ms if latest else None,
        "late_records": facts.late_records,
        "late_window_ms": facts.thresholds.late_window_ms,
        "silence_ms": facts.thresholds.silence_ms,
        "pending_timers": timers.pending if timers else None,
        "next_timer_ms": timers.next_expiry_ms if timers else None,
        "offset_lag": facts.offset_lag,
        "backlog": None if facts.backlog is None else query_backlog_fields(facts.backlog.query),
        "trend": {
            "batch_id": [p.batch_id for p in facts.trend],
            "batch_time_ms": [p.batch_time_ms for p in facts.trend],
            "watermark_age_ms": [age_ms(p.batch_time_ms, p.watermark_ms) for p in facts.trend],
            "offset_lag": [p.offset_lag for p in facts.trend],
        },
        "updated_at_ms": query.updated_at_ms,
        "clock_ahead_ms": query.clock_ahead_ms,
        "clock_behind_ms": query.clock_behind_ms,
        "running_batch_id": facts.running_batch_id,
        "running_since_ms": facts.running_since_ms,
        "unreadable": facts.unreadable,
        "now_ms": summarizer.now_ms,
    }


def alert_counts_json(counts: AlertCounts) -> dict[str, int]:
    """A query's live alerts counted: the firing ones by severity, and the pending ones."""
    return {"critical": counts.critical, "warning": counts.warning, "pending": counts.pending}


def broken_summary(
    session: so.Session, summary: QuerySummary, error: Exception, now_ms: int
) -> QuerySummary:
    """The summary of a query whose rows broke its judging with `error`: its stored state,
    and why; an outage of the store goes up."""
    recover(session, error)
    asked = FactsAsked(summary.query, summary.facts.thresholds)
    return unreadable_summary(asked, unreadable_reason(error), now_ms)


def _overview_row(
    session: so.Session, summary: QuerySummary, summarizer: Summarizer
) -> dict[str, Any]:
    """A query as the overview lists it; one whose rows it cannot judge, as unreadable: its
    error, never the overview's."""
    try:
        return summary_json(summary, summarizer)
    except Exception as error:  # a bad row of this query alone
        return summary_json(broken_summary(session, summary, error, summarizer.now_ms), summarizer)


def overview(
    session: so.Session, queries: Sequence[Query], summarizer: Summarizer
) -> list[dict[str, Any]]:
    """Queries as the overview lists them, the most urgent first (what pages, then the
    status: health.judgment), then by name."""
    summaries = summarizer.summaries(session, queries)
    rows = [_overview_row(session, summary, summarizer) for summary in summaries]
    return sorted(rows, key=lambda row: (row["urgency"], row["name"] or "", row["id"]))


def partition_rows(
    session: so.Session, summary: QuerySummary, batch: Batch, behind: Backlogs, now_ms: int
) -> list[dict[str, Any]]:
    """The partition table of one of the query's batches, as the query page and `wmon
    partitions` show it: its partitions with the late window's figures (the query's rules'
    window, up to `now_ms`) and `behind`, their backlog as of the batch, each with its status
    judged (health.judgment): the batch's own flags and verdict, the window's late and
    future-dated records."""
    facts = summary.facts
    since_ms = now_ms - facts.thresholds.late_window_ms
    late = {p.name: p.late_records for p in facts.partitions}
    return [
        detail.as_dict() | {"status": judged(facts, detail.state, detail.backlog.verdict)}
        for detail in partition_details(session, batch, since_ms, late, behind)
    ]


def judged(facts: QueryFacts, partition: PartitionState, verdict: Verdict | None) -> str:
    """The status of a partition of one of the query's batches (health.judgment): the batch's
    own flags and `verdict`, the query's facts' late and future-dated records in the window."""
    known = next((p for p in facts.partitions if p.name == partition.partition), None)
    as_of_batch = dataclasses.replace(
        known or PartitionFacts(partition.partition),
        idle=partition.idle,
        stalled=partition.stalled,
        rewound=partition.rewound,
        verdict=verdict,
    )
    return partition_status(as_of_batch, facts.thresholds).value


def batch_events(
    session: so.Session, batches: Sequence[Batch], facts: QueryFacts
) -> list[dict[str, Any]]:
    """The live push's `batch` payloads: each batch of one query with its partitions; the
    newest also with its backlog as of its own time (store.backlog: a query that sends batches
    runs), the partitions' in theirs, and their statuses judged on the query's `facts`."""
    if not batches:
        return []
    query_id = batches[0].query_id
    dropped = rows_dropped(session, query_id, [batch.batch_id for batch in batches])
    partitions = partition_states(session, batches)
    newest = max(batches, key=lambda batch: batch.batch_id)
    behind = backlogs(session, newest, newest.batch_time_ms, running=True)
    by_name = behind.by_partition()
    events = []
    for batch in batches:
        is_newest = batch is newest
        events.append(
            {
                "query": query_id,
                "batch": batch_json(batch, dropped.get(batch.batch_id)),
                "partitions": [
                    dataclasses.asdict(p) | (_newest(facts, p, by_name) if is_newest else {})
                    for p in partitions[batch.batch_id]
                ],
                "backlog": query_backlog_fields(behind.query) if is_newest else None,
            }
        )
    return events


def _newest(
    facts: QueryFacts, partition: PartitionState, behind: Mapping[str, Backlog]
) -> dict[str, Any]:
    """What a partition of the newest batch of a live push has besides its figures: its
    backlog and its status."""
    backlog = behind.get(partition.partition, UNKNOWN)
    return backlog_fields(backlog) | {"status": judged(facts, partition, backlog.verdict)}

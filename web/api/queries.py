"""The JSON API under /api: what every page shows, validated, times in epoch milliseconds."""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import sqlalchemy.orm as so
from flask import Blueprint, Response, current_app, request, stream_with_context

from monitor.events import MAX_NAME
from monitor.health.backlog import query_backlog_fields
from monitor.health.state_growth import state_fields
from monitor.health.status import Status
from monitor.health.trigger_pace import pace_fields
from monitor.numbers import INT64_MAX
from monitor.store.read.batches import latest_batch, rows_dropped
from monitor.store.read.history import (
    CSV_COLUMNS,
    CSV_RESOLUTIONS,
    PARTITION_SERIES,
    ROLLUP_CSV_COLUMNS,
    Kept,
    batch_series,
    csv_rows,
    finest_kept,
    partition_series,
    resolution,
    rollup_csv_rows,
)
from monitor.store.read.queries import find_query, list_queries, replaced_by
from monitor.store.read.summary import QuerySummary
from monitor.store.read.timers import recent_timer_snapshots
from monitor.store.schema.isolation import read_or_say
from monitor.store.schema.models import Query
from web import db
from web.api.diagnosis import diagnosis_json
from web.api.payloads import (
    QUERY_FIELDS,
    Summarizer,
    alert_counts_json,
    batch_json,
    broken_summary,
    fields,
    overview,
    partition_rows,
    timers_json,
)
from web.guards.params import (
    MAX_LIMIT,
    BadParameter,
    bounded,
    choices,
    one_of,
    text_field,
    time_range,
    window,
)

bp = Blueprint("api", __name__, url_prefix="/api")

DEFAULT_TIMER_LIMIT = 100
STATUS_LABELS = tuple(status.label for status in Status)


def _query(ref: str) -> Query:
    return find_query(db.session(), ref)


def _default_to_ms(session: so.Session, query: Query, summarizer: Summarizer) -> int:
    """Histories end after the query's newest batch by default, not at now: a query that
    stopped yesterday opens on its last hour."""
    latest = latest_batch(session, query.id)
    return summarizer.now_ms if latest is None else latest.batch_time_ms + 1


def _page(args: Mapping[str, str]) -> slice:
    """`offset` (0 by default) and `limit` (every query by default) as a slice."""
    offset = bounded(args, "offset", 0, 0, INT64_MAX)
    if "limit" not in args:
        return slice(offset, None)
    return slice(offset, offset + bounded(args, "limit", MAX_LIMIT, 1, MAX_LIMIT))


def _named(queries: Sequence[Query], text: str | None) -> Sequence[Query]:
    """The queries whose name (id, for one without a name) holds `text`, in any case."""
    if text is None:
        return queries
    wanted = text.lower()
    return [query for query in queries if wanted in (query.name or query.id).lower()]


@bp.get("/queries")
def queries() -> dict[str, Any]:
    """Every query with its status and figures, the most urgent first; `q` (a piece of the
    name), `status`, `limit` and `offset` narrow it, and `total` counts the queries that match."""
    args = request.args
    text, page = text_field(args, "q", MAX_NAME), _page(args)
    statuses = choices(args, "status", STATUS_LABELS)
    session, summarizer = db.session(), Summarizer.of(current_app)
    rows = overview(session, _named(list_queries(session), text), summarizer)
    matching = [row for row in rows if statuses is None or row["status"] in statuses]
    return {"queries": matching[page], "total": len(matching)}


def _latest(session: so.Session, summary: QuerySummary, now_ms: int) -> dict[str, Any]:
    """The latest batch and its partition table, with the late window's figures and the
    query's backlog as the facts read it."""
    latest, behind = summary.latest, summary.facts.backlog
    if latest is None or behind is None:
        return {"latest_batch": None, "partitions": [], "backlog": None}
    dropped = rows_dropped(session, latest.query_id, [latest.batch_id])
    return {
        "latest_batch": batch_json(latest, dropped.get(latest.batch_id)),
        "partitions": partition_rows(session, summary, latest, behind, now_ms),
        "backlog": query_backlog_fields(behind.query),
    }


@bp.get("/queries/<ref>")
def query(ref: str) -> dict[str, Any]:
    """One query: status, failure, latest batch, partition table and pending timers; a query
    whose rows cannot be read answers with its stored state and why."""
    session, summarizer, found = db.session(), Summarizer.of(current_app), _query(ref)
    summary = summarizer.summarize(session, found)
    try:
        return _query_json(session, summarizer, summary)
    except Exception as error:  # a bad row of this query: shown as its state
        return _query_json(
            session, summarizer, broken_summary(session, summary, error, summarizer.now_ms)
        )


def _query_json(
    session: so.Session, summarizer: Summarizer, summary: QuerySummary
) -> dict[str, Any]:
    found, facts, judgment = summary.query, summary.facts, summary.judgment
    late_window_ms = facts.thresholds.late_window_ms
    return {
        "query": fields(found, QUERY_FIELDS)
        | {
            "status": judgment.status.label,
            "severity": judgment.severity,
            "alerts": alert_counts_json(judgment.alerts),
            "stored_status": found.status,
            "unreadable": facts.unreadable,
            "silence_ms": facts.thresholds.silence_ms,
            "replaced_by_id": replaced_by(session, found.id),
        },
        **_latest(session, summary, summarizer.now_ms),
        "late_records": facts.late_records,
        "late_window_ms": late_window_ms,
        "state": [state_fields(growth) for growth in facts.state],
        "trigger": None if facts.pace is None else pace_fields(facts.pace),
        "timers": timers_json(summary.timers),
        "now_ms": summarizer.now_ms,
    }


@bp.get("/queries/<ref>/batches")
def batches(ref: str) -> dict[str, Any]:
    """A query's batches over a time range, downsampled into at most `points` buckets."""
    session, found = db.session(), _query(ref)
    span = window(request.args, _default_to_ms(session, found, Summarizer.of(current_app)))
    kept = Kept.of(found)
    return {
        "query": found.id,
        "from_ms": span.from_ms,
        "to_ms": span.to_ms,
        "bucket_ms": span.bucket_ms,
        "resolution": resolution(span, kept),
        "series": batch_series(session, found.id, span, kept),
    }


@bp.get("/queries/<ref>/partitions/history")
def partition_history(ref: str) -> dict[str, Any]:
    """Per-partition series over a time range, downsampled into at most `points` buckets;
    `fields` keeps only the series named (their times always come)."""
    session, found = db.session(), _query(ref)
    span = window(request.args, _default_to_ms(session, found, Summarizer.of(current_app)))
    fields = choices(request.args, "fields", PARTITION_SERIES)
    wanted = {"time_ms", *(PARTITION_SERIES if fields is None else fields)}
    kept = Kept.of(found)
    series = read_or_say(session, lambda: partition_series(session, found.id, span, kept))
    return {
        "query": found.id,
        "from_ms": span.from_ms,
        "to_ms": span.to_ms,
        "bucket_ms": span.bucket_ms,
        "resolution": resolution(span, kept),
        "partitions": {
            name: {field: values for field, values in each.items() if field in wanted}
            for name, each in series.items()
        },
    }


@bp.get("/queries/<ref>/diagnosis")
def diagnosis(ref: str) -> dict[str, Any]:
    """Over a time range: who drove the watermark, future-dated records, how late and how close
    the records were, and the delays that would have kept 99%, 99.9% and 100% of them."""
    session, found = db.session(), _query(ref)
    from_ms, to_ms = time_range(
        request.args, _default_to_ms(session, found, Summarizer.of(current_app))
    )
    tolerance_ms = current_app.config["FUTURE_TOLERANCE_S"] * 1000
    return diagnosis_json(session, found, from_ms, to_ms, tolerance_ms)


@bp.get("/queries/<ref>/timers")
def timers(ref: str) -> dict[str, Any]:
    """A query's most recent pending-timer snapshots, oldest first."""
    found = _query(ref)
    limit = bounded(request.args, "limit", DEFAULT_TIMER_LIMIT, 1, MAX_LIMIT)
    snapshots = recent_timer_snapshots(db.session(), found.id, limit)
    return {"query": found.id, "snapshots": [timers_json(s) for s in snapshots]}


def _cell(value: Any) -> Any:
    return str(value).lower() if isinstance(value, bool) else value


def _csv_lines(query_id: str, from_ms: int, to_ms: int, tier: str) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS if tier == "batch" else ROLLUP_CSV_COLUMNS)
    with so.Session(db.engine()) as session:
        rows = (
            csv_rows(session, query_id, from_ms, to_ms)
            if tier == "batch"
            else rollup_csv_rows(session, query_id, from_ms, to_ms, tier)
        )
        for row in rows:
            writer.writerow([_cell(value) for value in row])
            if buffer.tell() > 64_000:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
    yield buffer.getvalue()


@bp.get("/queries/<ref>/history.csv")
def history_csv(ref: str) -> Response:
    """A query's history as CSV, streamed: one line per batch and source partition, or per
    minute or hour and partition (`resolution`); by default the finest whose rows are all kept
    over the range."""
    session, found = db.session(), _query(ref)
    from_ms, to_ms = time_range(
        request.args, _default_to_ms(session, found, Summarizer.of(current_app))
    )
    finest = finest_kept(Kept.of(found), from_ms)
    tier = one_of(request.args, "resolution", CSV_RESOLUTIONS) or finest
    if CSV_RESOLUTIONS.index(tier) < CSV_RESOLUTIONS.index(finest):
        raise BadParameter(
            f"the query's {tier} rows from {from_ms} on are no longer all kept: "
            f"ask for resolution={finest}"
        )
    suffix = "" if tier == "batch" else f"-{tier}s"
    name = f"wmon-{found.id}-{from_ms}-{to_ms}{suffix}.csv"
    # The first 64 KB are read before the answer starts: a bad row among them is a clear
    # error, not a download cut short.
    lines = _csv_lines(found.id, from_ms, to_ms, tier)
    first = read_or_say(session, lambda: next(lines))
    return Response(
        stream_with_context(itertools.chain([first], lines)),
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )

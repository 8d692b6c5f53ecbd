"""`wmon queries`, `batches`, `partitions`, `state` and `timers`: the stored history, as tables
or JSON; the queries with their health as the dashboard has it."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sqlalchemy.orm as so

from monitor.alerts.rulefile import RuleSet, RulesFileError, load_rules_file
from monitor.alerts.runner import now_ms
from monitor.config import load_settings
from monitor.durations import age_ms
from monitor.health.state_growth import state_fields
from monitor.health.trigger_pace import pace_fields
from monitor.store.read.backlog import backlogs
from monitor.store.read.batches import batch_of, latest_batch, recent_batches
from monitor.store.read.queries import find_query, list_queries
from monitor.store.read.state_growth import fleet_state
from monitor.store.read.timers import recent_timer_snapshots
from monitor.store.read.trigger_pace import fleet_pace
from wmon.options import CliError
from wmon.render import (
    BATCH_COLUMNS,
    PARTITION_COLUMNS,
    QUERY_COLUMNS,
    STATE_COLUMNS,
    TIMER_COLUMNS,
    behind,
    catch_up,
    operator_text,
    pace_text,
    partition_state,
    render_json,
    render_view,
    verdict_text,
)
from wmon.runtime import open_store


def print_rows(args: argparse.Namespace, columns: Any, rows: Sequence[Any]) -> None:
    """Rows as a table (every column with --wide), or as JSON with --json."""
    print(render_json(columns, rows) if args.json else render_view(columns, rows, args.wide))


def queries(args: argparse.Namespace) -> None:
    """List every stored query as the dashboard's overview does: its health by the same rules,
    the most urgent first; with --json, the rows `GET /api/queries` gives."""
    from web.api.payloads import Summarizer, overview

    summarizer = Summarizer(now_ms(), _rules(args.rules or load_settings().alert_rules))
    with so.Session(open_store(args.database_url)) as session:
        rows = overview(session, list_queries(session), summarizer)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(render_view(QUERY_COLUMNS, [_as_listed(row) for row in rows], args.wide))


def _as_listed(row: dict[str, Any]) -> dict[str, Any]:
    """An overview row with what the table adds: how long since the query was heard from, and
    the batch in flight and for how long ('batch 12 for 7 min')."""
    since = row["running_since_ms"]
    running = None if since is None else (row["running_batch_id"], row["now_ms"] - since)
    return row | {"heard_ms": age_ms(row["now_ms"], row["updated_at_ms"]), "running": running}


def _rules(path: Path | None) -> RuleSet:
    """The rules in the file at `path`; the default rules when there is none."""
    if path is None:
        return RuleSet()
    try:
        return load_rules_file(path)
    except RulesFileError as error:
        raise CliError(str(error)) from error


def batches(args: argparse.Namespace) -> None:
    """List a query's most recent batches; as a table, with how they keep its trigger over
    the last five minutes (the API's `trigger`)."""
    with so.Session(open_store(args.database_url)) as session:
        query = find_query(session, args.query)
        print_rows(args, BATCH_COLUMNS, recent_batches(session, query.id, args.limit))
        latest = None if args.json else latest_batch(session, query.id)
        paces = {} if latest is None else fleet_pace(session, {query.id: latest})
    if query.id in paces:
        print(pace_text(pace_fields(paces[query.id])))


def state(args: argparse.Namespace) -> None:
    """List a query's stateful operators over the last five minutes of batches, as the API's
    `state` has them."""
    with so.Session(open_store(args.database_url)) as session:
        query = find_query(session, args.query)
        latest = latest_batch(session, query.id)
        found = {} if latest is None else fleet_state(session, {query.id: latest})
        operators = [state_fields(growth) for growth in found.get(query.id, ())]
    if args.json:
        print(json.dumps(operators, indent=2))
    else:
        shown = [op | {"operator_text": operator_text(op)} for op in operators]
        print(render_view(STATE_COLUMNS, shown, args.wide))


def partitions(args: argparse.Namespace) -> None:
    """List the source partitions of a query's batch (the latest by default) as the API's
    query page has them: judged by the same rules (the late window is theirs), each with its
    status."""
    from web.api.payloads import Summarizer, partition_rows

    summarizer = Summarizer(now_ms(), _rules(load_settings().alert_rules))
    with so.Session(open_store(args.database_url)) as session:
        query = find_query(session, args.query)
        summary = summarizer.summarize(session, query)
        batch = summary.latest if args.batch is None else batch_of(session, query.id, args.batch)
        rows = []
        if batch is not None:
            # The latest batch's backlog is as the facts read it, as of now; an earlier one's,
            # as of its own time.
            backlog = summary.facts.backlog
            if args.batch is not None or backlog is None:
                backlog = backlogs(session, batch, batch.batch_time_ms, running=True)
            rows = partition_rows(session, summary, batch, backlog, summarizer.now_ms)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        shown = [
            row
            | {
                "state": partition_state(row),
                "behind": behind(row),
                "catch_up": catch_up(row),
                "verdict_text": verdict_text(row),
            }
            for row in rows
        ]
        print(render_view(PARTITION_COLUMNS, shown, args.wide))


def timers(args: argparse.Namespace) -> None:
    """List a query's most recent pending-timer snapshots."""
    with so.Session(open_store(args.database_url)) as session:
        query = find_query(session, args.query)
        print_rows(args, TIMER_COLUMNS, recent_timer_snapshots(session, query.id, args.limit))

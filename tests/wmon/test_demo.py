"""`wmon demo` end to end, as `make demo` runs it: a real job in its own process, its five
scenarios, its own store, the alerts they raise (those docs/alerts.md lists, firing or pending,
and no others), Ctrl-C."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import AlertRow, Batch, Query
from streaming.demo import DEMO_SCENARIOS
from tests.support.network import closed_port
from tests.support.stores import stored_event_times, stored_partitions
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.spark]
ALERTS_DOC = Path(__file__).parents[2] / "docs" / "alerts.md"
# An alert as the demo's table in docs/alerts.md lists it.
Alert = tuple[str, str, str, str | None]


def demo_tables() -> list[list[list[str]]]:
    """The tables of docs/alerts.md's "What the demo raises", each a list of rows of cells."""
    text = ALERTS_DOC.read_text()
    section = text[text.index("### What the demo raises") :].split("\n## ")[0]
    tables = [block for block in section.split("\n\n") if block.startswith("|")]
    return [
        [
            [cell.strip().strip("`") for cell in line.strip("|").split("|")]
            for line in table.splitlines()[2:]
        ]
        for table in tables
    ]


def documented_alerts() -> tuple[set[Alert], set[Alert]]:
    """The alerts docs/alerts.md says the demo fires, (query, rule, severity, caused by): those
    it always fires, and those it fires only when the query runs behind."""
    always, sometimes = set(), set()
    for query, rule, severity, caused_by, why in demo_tables()[0]:
        alert = (query, rule, severity, caused_by or None)
        (sometimes if why.startswith("*when") else always).add(alert)
    return always, sometimes


def documented_pending() -> set[tuple[str, str]]:
    """The alerts docs/alerts.md says the demo raises, firing or only pending, (query, rule)."""
    fires, pends = demo_tables()
    return {(row[0], row[1]) for row in fires + pends}


def alerts(engine, *, pending: bool = False) -> set[Alert]:
    """Every alert that fired (firing now, or resolved since), and with `pending` those on
    their way to it, as the demo's table lists them."""
    raised = AlertRow.fired_at_ms.is_not(None)
    if pending:
        raised = sa.or_(raised, AlertRow.state == "pending")
    with so.Session(engine) as session:
        rows = session.execute(
            sa.select(Query.name, AlertRow.rule, AlertRow.severity, AlertRow.caused_by)
            .join(Query, Query.id == AlertRow.query_id)
            .where(raised)
        )
        return {tuple(row) for row in rows}


def raised(engine) -> set[tuple[str, str]]:
    """Every alert raised, firing, pending or since ended (a pending one cancelled too), as
    (query, rule)."""
    with so.Session(engine) as session:
        rows = session.execute(
            sa.select(Query.name, AlertRow.rule).join(Query, Query.id == AlertRow.query_id)
        )
        return {tuple(row) for row in rows}


def overview(url):
    with urllib.request.urlopen(f"{url}api/queries", timeout=5) as response:
        return {entry["name"]: entry for entry in json.load(response)["queries"]}


@pytest.mark.timeout(600)
def test_the_demo_plays_its_scenarios_into_monitored_queries_and_raises_the_documented_alerts(
    tmp_path: Path,
):
    wmon = Path(sys.executable).with_name("wmon")
    environ = {**os.environ, "WMON_HOME": str(tmp_path / "home")}
    environ.pop("WMON_DATABASE_URL", None)
    # Every scenario, with shorter rounds and stall timeout than make demo's, to be quicker.
    arguments = ["--workdir", str(tmp_path / "demo"), "--port", str(closed_port())]
    arguments += ["--round-seconds", "20", "--stall-timeout", "10"]
    # The demo's own store, beside its log and checkpoints: not the default store.
    store_url = f"sqlite:///{tmp_path / 'demo' / 'wmon.db'}"
    store = create_engine(store_url, may_create=False)
    always, sometimes = documented_alerts()
    demo = subprocess.Popen(
        [str(wmon), "demo", *arguments],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(demo.stdout), daemon=True).start()
    try:
        dashboard = wait_until(
            lambda: next(
                (m for line in lines if (m := re.search(r"on (http://\S+/)", line))), None
            ),
            120,
            "the dashboard's address",
        ).group(1)

        def batches_shown():
            shown = overview(dashboard)
            names = {f"scooters_{name}" for name in DEMO_SCENARIOS}
            ready = set(shown) == names and all(
                (shown[name]["last_batch_id"] or 0) >= 3 for name in names
            )
            return shown if ready else None

        shown = wait_until(batches_shown, 240, "every query on the dashboard, 3 batches each")
        assert shown["scooters_stalled_partition"]["status"] == "stalled"
        # Each documented alert fired, or is pending on its way to it: watermark_skew's `for`
        # of 2 minutes, which the rules' own tests hold to, is not waited out here.
        wait_until(
            lambda: always <= alerts(store, pending=True), 300, f"the alerts {sorted(always)}"
        )
        demo.send_signal(signal.SIGINT)
        code = demo.wait(90)
        errors = demo.stderr.read()
        assert code == 0, errors[-3_000:]
    finally:
        if demo.poll() is None:
            demo.kill()
    assert any(line.startswith("demo: stopping") for line in lines), lines
    assert f"demo: queries are monitored in {store_url}\n" in lines
    assert not (tmp_path / "home" / "wmon.db").exists(), "the default store is left alone"
    # The test asked the dashboard for its overview every 0.2 s: no line per request.
    assert "GET /api/queries" not in errors, errors[-3_000:]
    assert all(": waiting, " in line for line in lines if ", batch -, " in line), lines
    # `make setup` built wmon-spark.jar: the demo's operator measures in the JVM.
    assert any("operator measures in the JVM" in line for line in lines), lines
    assert "[Stage " not in errors + "".join(lines), "Spark's console progress bars are off"
    theirs = [
        line for line in lines if line.strip() and not line.startswith(("demo:", "scooters_"))
    ]
    assert theirs == [], "the demo's output is its own lines only"
    # On a first run the demo makes its store before the dashboard's background work reads it.
    assert "no store at" not in errors, errors[-3_000:]

    # Every documented alert was raised (the wait above); a pending one may have been cancelled
    # since, as the demo's stop ended its query. None fired that the table does not list, and
    # none went pending, even if cancelled since, that neither table lists.
    assert alerts(store) <= always | sometimes, "the demo fires no alert undocumented"
    assert raised(store) <= documented_pending(), "the demo raises no alert undocumented"
    with so.Session(store) as session:
        queries = session.scalars(sa.select(Query)).all()
        assert {(q.name, q.status) for q in queries} == {
            (f"scooters_{name}", "terminated") for name in DEMO_SCENARIOS
        }
        ids = {q.name: q.id for q in queries}
        for query_id in ids.values():
            batch_ids = session.scalars(
                sa.select(Batch.batch_id).where(Batch.query_id == query_id).order_by(Batch.batch_id)
            ).all()
            assert batch_ids == list(range(len(batch_ids)))
    measured = stored_event_times(store, ids["scooters_skewed_backfill"])
    lost = {row.partition for row in measured if row.late_records}
    assert lost and "skewed_backfill/0" not in lost, "the fast partition loses nothing"
    partitions = stored_partitions(store, ids["scooters_stalled_partition"])
    stalled = {row.partition for row in partitions if row.stalled}
    assert stalled == {"stalled_partition/1"}
    store.dispose()

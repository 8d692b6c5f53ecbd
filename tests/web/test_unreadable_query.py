"""A row no computation can handle fails only its own query's reading, visibly: that query
shows the `error` status and an alert about itself, its other alerts wait as they are, and
the overview, the scrape and the evaluation of every other query go on."""

import re

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.evaluate import evaluate
from monitor.alerts.rulefile import load_rules
from monitor.collect.spark_events import TERMINATED, named, spark_event
from monitor.store.packed import batch_event_times
from monitor.store.schema.models import AlertRow, Batch, BatchEventTimes, BatchOffsets
from monitor.store.write.writes import write_event
from tests.support.progress import fixture, progress_event

BROKEN = "cccccccc-0000-0000-0000-000000000000"
FAILED = "dddddddd-0000-0000-0000-000000000000"
RULES = load_rules("")


def write_batch(engine, query_id, batch_id):
    write_event(engine, spark_event(progress_event(query_id, batch_id), None))


def write_failed(engine):
    """A query that ran one batch and failed: `query_failed` fires for it."""
    write_batch(engine, FAILED, 0)
    terminated = {**fixture("terminated_failed.json"), "id": FAILED}
    terminated["runId"] = FAILED.replace("0000", "1111", 1)
    write_event(engine, spark_event(named(TERMINATED, terminated), batch_time(engine, FAILED)))


def batch_time(engine, query_id):
    with so.Session(engine) as session:
        return session.scalar(
            sa.select(sa.func.max(Batch.batch_time_ms)).where(Batch.query_id == query_id)
        )


def break_samples(engine, query_id, at_ms):
    """A future-dated row at `at_ms` whose samples are a number, not a list of records: valid
    JSON on both stores, that no reader of samples can use (a hand edit, an old release's bug)."""
    numbers = dict.fromkeys(batch_event_times.NUMBERS, 0) | {"records": 1, "future_records": 1}
    cells = dict.fromkeys(batch_event_times.CELLS) | {"partition": "odd", "future_samples": 5}
    row = {"query_id": query_id, "batch_id": 0, "batch_time_ms": at_ms} | numbers | cells
    with so.Session(engine) as session:
        session.add_all(BatchEventTimes(**packed) for packed in batch_event_times.packed([row]))
        session.commit()


def mend_samples(engine, query_id):
    with so.Session(engine) as session:
        session.execute(sa.delete(BatchEventTimes).where(BatchEventTimes.query_id == query_id))
        session.commit()


def series(scrape, name):
    """The lines of one series in a scrape."""
    return [line for line in scrape.splitlines() if line.startswith(name + "{")]


def unreadable(scrape):
    """`wmon_query_unreadable` by query id."""
    found = re.findall(r'wmon_query_unreadable\{.*query_id="([^"]+)"\} (\S+)', scrape)
    return dict(found)


def evaluated(engine, now_ms):
    with so.Session(engine, expire_on_commit=False) as session:
        evaluate(session, RULES, now_ms)
        rows = session.scalars(sa.select(AlertRow).order_by(AlertRow.id))
        return {(row.rule, row.query_id): row.state for row in rows}


def test_a_bad_row_fails_only_its_query(app, client, engine):
    write_batch(engine, BROKEN, 0)
    write_failed(engine)
    silent_ms = batch_time(engine, BROKEN) + 3_600_000
    app.config["CLOCK"] = lambda: silent_ms
    # Before the bad row: the broken query is silent and no_progress fires for it.
    assert evaluated(engine, silent_ms)[("no_progress", BROKEN)] == "firing"
    break_samples(engine, BROKEN, silent_ms)

    overview = {row["id"]: row for row in client.get("/api/queries").get_json()["queries"]}
    assert overview[BROKEN]["status"] == "error"
    assert "TypeError" in overview[BROKEN]["unreadable"]
    assert overview[FAILED]["status"] == "failed" and overview[FAILED]["unreadable"] is None
    assert overview[FAILED]["last_batch_id"] == 0
    page = client.get(f"/api/queries/{BROKEN}").get_json()
    assert page["query"]["status"] == "error" and page["latest_batch"] is None

    alerts = evaluated(engine, silent_ms + 1_000)
    assert alerts[("query_unreadable", BROKEN)] == "firing"
    assert alerts[("query_failed", FAILED)] == "firing"
    assert client.get("/metrics").status_code == 200
    # The broken query's alerts wait as they were: nothing of it could be judged.
    write_batch(engine, BROKEN, 1)
    assert evaluated(engine, silent_ms + 2_000)[("no_progress", BROKEN)] == "firing"

    mend_samples(engine, BROKEN)
    alerts = evaluated(engine, silent_ms + 3_000)
    assert alerts[("query_unreadable", BROKEN)] == "resolved"
    assert client.get("/api/queries").get_json()["queries"][0]["status"] != "error"


def test_a_value_no_computation_can_use_makes_its_query_unreadable(app, client, engine):
    """A batch's packed partitions that do not unpack (a hand edit, a torn copy) fail the
    reads of this query alone."""
    write_batch(engine, BROKEN, 0)
    write_failed(engine)
    app.config["CLOCK"] = lambda: batch_time(engine, BROKEN) + 1_000
    with engine.begin() as connection:
        connection.execute(
            sa.update(BatchOffsets)
            .where(BatchOffsets.query_id == BROKEN)
            .values(partitions=b"not packed")
        )
    overview = {row["id"]: row for row in client.get("/api/queries").get_json()["queries"]}
    assert overview[BROKEN]["status"] == "error" and overview[FAILED]["status"] == "failed"
    scrape = client.get("/metrics").get_data(as_text=True)
    assert unreadable(scrape) == {BROKEN: "1.0", FAILED: "0.0"}
    batch_ids = "\n".join(series(scrape, "wmon_query_last_batch_id"))
    assert f'query_id="{FAILED}"}} 0.0' in batch_ids and BROKEN not in batch_ids
    alerts = evaluated(engine, batch_time(engine, BROKEN) + 1_000)
    assert alerts[("query_unreadable", BROKEN)] == "firing"
    assert alerts[("query_failed", FAILED)] == "firing"

"""A batch in flight, as the driver tells it (wmon.BatchRunning): noted on the query until its
progress is stored, and hearing of it is hearing from the query."""

import sqlalchemy.orm as so

from monitor.collect.spark_events import RUNNING, spark_event, timestamp_text
from monitor.events import BatchRunning, QueryTerminated
from monitor.store.schema.models import Query
from monitor.store.write.writes import write_event
from tests.support.progress import EPOCH, QUERY, write

AT = EPOCH + 60_000


def running(engine):
    with so.Session(engine) as session:
        query = session.get_one(Query, QUERY)
        return query.running_batch_id, query.running_since_ms, query.updated_at_ms


def tell(engine, batch_id, at_ms, since_ms, run="r"):
    write_event(engine, BatchRunning(QUERY, run, at_ms, batch_id, since_ms))


def test_a_batch_in_flight_is_noted_until_its_progress_is_stored(engine):
    for batch_id in range(2):
        write(engine, batch_id, 10 * batch_id, ends=[10, 10], latests=[10, 10])
    tell(engine, None, AT, AT - 5_000)
    assert running(engine) == (2, AT - 5_000, AT), "the one after the last stored"
    tell(engine, 2, AT + 5_000, AT - 4_000)
    assert running(engine) == (2, AT - 5_000, AT + 5_000), "since the first word of it"
    tell(engine, 1, AT + 6_000, AT + 6_000)
    assert running(engine)[:2] == (2, AT - 5_000), "a batch stored already is not in flight"
    write(engine, 2, 70, ends=[20, 20], latests=[20, 20])
    assert running(engine)[:2] == (None, None)


def test_another_run_or_an_ended_query_has_no_batch_in_flight(engine):
    write(engine, 0, 0, ends=[10, 10], latests=[10, 10])
    tell(engine, 1, AT, AT, run="an-older-run")
    assert running(engine)[:2] == (None, None)
    tell(engine, 1, AT, AT)
    write_event(engine, QueryTerminated(QUERY, "r", AT + 1_000))
    assert running(engine)[:2] == (None, None)
    tell(engine, 1, AT + 2_000, AT)
    assert running(engine)[:2] == (None, None), "a stopped query runs nothing"


def test_the_event_reads_from_its_json_form():
    doc = {
        "Event": RUNNING,
        "id": QUERY,
        "runId": "r",
        "batchId": 7,
        "timestamp": timestamp_text(AT),
        "since": timestamp_text(AT - 90_000),
    }
    assert spark_event(doc, None) == BatchRunning(QUERY, "r", AT, 7, AT - 90_000)
    assert spark_event(doc | {"batchId": None}, None).batch_id is None

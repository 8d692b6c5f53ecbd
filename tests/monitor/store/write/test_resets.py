"""A Declarative Pipeline flow's reset: a full refresh starts the flow from a new checkpoint,
which Spark gives a new query id; the new query names the one it replaced, on both stores."""

import sqlalchemy.orm as so

from monitor.events import QueryStarted
from monitor.store.read.queries import replaced_by
from monitor.store.schema.models import Query
from monitor.store.write.writes import write_event
from tests.support.progress import EPOCH

FLOW = "telemetry/spark_catalog.default.readings"


def started(query_id, run_id, at_ms, name=FLOW, pipeline="telemetry"):
    return QueryStarted(query_id, run_id, name, at_ms, pipeline=pipeline)


def replaces(engine, query_id):
    with so.Session(engine) as session:
        return session.get_one(Query, query_id).replaces_id


def test_each_reset_of_a_flow_replaces_the_query_before_it(engine):
    write_event(engine, started("q-1", "r-1", EPOCH))
    write_event(engine, started("q-1", "r-2", EPOCH + 60_000))  # a restart, not a reset
    write_event(engine, started("q-2", "r-3", EPOCH + 120_000))
    write_event(engine, started("q-3", "r-4", EPOCH + 180_000))
    write_event(engine, started("q-3", "r-5", EPOCH + 240_000))
    assert [replaces(engine, q) for q in ("q-1", "q-2", "q-3")] == [None, "q-1", "q-2"]
    with so.Session(engine) as session:
        assert [replaced_by(session, q) for q in ("q-1", "q-2", "q-3")] == ["q-2", "q-3", None]


def test_only_a_pipelines_flow_is_a_reset(engine):
    """Two jobs may share a query name; only the pipeline's listener says a name is a flow."""
    write_event(engine, started("q-1", "r-1", EPOCH, name="counts", pipeline=None))
    write_event(engine, started("q-2", "r-2", EPOCH + 60_000, name="counts", pipeline=None))
    write_event(engine, started("q-3", "r-3", EPOCH + 120_000, name=FLOW))
    assert [replaces(engine, q) for q in ("q-2", "q-3")] == [None, None]

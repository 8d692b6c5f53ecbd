"""What an evaluation writes: changed and new alerts and their transitions, in a few statements,
the transitions read back as stored."""

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.models import AlertEvent, AlertRow, Query
from monitor.store.write.alerts import STEPPED, Recorded, store_alert_changes

NOW = 1_700_000_000_000


def alert_columns(rule, state, since_ms, message):
    return {
        "rule": rule,
        "query_id": "q",
        "severity": "warning",
        "active_since_ms": since_ms,
        "state": state,
        "value": None,
        "message": message,
        "partitions": [],
        "caused_by": None,
        "held_at_ms": since_ms,
        "fired_at_ms": None,
        "resolved_at_ms": None,
    }


def test_a_pass_stores_its_changes_and_reads_back_its_transitions(engine):
    with so.Session(engine, expire_on_commit=False) as session:
        session.add(Query(id="q", run_id="r", status="active", updated_at_ms=0))
        session.flush()
        pending = AlertRow(**alert_columns("partition_stalled", "pending", NOW - 60_000, "old"))
        session.add(pending)
        session.flush()
        firing = alert_columns("partition_stalled", "firing", NOW - 60_000, "stalled")
        firing |= {"fired_at_ms": NOW}
        new = alert_columns("partition_idle", "pending", NOW, "idle")
        events = store_alert_changes(
            session,
            [{name: firing[name] for name in STEPPED} | {"row_id": pending.id}],
            [new],
            [
                Recorded(pending.id, "partition_stalled", "q", "firing", None, "stalled"),
                Recorded(None, "partition_idle", "q", "pending", None, "idle"),
            ],
            NOW,
        )
        session.commit()
    with so.Session(engine) as session:
        rows = {row.rule: row for row in session.scalars(sa.select(AlertRow))}
    assert [(e.alert_id, e.transition, e.message) for e in events] == [
        (pending.id, "firing", "stalled"),
        (rows["partition_idle"].id, "pending", "idle"),
    ]
    assert (rows["partition_stalled"].state, rows["partition_stalled"].fired_at_ms) == (
        "firing",
        NOW,
    )


def test_a_pass_that_records_nothing_reads_nothing_back(engine):
    with so.Session(engine) as session:
        session.add(Query(id="q", run_id="r", status="active", updated_at_ms=0))
        session.flush()
        new = alert_columns("partition_idle", "pending", NOW, "idle")
        assert store_alert_changes(session, [], [new], [], NOW) == []
        session.commit()
        assert session.scalar(sa.select(sa.func.count()).select_from(AlertEvent)) == 0
        assert session.scalar(sa.select(AlertRow.rule)) == "partition_idle"

"""`wmon rejected`: the set-aside events listed, and replayed once what refused them is mended."""

import json

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.schema.models import Batch, RejectedEvent
from monitor.store.write.rejected import set_aside
from tests.support.progress import progress_event
from wmon.main import main

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def test_listed_newest_first_then_replayed(engine, database_url, capsys):
    unreadable = progress_event(batchId="7")
    with so.Session(engine) as session, session.begin():
        # As if the store had refused two good batches (now mended) beside an unreadable one.
        refused = (progress_event(batch_id=0), "refused")
        set_aside(session, 1_000, "app-1", [refused, (unreadable, "no batchId")])
        set_aside(session, 2_000, "app-2", [(progress_event(batch_id=1), "refused")])
    assert main(["rejected", "--json", "--database-url", database_url]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(row["id"], row["origin"], row["error"]) for row in listed] == [
        (3, "app-2", "refused"),
        (2, "app-1", "no batchId"),
        (1, "app-1", "refused"),
    ]
    assert json.loads(listed[0]["document"]) == progress_event(batch_id=1)

    assert main(["rejected", "--replay", "3", "--database-url", database_url]) == 0
    assert capsys.readouterr().out == (
        "replayed: 1 stored, 0 unchanged (already stored or superseded), 0 refused again\n"
    )
    assert main(["rejected", "--replay", "--database-url", database_url]) == 0
    assert capsys.readouterr().out == (
        "replayed: 1 stored, 0 unchanged (already stored or superseded), 1 refused again\n"
    )
    with so.Session(engine) as session:
        assert session.scalars(sa.select(Batch.batch_id).order_by(Batch.batch_id)).all() == [0, 1]
        [left] = session.scalars(sa.select(RejectedEvent)).all()
        assert (left.id, left.error) == (2, "progress field 'batchId' must be int, not '7'")
    assert main(["rejected", "--database-url", database_url]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["id", "received", "from", "why", "event"]
    assert out.splitlines()[1].split()[:6] == [
        "2",
        "1970-01-01",
        "00:00:01.000",
        "app-1",
        "progress",
        "field",
    ]

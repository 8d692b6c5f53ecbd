"""`wmon demo` end to end, as `make demo` runs it: a real job in its own process."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.store.engine import create_engine
from monitor.store.models import Batch, Partition, Query

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


def test_the_demo_runs_a_monitored_query_and_says_where_its_data_is(tmp_path: Path):
    wmon = Path(sys.executable).with_name("wmon")
    environ = {**os.environ, "WMON_HOME": str(tmp_path / "home")}
    environ.pop("WMON_DATABASE_URL", None)
    done = subprocess.run(
        [str(wmon), "demo", "--seconds", "20", "--workdir", str(tmp_path / "demo")],
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    store = tmp_path / "home" / "wmon.db"
    lines = done.stdout.splitlines()
    assert any(f"is monitored in sqlite:///{store}" in line for line in lines), done.stdout
    batch_lines = [line for line in lines if line.startswith("batch ")]
    assert len(batch_lines) >= 3, done.stdout
    assert all("offset lag telemetry/0=" in line for line in batch_lines), done.stdout

    engine = create_engine(f"sqlite:///{store}")
    with so.Session(engine) as session:
        [query] = session.scalars(sa.select(Query)).all()
        assert (query.name, query.status) == ("scooter_telemetry_windows", "terminated")
        batch_ids = session.scalars(sa.select(Batch.batch_id).order_by(Batch.batch_id)).all()
        assert batch_ids == list(range(len(batch_ids))) and len(batch_ids) >= 3
        lags = session.scalars(sa.select(Partition.offset_lag).where(Partition.batch_id == 0))
        assert sum(lags) > 0, "the demo's backlog should show as offset lag"
    engine.dispose()

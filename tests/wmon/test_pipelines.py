"""`wmon pipelines`: a real `spark-pipelines run` of a two-flow Declarative Pipeline, every flow
recorded by the JVM listener in the pipeline's server with no change to the pipeline, named
`pipeline/flow`; `instrument` in a flow function counting late records as Spark drops them;
and the configuration directory it writes, the user's own settings kept."""

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa

from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from tests.support.real_collector import INGEST_TOKEN, serving_collector
from tests.support.stores import stored_rows
from tests.support.waiting import wait_until
from wmon.options import CliError
from wmon.pipelines import pipeline_name, read_defaults, spec_path, write_conf_dir

SPEC = """\
name: telemetry
storage: {storage}
configuration:
  spark.sql.shuffle.partitions: "2"
libraries:
  - glob:
      include: transformations/**
"""
# Two flows over the same files: a plain copy, and one measured by `instrument` (its
# checkpoint is somewhere under the pipeline's storage: the root is enough) and deduplicated
# behind a watermark. Nothing in either knows the monitor is there but that call.
FLOWS = """\
import os

from pyspark import pipelines as dp

import monitor

INPUT, STORAGE = os.environ["READINGS"], os.environ["STORAGE"]
SCHEMA = "topic STRING, partition INT, offset BIGINT, key STRING, timestamp TIMESTAMP"


def readings():
    reader = spark.readStream.format("json").schema(SCHEMA).option("maxFilesPerTrigger", 1)
    return reader.load(INPUT)


@dp.table
def raw_readings():
    return readings()


@dp.table
def unique_readings():
    measured = monitor.instrument(readings(), checkpoint=STORAGE, delay="10 seconds")
    return measured.withWatermark("timestamp", "10 seconds").dropDuplicates(["key", "timestamp"])
"""
START = datetime(2026, 11, 28, 12, 0, tzinfo=timezone.utc)
FILES, PER_PARTITION, LATE = 5, 6, 4


def write_readings(directory: Path) -> None:
    """A file per batch, two partitions each a record a second; the last file also carries
    LATE records of partition 1 from the first seconds, behind the watermark by then (7 s in)."""
    directory.mkdir()
    offsets = {0: 0, 1: 0}
    for index in range(FILES):
        rows = []
        for partition in (0, 1):
            for step in range(PER_PARTITION):
                at = START + timedelta(seconds=index * PER_PARTITION + step)
                rows.append((partition, at))
        if index == FILES - 1:
            rows += [(1, START + timedelta(seconds=late)) for late in range(LATE)]
        lines = []
        for partition, at in rows:
            offset = offsets[partition]
            offsets[partition] += 1
            record = {
                "topic": "telemetry",
                "partition": partition,
                "offset": offset,
                "key": f"{partition}-{offset}",
                "timestamp": at.isoformat(),
            }
            lines.append(json.dumps(record))
        path = directory / f"readings-{index}.json"
        path.write_text("\n".join(lines) + "\n")
        # The file source reads the oldest first.
        os.utime(path, (1_000_000 + index, 1_000_000 + index))


NAMES = [
    "telemetry/spark_catalog.default.raw_readings",
    "telemetry/spark_catalog.default.unique_readings",
]


def run_pipeline(project: Path, env: dict[str, str], url: str, *args: str) -> None:
    """`wmon pipelines run` of the project's spec, posting to the collector at `url`."""
    done = subprocess.run(
        [sys.executable, "-m", "wmon", "pipelines", "--url", url, "--token", INGEST_TOKEN]
        + ["run", "--spec", str(project / "spark-pipeline.yml"), *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Run is COMPLETED" in done.stdout + done.stderr


def stored_queries(engine: sa.Engine) -> list[tuple[str, str, str]]:
    """(name, id, status) of every stored query, by name and start."""
    with engine.connect() as connection:
        rows = connection.execute(
            sa.text("SELECT name, id, status FROM queries ORDER BY name, started_at_ms")
        ).all()
    return [tuple(row) for row in rows]


def api(url: str, path: str) -> dict:
    with urllib.request.urlopen(f"{url}{path}", timeout=10) as answer:
        return json.load(answer)


@pytest.mark.spark
def test_a_pipelines_flows_are_recorded_named_measured_and_reset(tmp_path: Path) -> None:
    project, storage = tmp_path / "pipeline", tmp_path / "storage"
    (project / "transformations").mkdir(parents=True)
    (project / "spark-pipeline.yml").write_text(SPEC.format(storage=storage.as_uri()))
    (project / "transformations" / "flows.py").write_text(FLOWS)
    write_readings(tmp_path / "readings")
    engine = create_engine(f"sqlite:///{tmp_path / 'wmon.db'}")
    upgrade(engine)
    env = {
        **os.environ,
        "READINGS": str(tmp_path / "readings"),
        "STORAGE": str(storage),
        "PYSPARK_PYTHON": sys.executable,
    }
    env.pop("SPARK_CONF_DIR", None)
    with serving_collector(str(engine.url)) as url:
        run_pipeline(project, env, url)
        wait_until(
            lambda: (
                [(name, status) for name, _, status in stored_queries(engine)]
                == [(name, "terminated") for name in NAMES]
            ),
            60,
            "both flows recorded to their end",
        )
        raw_id, unique_id = (query_id for _, query_id, _ in stored_queries(engine))
        unique = stored_rows(engine, unique_id)
        # A file a batch, and then one with no data, in which the watermark moves on.
        rows = [2 * PER_PARTITION] * (FILES - 1) + [2 * PER_PARTITION + LATE, 0]
        assert [row["num_input_rows"] for row in unique["batches"]] == rows
        late = sum(row["late_records"] for row in unique["batch_event_times"])
        with engine.connect() as connection:
            dropped = connection.execute(
                sa.text(
                    "SELECT sum(num_rows_dropped_by_watermark) FROM state_operators"
                    " WHERE query_id = :id"
                ),
                {"id": unique_id},
            ).scalar_one()
        assert late == dropped == LATE
        raw = stored_rows(engine, raw_id)
        assert len(raw["batches"]) == FILES
        assert not raw["batch_event_times"], "the plain copy is not measured"

        # A full refresh of one flow: a new checkpoint, a new query id, the same flow. (The
        # tables' catalog here is the server's memory: their files go with it.)
        shutil.rmtree(project / "spark-warehouse")
        run_pipeline(project, env, url, "--full-refresh", "unique_readings")
        wait_until(
            lambda: (
                len(stored_queries(engine)) == 3
                and all(status == "terminated" for *_, status in stored_queries(engine))
            ),
            60,
            "the refreshed flow recorded to its end",
        )
        refreshed = stored_queries(engine)[2][1]
        assert stored_queries(engine)[2][0] == NAMES[1] and refreshed != unique_id
        assert api(url, f"/api/queries/{refreshed}")["query"]["replaces_id"] == unique_id
        assert api(url, f"/api/queries/{unique_id}")["query"]["replaced_by_id"] == refreshed
        assert api(url, f"/api/queries/{raw_id}")["query"]["replaced_by_id"] is None
        late = sum(
            row["late_records"] for row in stored_rows(engine, refreshed)["batch_event_times"]
        )
        assert late == LATE, "measured again from its new checkpoint"


def test_the_users_own_settings_are_kept_and_the_listeners_joined(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "spark-defaults.conf").write_text(
        "# the cluster's\n"
        "spark.jars   /opt/other.jar\n"
        "spark.sql.streaming.streamingQueryListeners=com.example.Audit\n"
        "spark.executor.memory: 2g\n"
    )
    (mine / "log4j2.properties").write_text("rootLogger.level = warn\n")
    written = tmp_path / "written"
    written.mkdir()
    ours = [
        ("spark.jars", "/wmon/wmon-spark.jar"),
        ("spark.sql.streaming.streamingQueryListeners", "wmon.spark.WatermarkListener"),
        ("spark.wmon.url", "http://wmon:5000"),
        ("spark.wmon.pipeline", "telemetry"),
    ]
    write_conf_dir(written, mine, ours)
    assert read_defaults(written / "spark-defaults.conf") == [
        ("spark.jars", "/opt/other.jar,/wmon/wmon-spark.jar"),
        (
            "spark.sql.streaming.streamingQueryListeners",
            "com.example.Audit,wmon.spark.WatermarkListener",
        ),
        ("spark.executor.memory", "2g"),
        ("spark.wmon.url", "http://wmon:5000"),
        ("spark.wmon.pipeline", "telemetry"),
    ]
    assert (written / "log4j2.properties").read_text() == "rootLogger.level = warn\n"


def test_the_spec_is_the_one_spark_pipelines_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert spec_path(["run", "--spec", "a/p.yml"]) == Path("a/p.yml")
    assert spec_path(["run", "--spec=b.yaml", "--full-refresh-all"]) == Path("b.yaml")
    (tmp_path / "spark-pipeline.yaml").write_text("name: here\n")
    assert spec_path(["run"]) == Path("spark-pipeline.yaml")


@pytest.mark.timeout(10)  # a FIFO that nothing writes to blocks a plain open() for good
def test_a_fifo_for_a_spec_or_the_users_settings_is_refused_naming_it(tmp_path: Path) -> None:
    spec = tmp_path / "spark-pipeline.yaml"
    os.mkfifo(spec)
    with pytest.raises(CliError) as refused:
        pipeline_name(spec)
    assert (
        str(refused.value)
        == f"cannot read the pipeline spec {spec}: it is a FIFO, not a regular file"
    )
    mine = tmp_path / "mine"
    mine.mkdir()
    os.mkfifo(mine / "spark-defaults.conf")
    with pytest.raises(CliError, match="^cannot read the Spark settings .*: it is a FIFO, not a"):
        write_conf_dir(tmp_path, mine, [])

"""Event logs on S3: discovered and read through s3:// URLs from a real S3 API (moto)."""

import boto3
import pytest

from monitor.ingest.logfiles import LogError, discover
from monitor.ingest.reader import LogReader
from tests.support.event_logs import only_file, read_all

BUCKET = "wmon-event-logs"


@pytest.fixture
def bucket(s3_environment, event_logs) -> str:
    """A bucket holding the rolling zstd log and the single-file log under history/."""
    # Only the environment says where S3 is: boto3, like s3fs, reads AWS_ENDPOINT_URL.
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    for variant in ["zstd", "single_zstd"]:
        root = event_logs.directory(variant)
        for path in root.rglob("*"):
            if path.is_file():
                s3.upload_file(str(path), BUCKET, f"history/{path.relative_to(root)}")
    s3.put_object(Bucket=BUCKET, Key="history/README", Body=b"not a log")
    yield f"s3://{BUCKET}/history"
    for item in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        s3.delete_object(Bucket=BUCKET, Key=item["Key"])
    s3.delete_bucket(Bucket=BUCKET)


def test_the_endpoint_comes_from_the_environment(s3_environment):
    from monitor.ingest.logfiles import filesystem

    fs, path = filesystem(f"s3://{BUCKET}/history")
    fs.connect()
    assert (fs.s3.meta.endpoint_url, path) == (s3_environment, f"{BUCKET}/history")


def test_discover_and_read_through_s3(bucket, event_logs):
    errors: list[LogError] = []
    applications = discover(bucket, errors)
    assert errors == []
    by_id = {application.app_id: application for application in applications}
    assert set(by_id) == {event_logs.apps["zstd"], event_logs.apps["single_zstd"]}

    rolling = by_id[event_logs.apps["zstd"]]
    assert rolling.rolling and not rolling.in_progress
    assert rolling.url == f"{bucket}/eventlog_v2_{event_logs.apps['zstd']}"
    (file,) = rolling.files
    assert file.url.startswith(f"{bucket}/eventlog_v2_") and file.codec == "zstd"

    reader = LogReader(file, chunk_size=16 * 1024)
    lines = reader.read()
    assert [line.text for line in lines] == read_all(only_file(event_logs.directory("zstd")))
    assert reader.done
    assert reader.bytes_read == event_logs.events_file("zstd").stat().st_size


def test_resume_from_a_position_on_s3(bucket, event_logs):
    (application,) = [a for a in discover(bucket) if not a.rolling]
    (file,) = application.files
    head = LogReader(file).read(max_lines=20)
    rest = LogReader(file, head[-1].end).read()
    assert [line.text for line in head + rest] == read_all(
        only_file(event_logs.directory("single_zstd"))
    )


def test_a_missing_object_on_s3(bucket):
    with pytest.raises(LogError, match="not found"):
        discover(f"{bucket}/local-0.zstd")


def test_wmon_ingest_reads_s3_into_the_store(bucket, event_logs, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    import sqlalchemy as sa

    from monitor.store.schema.engine import create_engine
    from monitor.store.schema.models import Batch, Query

    database_url = f"sqlite:///{tmp_path / 'wmon.db'}"
    env = dict(os.environ, WMON_DATABASE_URL=database_url)
    wmon = str(Path(sys.executable).with_name("wmon"))
    done = subprocess.run([wmon, "ingest", bucket], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("2 applications, 2 files: ") and "10 events stored" in done.stdout
    with create_engine(database_url).connect() as connection:
        assert connection.scalar(sa.select(sa.func.count()).select_from(Batch)) == 6
        assert set(connection.scalars(sa.select(Query.status))) == {"terminated"}

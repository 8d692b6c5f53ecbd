"""Fixtures: event logs real Spark wrote, once per test session, and a real S3 API (moto)."""

import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

JOB = Path(__file__).resolve().parents[2] / "jobs" / "write_event_logs.py"


@dataclass(frozen=True)
class EventLogs:
    """Where the job wrote each variant's log, and its application id."""

    root: Path
    apps: dict[str, str]

    def directory(self, variant: str, in_progress: bool = False) -> Path:
        """The history directory of a variant (its copy taken while the app ran)."""
        return self.root / "inprogress" / variant if in_progress else self.root / variant

    def events_file(self, variant: str, in_progress: bool = False) -> Path:
        """The one events file of a variant's rolling log (or its single file)."""
        files = [
            path
            for path in self.directory(variant, in_progress).rglob("*")
            if path.is_file() and path.name.startswith(("events_", "local-"))
        ]
        assert len(files) == 1, files
        return files[0]


@pytest.fixture(scope="session")
def event_logs(tmp_path_factory, worker_id) -> EventLogs:
    """Real Spark 4.3 event logs of one tiny streaming query, in every variant, written by
    one subprocess (one JVM start) for the whole test run: on several workers (`make test`),
    by the first that asks, in the folder the workers' own folders share."""
    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent
    with (shared / "event-logs.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        apps = shared / "event-logs" / "apps.json"
        if not apps.exists():
            apps.parent.mkdir()
            apps.write_text(_write_event_logs(apps.parent / "out"))
    return EventLogs(apps.parent / "out", json.loads(apps.read_text()))


def _write_event_logs(root: Path) -> str:
    """Run the job that writes every variant into `root`; its application ids, as JSON."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    done = subprocess.run(
        [sys.executable, str(JOB), str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture
def copy_of(tmp_path):
    """Copy a file or directory into the test's own directory (tests change their copies)."""

    def copy(source: Path, name: str | None = None) -> Path:
        target = tmp_path / (name or source.name)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copyfile(source, target)
        return target

    return copy


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def s3_endpoint() -> str:
    """A real S3 API over HTTP on 127.0.0.1: moto in server mode, for the session."""
    # Imported here, not skipped: without moto the S3 tests must fail, not vanish.
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def s3_environment(s3_endpoint, monkeypatch) -> str:
    """The standard AWS environment pointing at the moto server; fresh s3fs instances."""
    import s3fs

    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "wmon-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wmon-test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    # s3fs caches its instances by their arguments, not by the environment.
    s3fs.S3FileSystem.clear_instance_cache()
    yield s3_endpoint
    s3fs.S3FileSystem.clear_instance_cache()

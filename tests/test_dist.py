"""The wheel `make dist` builds works on its own: installed into a fresh virtualenv outside the
repository, with no repository on the path, its dashboard serves every page and front-end file,
`wmon spark-conf` points at the jar inside the package, and a job run through `wmon submit`
that also calls `attach` is recorded both ways."""

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.network import closed_port
from tests.support.spark_submit import end, start
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "dist-test-token"
VENDOR = ("uPlot.esm.js", "uPlot.min.css", "socket.io.esm.min.js")
# A streaming job as a user would write it: attached to a store, its queries also told to the
# collector by the JVM listener that `wmon submit` loads.
JOB = """
import sys, time
import monitor
from pyspark.sql import SparkSession

spark = SparkSession.builder.master("local[1]").appName("from-the-wheel").getOrCreate()
handle = monitor.attach(spark, sys.argv[1])
query = (
    spark.readStream.format("rate").option("rowsPerSecond", 5).load()
    .writeStream.format("noop").queryName("from_the_wheel")
    .trigger(processingTime="500 milliseconds").start()
)
while len(query.recentProgress) < 3:
    time.sleep(0.2)
query.stop()
handle.detach(timeout=60)
spark.stop()
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel of `make dist`, with its `spark` extra, in a fresh virtualenv; its bin/."""
    where = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        ["bash", str(ROOT / "scripts" / "dist.sh"), str(where / "dist")],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (where / "dist").glob("*.whl")
    # No pip of its own (ensurepip's 3 s): this Python's pip installs into it, with --python.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where / "venv")], check=True)
    bin_dir = where / "venv" / "bin"
    # Without byte-compiling every module installed (PySpark's thousands among them): a third
    # of the install's time. Python compiles what the tests import as it imports it, and, with
    # PYTHONDONTWRITEBYTECODE set, again in each process, keeping nothing; still a gain as a
    # whole (this test 54.3 s before, 45.7 s after).
    pip = [sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install"]
    pip += ["--quiet", "--no-compile", f"{wheel}[spark]"]
    subprocess.run(pip, check=True, cwd=where)
    return bin_dir


def outside_env(bin_dir: Path, **extra: str) -> dict[str, str]:
    """An environment with no repository in it: the venv's Python for PySpark, no PYTHONPATH,
    no WMON_ settings from the machine."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("WMON_") and key != "PYTHONPATH"
    }
    python = str(bin_dir / "python")
    env.update(PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=python, SPARK_LOCAL_IP="127.0.0.1")
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return {**env, **extra}


def wmon(bin_dir: Path, *args: str, cwd: Path) -> str:
    done = subprocess.run(
        [str(bin_dir / "wmon"), *args],
        capture_output=True,
        text=True,
        env=outside_env(bin_dir),
        cwd=cwd,
        check=True,
    )
    return done.stdout


def get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read()


def test_the_installed_package_is_not_the_repository(installed, tmp_path):
    found = subprocess.run(
        [str(installed / "python"), "-c", "import monitor, web, wmon; print(wmon.__file__)"],
        capture_output=True,
        text=True,
        env=outside_env(installed),
        cwd=tmp_path,
        check=True,
    )
    assert Path(found.stdout.strip()).is_relative_to(installed.parent)
    assert wmon(installed, "--version", cwd=tmp_path).strip() == "wmon 0.1.0"


def test_spark_conf_points_at_the_jar_inside_the_package(installed, tmp_path):
    first = wmon(installed, "spark-conf", cwd=tmp_path).splitlines()[0]
    jar = Path(first.removeprefix("--jars "))
    assert jar.is_relative_to(installed.parent) and jar.name == "wmon-spark.jar"
    assert jar.stat().st_size > 10_000


def test_the_dashboard_and_a_job_work_from_the_wheel(installed, tmp_path):
    store, port = f"sqlite:///{tmp_path / 'wmon.db'}", closed_port()
    wmon(installed, "db", "upgrade", "--database-url", store, cwd=tmp_path)
    server = start(
        [str(installed / "wmon"), "serve", "--port", str(port), "--database-url", store],
        tmp_path / "serve",
        outside_env(installed, WMON_INGEST_TOKEN=TOKEN),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _answers(f"{base}/api/queries"), 60, "the dashboard")
        (tmp_path / "job.py").write_text(JOB)
        attached = f"sqlite:///{tmp_path / 'attached.db'}"
        job = subprocess.run(
            [
                str(installed / "wmon"),
                "submit",
                "--url",
                base,
                "--token",
                TOKEN,
                "--",
                "job.py",
                attached,
            ],
            capture_output=True,
            text=True,
            env=outside_env(installed),
            cwd=tmp_path,
            timeout=240,
        )
        assert job.returncode == 0, job.stderr[-3000:]

        # Told by the JVM listener to the collector, and stored by attach in its own store.
        def listed():
            return json.loads(get(f"{base}/api/queries")[1])["queries"]

        wait_until(
            lambda: [q["name"] for q in listed()] == ["from_the_wheel"], 60, "the job's query"
        )
        told = listed()[0]
        assert told["last_batch_id"] >= 2
        pages = ["/", f"/queries/{told['id']}", f"/queries/{told['id']}/history", "/alerts"]
        for path in [*pages, *(f"/vendor/{name}" for name in VENDOR)]:
            status, body = get(base + path)
            assert (path, status) == (path, 200) and body
        stored = json.loads(
            wmon(installed, "queries", "--json", "--database-url", attached, cwd=tmp_path)
        )
        assert [(q["name"], q["last_batch_id"] >= 2) for q in stored] == [("from_the_wheel", True)]
    finally:
        end(server)


def _answers(url: str) -> bool:
    try:
        return get(url)[0] == 200
    except OSError:
        time.sleep(0.2)
        return False

"""GET /metrics scraped by a real Prometheus server (Debian's `prometheus`, started here on a
free port): after a real streaming query ran, PromQL through Prometheus' HTTP API returns the
partition watermarks and late-record counts that `wmon partitions --json` shows."""

import json
import shutil
import subprocess
import threading
import urllib.parse
import urllib.request
from contextlib import contextmanager

import pytest
from werkzeug.serving import make_server

import monitor
from streaming.log import PartitionedLog
from streaming.scenarios import play
from tests.helpers import closed_port, unique_name, wait_until
from web import create_app, db, retention
from wmon.main import main

pytestmark = pytest.mark.spark
SCRAPE = "1s"


@contextmanager
def served(database_url):
    """The dashboard app on a free port in a thread; its host:port."""
    app = create_app({"DATABASE_URL": database_url})
    http = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{http.server_port}"
    finally:
        http.shutdown()
        thread.join(timeout=10)
        retention.pruner(app).stop()
        db.dispose(app)


@contextmanager
def prometheus(tmp_path, target):
    """A Prometheus server scraping `target`'s /metrics every second; its URL."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus is not installed: `make setup` installs Debian's package")
    config = tmp_path / "prometheus.yml"
    config.write_text(
        f"global:\n  scrape_interval: {SCRAPE}\n  evaluation_interval: {SCRAPE}\n"
        f"scrape_configs:\n  - job_name: wmon\n    static_configs:\n"
        f"      - targets: ['{target}']\n"
    )
    port = closed_port()  # free for Prometheus to listen on
    log = (tmp_path / "prometheus.log").open("wb")
    server = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _ready(url, server), 60, "Prometheus to start")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def _ready(url, server):
    if server.poll() is not None:
        raise AssertionError(f"prometheus exited with {server.returncode}")
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def promql(url, expression):
    """The instant vector of `expression`, as {partition label: value}."""
    query = urllib.parse.urlencode({"query": expression})
    with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=10) as response:
        answer = json.load(response)
    assert answer["status"] == "success", answer
    return {
        f"{item['metric']['topic']}/{item['metric']['partition']}": float(item["value"][1])
        for item in answer["data"]["result"]
    }


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_prometheus_scrapes_what_wmon_partitions_shows(
    spark, log_dir, checkpoint, database_url, tmp_path, capsys
):
    log = PartitionedLog(log_dir)
    scenario = play("late_burst", log, partitions=3, records=600, rate=30.0)
    handle = monitor.attach(spark, database_url)
    reader = spark.readStream.format("partitioned_log").options(**scenario.source_options(log_dir))
    measured = monitor.instrument(reader.load(), checkpoint=checkpoint, delay="10 seconds")
    query = (
        measured.withWatermark("timestamp", "10 seconds")
        .dropDuplicates(["partition", "offset", "timestamp"])
        .writeStream.queryName(unique_name("prom"))
        .format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(180), "the query did not finish"
    finally:
        handle.detach()
    assert main(["partitions", str(query.id), "--json", "--database-url", database_url]) == 0
    shown = {row["partition"]: row for row in json.loads(capsys.readouterr().out)}
    assert any(row["late_records_total"] for row in shown.values()), "the scenario drops records"
    selector = f'{{query_id="{query.id}"}}'
    with served(database_url) as target, prometheus(tmp_path, target) as url:
        late = wait_until(
            lambda: promql(url, f"wmon_partition_late_records_total{selector}"),
            60,
            "Prometheus to scrape the late records",
        )
        watermarks = promql(url, f"wmon_partition_watermark_seconds{selector}")
    assert late == {name: row["late_records_total"] for name, row in shown.items()}
    assert watermarks == {name: row["partition_watermark_ms"] / 1000 for name, row in shown.items()}

"""GET /metrics scraped by a real Prometheus server (Debian's `prometheus`, started here on a
free port): after a real streaming query ran, PromQL through Prometheus' HTTP API returns the
partition watermarks and late-record counts that `wmon partitions --json` shows; the shipped
alert rules (deploy/prometheus/) pass `promtool` and fire on a stalled partition; the shipped
Grafana dashboard (deploy/grafana/) asks only for series /metrics exports, in PromQL that
Prometheus runs."""

import json
import re
import subprocess
import urllib.parse
import urllib.request
from contextlib import contextmanager

import pytest
from prometheus_client.parser import text_string_to_metric_families

import monitor
from streaming.log import PartitionedLog
from streaming.scenarios import play
from tests.support.network import closed_port
from tests.support.paths import ROOT
from tests.support.prometheus import installed, running
from tests.support.serving import served
from tests.support.spark_queries import start_partition_counts, unique_name
from tests.support.waiting import wait_until
from wmon.main import main

pytestmark = pytest.mark.spark
SCRAPE = "1s"
DEPLOY = ROOT / "deploy"
RULES = DEPLOY / "prometheus" / "wmon-rules.yml"
DASHBOARD = DEPLOY / "grafana" / "wmon.json"


@contextmanager
def dashboard(database_url):
    """`wmon serve`'s app on a free port, as a scrape target: its host:port."""
    with served({"DATABASE_URL": database_url}) as url:
        yield url.removeprefix("http://")


@contextmanager
def prometheus(tmp_path, target, rules=None):
    """A Prometheus server scraping `target`'s /metrics every second, evaluating `rules` (a
    rules file) as often; its URL."""
    binary = installed("prometheus", "prometheus")
    config = tmp_path / "prometheus.yml"
    config.write_text(
        f"global:\n  scrape_interval: {SCRAPE}\n  evaluation_interval: {SCRAPE}\n"
        + (f"rule_files: ['{rules}']\n" if rules else "")
        + f"scrape_configs:\n  - job_name: wmon\n    static_configs:\n"
        f"      - targets: ['{target}']\n"
    )
    port = closed_port()  # free for Prometheus to listen on
    url = f"http://127.0.0.1:{port}"
    command = [
        binary,
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    with running(command, url, tmp_path / "prometheus.log"):
        yield url


def instant(url, expression):
    """The result of evaluating `expression` now, through Prometheus' HTTP API."""
    query = urllib.parse.urlencode({"query": expression})
    with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=10) as response:
        answer = json.load(response)
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def promql(url, expression):
    """The instant vector of `expression`, as {topic/partition: value}."""
    return {
        f"{item['metric']['topic']}/{item['metric']['partition']}": float(item["value"][1])
        for item in instant(url, expression)
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
    with dashboard(database_url) as target, prometheus(tmp_path, target) as url:
        late = wait_until(
            lambda: promql(url, f"wmon_partition_late_records_total{selector}"),
            60,
            "Prometheus to scrape the late records",
        )
        watermarks = promql(url, f"wmon_partition_watermark_seconds{selector}")
    assert late == {name: row["late_records_total"] for name, row in shown.items()}
    assert watermarks == {name: row["partition_watermark_ms"] / 1000 for name, row in shown.items()}


def test_promtool_accepts_the_shipped_rules():
    promtool = installed("promtool", "prometheus")
    checked = subprocess.run(
        [promtool, "check", "rules", str(RULES)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 13 rules found" in checked.stdout


# A query whose watermark is two hours ahead of the clock (age -7200 s), another's 100 s behind.
FUTURE_RULE_TEST = """
rule_files: [{rules}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'wmon_query_watermark_age_seconds{{query="ahead",query_id="a"}}'
        values: '-7200x5'
      - series: 'wmon_query_status{{query="ahead",query_id="a",status="active"}}'
        values: '1x5'
      - series: 'wmon_query_watermark_age_seconds{{query="behind",query_id="b"}}'
        values: '100x5'
      - series: 'wmon_query_status{{query="behind",query_id="b",status="active"}}'
        values: '1x5'
    alert_rule_test:
      - eval_time: 2m
        alertname: WmonFutureEventTime
        exp_alerts:
          - exp_labels: {{severity: critical, query: ahead, query_id: a}}
            exp_annotations:
              summary: "ahead: the watermark is 2h 0m 0s ahead of the clock"
              description: >-
                A record from the future drags the watermark of ahead ahead: every record read
                after it is late and dropped. wmon_partition_future_records_total names the
                partition; wmon's own future_event_time alert and `wmon batches` the record
                too.
"""


def passes_promtool_test(tmp_path, test):
    """Run a `promtool test rules` file over the shipped rules, evaluated by Prometheus' own
    rule engine on the series it gives; assert that every expectation in it holds."""
    promtool = installed("promtool", "prometheus")
    test_file = tmp_path / "rules-test.yml"
    test_file.write_text(test.format(rules=RULES))
    tested = subprocess.run(
        [promtool, "test", "rules", str(test_file)], capture_output=True, text=True
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_the_shipped_future_event_time_rule_fires_on_a_watermark_ahead_of_the_clock(tmp_path):
    passes_promtool_test(tmp_path, FUTURE_RULE_TEST)


# A partition stalled for two minutes, then moving again: held for two more. Another
# partition drops a trickle of late records (50 in 5 minutes), a third a burst (150).
HOLD_AND_GRADE_TEST = """
rule_files: [{rules}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'wmon_partition_stalled{{query="q",query_id="q",topic="t",partition="1"}}'
        values: '1 1 1 0 0 0 0 0'
      - series: 'wmon_query_status{{query="q",query_id="q",status="active"}}'
        values: '1x8'
      - series: 'wmon_partition_late_records_total{{query="q",topic="t",partition="2"}}'
        values: '0+10x8'
      - series: 'wmon_partition_late_records_total{{query="q",topic="t",partition="3"}}'
        values: '0+30x8'
    alert_rule_test:
      - eval_time: 4m
        alertname: WmonPartitionStalled
        exp_alerts:
          - exp_labels: {{severity: critical, query: q, query_id: q, topic: t, partition: "1"}}
            exp_annotations:
              summary: "q: partition t/1 does not advance"
              description: >-
                Records wait in t/1 but the query has not read any for the stall timeout.
      - eval_time: 6m
        alertname: WmonPartitionStalled
        exp_alerts: []
      - eval_time: 7m
        alertname: WmonLateRecords
        exp_alerts:
          - exp_labels: {{severity: warning, query: q, topic: t, partition: "3"}}
            exp_annotations:
              summary: "q: t/3 dropped 150 late records in 5 minutes"
"""


def test_the_shipped_rules_hold_a_cleared_stall_and_page_on_late_records_past_a_trickle(
    tmp_path,
):
    """keep_firing_for keeps the stall firing two minutes after it cleared; a partition that
    drops 50 late records in 5 minutes is no alert, one that drops 150 is a warning."""
    passes_promtool_test(tmp_path, HOLD_AND_GRADE_TEST)


def exported_names(target):
    """The names of the series GET /metrics declares, with or without samples now."""
    with urllib.request.urlopen(f"http://{target}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        family.name + ("_total" if family.type == "counter" else "")
        for family in text_string_to_metric_families(text)
    }


def dashboard_expressions():
    """Each panel's PromQL, with Grafana's variables as a dashboard would fill them."""
    dashboard = json.loads(DASHBOARD.read_text())
    return [
        target["expr"].replace("$query", ".*").replace("$__rate_interval", "1m")
        for panel in dashboard["panels"]
        for target in panel["targets"]
    ]


def answered_panels(url):
    """Each dashboard expression's result once all have data, else None. Live alerts and
    pending timers have none in this scenario: wmon's own evaluator does not run here, and the
    query keeps no timers."""
    results = {expr: instant(url, expr) for expr in dashboard_expressions()}
    quiet = ("wmon_alerts", "wmon_query_pending_timers")
    waiting = [e for e, found in results.items() if not found and not any(q in e for q in quiet)]
    return None if waiting else results


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_stalled_partition_fires_the_shipped_rule_and_the_dashboard_runs(
    spark, log_dir, checkpoint, database_url, tmp_path
):
    scenario = play(
        "stalled_partition",
        PartitionedLog(log_dir),
        partitions=3,
        records=900,
        rate=60.0,
        stalled_partition=1,
    )
    handle = monitor.attach(spark, database_url, stall_timeout=1, idle_timeout=60)
    query = start_partition_counts(spark, scenario, log_dir, checkpoint)
    try:
        with dashboard(database_url) as target, prometheus(tmp_path, target, RULES) as url:
            firing = wait_until(
                lambda: instant(
                    url,
                    f'ALERTS{{alertname="WmonPartitionStalled",alertstate="firing",'
                    f'query_id="{query.id}"}}',
                ),
                120,
                "the partition-stalled rule to fire",
            )
            names = exported_names(target)
            # Every panel shows data once Prometheus has scraped twice (rates need two points).
            results = wait_until(
                lambda: answered_panels(url), 60, "every dashboard panel to show data"
            )
    finally:
        query.stop()
        handle.detach()
    assert [(a["metric"]["topic"], a["metric"]["partition"]) for a in firing] == [
        ("telemetry", "1")
    ]
    assert firing[0]["metric"]["severity"] == "critical"
    used = {name for expr in results for name in re.findall(r"\bwmon_\w+", expr)}
    assert used and used <= names, used - names


# Partition 1 falls behind for good; partition 2 for three minutes, then catches up: only the
# first lasts the five minutes the rule waits for.
FALLING_BEHIND_TEST = """
rule_files: [{rules}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'wmon_partition_backlog_verdict{{query="q",query_id="q",topic="t",
          partition="1",verdict="falling_behind"}}'
        values: '1x8'
      - series: 'wmon_partition_backlog_verdict{{query="q",query_id="q",topic="t",
          partition="2",verdict="falling_behind"}}'
        values: '1 1 1 0 0 0 0 0'
      - series: 'wmon_query_status{{query="q",query_id="q",status="active"}}'
        values: '1x8'
    alert_rule_test:
      - eval_time: 4m
        alertname: WmonFallingBehind
        exp_alerts: []
      - eval_time: 6m
        alertname: WmonFallingBehind
        exp_alerts:
          - exp_labels:
              severity: warning
              query: q
              query_id: q
              topic: t
              partition: "1"
              verdict: falling_behind
            exp_annotations:
              summary: "q: t/1 is falling behind"
              description: >-
                The backlog of t/1 has grown over every minute of batches for 5 minutes:
                records arrive faster than q reads them. wmon_partition_backlog_seconds says
                how long its oldest unread record has waited.
"""


def test_the_shipped_falling_behind_rule_waits_five_minutes_of_a_growing_backlog(tmp_path):
    passes_promtool_test(tmp_path, FALLING_BEHIND_TEST)


# The operator's state grows all along; the watermark is stalled from the third minute on.
STATE_GROWING_TEST = """
rule_files: [{rules}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'wmon_operator_state_growing{{query="q",query_id="q",operator="dedupe",
          operator_index="0"}}'
        values: '1x8'
      - series: 'wmon_query_watermark_stalled{{query="q",query_id="q"}}'
        values: '0 0 0 1 1 1 1 1'
      - series: 'wmon_query_status{{query="q",query_id="q",status="active"}}'
        values: '1x8'
    alert_rule_test:
      - eval_time: 4m
        alertname: WmonStateGrowing
        exp_alerts: []
      - eval_time: 5m
        alertname: WmonStateGrowing
        exp_alerts:
          - exp_labels:
              severity: warning
              query: q
              query_id: q
              operator: dedupe
              operator_index: "0"
            exp_annotations:
              summary: "q: the state of dedupe grows while the watermark is stalled"
              description: >-
                Nothing is evicted from the state of dedupe while the watermark of q stands:
                the road to running out of memory. wmon_operator_state_rows says how large it
                is.
"""


def test_the_shipped_state_growing_rule_waits_for_a_stalled_watermark(tmp_path):
    passes_promtool_test(tmp_path, STATE_GROWING_TEST)

"""`python -m benchmarks --ways-in` end to end with tiny sizes: the collector over real HTTP into
SQLite and PostgreSQL, a backfill of a real zstd event log, and the JVM listener in the shared
SparkSession posting to a real collector. The figures are measured, so only their presence
and sense are checked, never their size."""

import re
from typing import Any

import pytest

from benchmarks import main
from benchmarks.ways_in import listener_figures

NUMBER = r"([\d,]+(?:\.\d+)?)"


def figures(pattern: str, out: str) -> list[float]:
    """The numbers of the one output line matching `pattern` (its groups)."""
    found = re.findall(pattern, out, re.MULTILINE)
    assert len(found) == 1, f"{pattern!r} should match one line of:\n{out}"
    groups = found[0] if isinstance(found[0], tuple) else (found[0],)
    return [float(group.replace(",", "")) for group in groups]


def test_collector_and_backfill_figures(capsys: pytest.CaptureFixture[str]) -> None:
    # The scratch PostgreSQL database is made where the tests' is ($WMON_TEST_POSTGRES_URL).
    args = ["--ways-in", "--spark-seconds", "0", "--events", "30", "--partitions", "4"]
    args += ["--request-events", "10"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "JVM listener" not in out  # --spark-seconds 0 skips it
    assert "collector over HTTP, 30 progress events x 4 partitions, 10 per request" in out
    for store in ("SQLite", "PostgreSQL"):
        events, rows = figures(rf"^  {store}: {NUMBER} events/s = {NUMBER} partition rows/s$", out)
        assert events > 0 and rows == pytest.approx(4 * events, rel=0.01, abs=2)
    # 30 batches: a job's start and end line and a progress event each, the query's start and
    # end, the application's start and end and the log's first line.
    lines, events = figures(
        rf"^event-log backfill into SQLite, 30 batches x 4 partitions: {NUMBER} lines "
        rf"\({NUMBER} streaming events\), \d+\.\d\d MB zstd",
        out,
    )
    assert (lines, events) == (95, 32)
    rates = figures(
        rf"^  {NUMBER} events/s, {NUMBER} lines/s, {NUMBER} MB/s compressed "
        rf"\({NUMBER} MB/s of text\), {NUMBER} s$",
        out,
    )
    events_per_s, lines_per_s, *_, seconds = rates
    assert events_per_s > 0 and seconds > 0
    assert lines_per_s == pytest.approx(events_per_s * 95 / 32, rel=0.01, abs=2)


def test_ways_in_is_one_selection_among_others(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--ways-in", "--dashboard"])
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.spark
def test_jvm_listener_figures(spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    listener_figures(3, spark)
    out = capsys.readouterr().out
    callbacks, p50, p99, most = figures(
        rf"^  time per callback, {NUMBER} callbacks: p50 {NUMBER} ms, p99 {NUMBER} ms, "
        rf"max {NUMBER} ms$",
        out,
    )
    assert callbacks >= 3, "started, at least one progress event, terminated"
    assert 0 < p50 <= p99 <= most
    delivered, queued = figures(
        rf"^  delivered {NUMBER} of {NUMBER} events queued "
        r"\(dropped 0, rejected 0, failures 0\)$",
        out,
    )
    # Every event queued is delivered: one per callback, and a wmon.BatchRunning for each look
    # of the running watch (every 5 s) that found a batch in flight, as a loaded machine's
    # 3-second query may last that long (delivered 5 of 5 queued, 3 callbacks).
    assert delivered == queued >= callbacks
    assert spark.streams.active == []

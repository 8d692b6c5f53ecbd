"""`wmon advise` on a store whose lateness histograms are known."""

import json

import pytest

from monitor.store.schema.engine import create_engine
from monitor.store.tiers.prune import Cutoffs, prune
from monitor.store.write.writes import write_event
from tests.support.diagnosis_scenario import write_telemetry
from tests.support.progress import fixture_batch, operator_observation
from wmon.main import main
from wmon.options import moment

QUERY = "33333333-3333-3333-3333-333333333333"
DELAY = 10_000


def figures(batch_id, partitions):
    """A progress event whose one task measured `partitions`: {name: (late, slack)}."""
    measured = {
        name: {
            "records": sum(late.values()) + sum(slack.values()),
            "min_ms": 1_700_000_000_000,
            "max_ms": 1_700_000_000_000,
            "late": sum(late.values()),
            "samples": [],
            "late_buckets": late,
            "slack_buckets": slack,
        }
        for name, (late, slack) in partitions.items()
    }
    return fixture_batch(
        batch_id=batch_id,
        id=QUERY,
        name="scooters",
        timestamp=f"2026-11-26T12:00:{batch_id:02d}.000Z",
        observedMetrics=operator_observation(batch_id, measured, DELAY, 1_700_000_000_000),
    )


@pytest.fixture
def store(database_url):
    engine = create_engine(database_url)
    # p0: 99 on time with 4-7 ms of slack, then one late by 1,024-2,047 ms; p1: 100 on time.
    write_event(engine, figures(0, {"p0": ({}, {"3": 60}), "p1": ({}, {"20": 50})}))
    write_event(engine, figures(1, {"p0": ({"11": 1}, {"3": 39}), "p1": ({}, {"20": 50})}))
    engine.dispose()
    return database_url


def delays(*by_share):
    """The advice's delays for 99%, 99.9% and 100% of the records."""
    return [
        {"share": share, "delay_ms": ms, "no_delay": None}
        for share, ms in zip((0.99, 0.999, 1.0), by_share, strict=True)
    ]


def test_advise_names_the_delay_for_each_share_per_query_and_partition(store, capsys):
    assert main(["advise", "scooters", "--json", "--database-url", store]) == 0
    by_partition = {row["partition"]: row for row in json.loads(capsys.readouterr().out)}
    assert by_partition[None] == {
        "partition": None,
        "records": 200,
        "late_records": 1,
        "delay_ms": DELAY,
        # 199 of 200 kept even 3 ms shorter; all of them with 2,048 ms more.
        "delays": delays(DELAY - 3, DELAY + 2_048, DELAY + 2_048),
    }
    assert by_partition["p0"]["delays"] == delays(DELAY - 3, DELAY + 2_048, DELAY + 2_048)
    assert by_partition["p1"]["delays"] == delays(0, 0, 0)


def test_advise_over_a_range_of_batch_times(store, capsys):
    argv = ["advise", QUERY, "--json", "--database-url", store]
    assert main([*argv, "--to", "2026-11-26T12:00:00.500Z"]) == 0
    [whole, *_] = json.loads(capsys.readouterr().out)
    assert (whole["records"], whole["late_records"]) == (110, 0)
    assert main([*argv, "--from", "2026-11-26T12:00:01"]) == 0
    [whole, *_] = json.loads(capsys.readouterr().out)
    assert (whole["records"], whole["late_records"]) == (90, 1)


def test_advise_as_a_table(store, capsys):
    assert main(["advise", "scooters", "--database-url", store]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        *("partition", "records", "late", "delay", "now"),
        *("keeps", "99%", "keeps", "99.9%", "keeps", "100%"),
    ]
    # 9,997 ms (3 ms shorter than the query's 10 s) keeps 99%; 12,048 ms keeps them all.
    assert lines[1].split() == [
        *("(query)", "200", "1", "10", "s"),
        *("10.0", "s", "(−3", "ms)", "12", "s", "(+2.0", "s)", "12", "s", "(+2.0", "s)"),
    ]


@pytest.fixture
def future_store(database_url):
    """The telemetry query: a record 2 h ahead drives the watermark from batch 4 on, and the
    30 records batch 5 reads are 2 h late."""
    engine = create_engine(database_url)
    write_telemetry(engine)
    engine.dispose()
    return database_url


NO_DELAY = {
    "delay_ms": None,
    "no_delay": (
        "no delay keeps these records: a future-dated record drove the watermark;"
        " fix the producer's clock"
    ),
}


def test_advise_says_no_delay_keeps_what_a_future_dated_record_dropped(future_store, capsys):
    assert main(["advise", "telemetry", "--json", "--database-url", future_store]) == 0
    whole, *partitions = json.loads(capsys.readouterr().out)
    # Every share needs the 30 records 2 h late: 2 h 19 min of delay, no fix.
    assert whole["delays"] == [{"share": s} | NO_DELAY for s in (0.99, 0.999, 1.0)]
    assert [p["delays"][-1]["no_delay"] for p in partitions] == [NO_DELAY["no_delay"]] * 3
    assert main(["advise", "telemetry", "--database-url", future_store]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].endswith("no delay keeps these  no delay keeps these  no delay keeps these")
    assert lines[-1] == (
        "No delay keeps these records: a future-dated record drove the watermark;"
        " fix the producer's clock."
    )


def test_advise_keeps_the_delays_within_the_future_tolerance(future_store, capsys):
    # Batches 2-4: the record drives batch 4's watermark, but only one record is late, by
    # 1-2 s, judged by batch 3's: 12,048 ms keeps it, below the tolerance of 5 min.
    argv = ["advise", "telemetry", "--json", "--database-url", future_store]
    assert main([*argv, "--from", "2026-11-22T03:00:20Z", "--to", "2026-11-22T03:00:40Z"]) == 0
    [whole, *_] = json.loads(capsys.readouterr().out)
    assert whole["delays"] == delays(0, DELAY + 2_048, DELAY + 2_048)


# A cutoff within a day: PostgreSQL's batches expire by whole days (test_prune covers them).
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_advise_over_a_range_older_than_the_batches_kept_reads_the_rollups_and_says_so(
    store, capsys
):
    argv = ["advise", "scooters", "--database-url", store, "--json"]
    assert main(argv) == 0
    from_batches = json.loads(capsys.readouterr().out)
    engine = create_engine(store)
    prune(engine, Cutoffs(moment("2026-11-26T12:00:00.500Z"), 0, 0))
    engine.dispose()
    for range_args in ([], ["--from", "2026-11-26T11:00:00Z"]):
        assert main([*argv, *range_args]) == 0
        out, err = capsys.readouterr()
        assert json.loads(out) == from_batches, "both batches are in the minute's rollups"
        assert err == (
            "wmon: the query's batches before 2026-11-26 12:00:00.500 UTC are no longer kept"
            " (WMON_RETENTION_BATCHES_HOURS): read from its per-minute rollups, to the minute\n"
        )
    assert main([*argv, "--from", "2026-11-26T12:00:01Z"]) == 0
    out, err = capsys.readouterr()
    assert err == "", "a range the batches kept cover says nothing more"
    [whole, *_] = json.loads(out)
    assert (whole["records"], whole["late_records"]) == (90, 1), "batch 1's alone"


def test_advise_without_measured_batches_says_why(database_url, capsys):
    engine = create_engine(database_url)
    write_event(engine, fixture_batch(id=QUERY, name="scooters"))
    engine.dispose()
    assert main(["advise", "scooters", "--database-url", database_url]) == 0
    assert capsys.readouterr().out.startswith("(none: no batch in that range was measured")


def test_advise_refuses_a_time_it_cannot_read(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["advise", "scooters", "--from", "yesterday"])
    assert exited.value.code == 2
    assert "not a time: 'yesterday'" in capsys.readouterr().err

"""GET /api/queries/QUERY/diagnosis on real SQLite and PostgreSQL stores, filled through the
real write path with the instrumented operator's figures: the watermark driver, future-dated
records, the lateness histograms and the delay advisor, checked against figures worked out by
hand."""

import pytest

import web
from monitor.store.tiers.prune import Cutoffs, prune
from monitor.store.write.writes import write_events
from tests.support.diagnosis_scenario import (
    DELAY,
    FUTURE_KEY,
    FUTURE_MS,
    FUTURE_OFFSET,
    NAME,
    QUERY,
    SECOND_FUTURE,
    T0,
    at,
    write_telemetry,
)
from tests.support.progress import batch_event
from web import create_app

TOLERANCE = 300_000  # WMON_FUTURE_TOLERANCE's default, 300 s


@pytest.fixture
def app_config():
    return {"CLOCK": lambda: at(6), "TESTING": True}


def ok(response):
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def diagnosis(client, **params):
    return ok(client.get(f"/api/queries/{NAME}/diagnosis", query_string=params))


def test_the_latest_watermark_was_set_by_a_future_dated_record(engine, client):
    write_telemetry(engine)
    body = diagnosis(client)
    # The default range, as the history endpoints': the hour up to just after batch 5.
    assert (body["query"], body["from_ms"], body["to_ms"]) == (
        QUERY,
        at(5) + 1 - 3_600_000,
        at(5) + 1,
    )
    assert body["future_tolerance_ms"] == TOLERANCE
    assert body["latest"] == {
        "batch_id": 5,
        "batch_time_ms": at(5),
        "watermark_ms": FUTURE_MS - DELAY,
        "watermark_ahead_ms": 7_200_000,  # the banner's "2 h ahead of the clock"
        "driver": {
            "partition": "telemetry/2",
            "record": {"key": FUTURE_KEY, "event_ms": FUTURE_MS, "offset": FUTURE_OFFSET},
            "lead_ms": 7_210_000,  # ahead of batch 5's time, 20 s after batch 3's
            "future_dated": True,
        },
    }


def test_a_watermark_behind_the_clock_set_by_a_record_on_time(engine, client):
    write_telemetry(engine)
    latest = diagnosis(client, to=at(4))["latest"]  # batches up to 3
    assert latest == {
        "batch_id": 3,
        "batch_time_ms": at(3),
        "watermark_ms": at(2) - 11_000,
        "watermark_ahead_ms": None,
        "driver": {
            "partition": "telemetry/0",
            "record": {"key": "k0-2", "event_ms": at(2) - 1_000, "offset": 1_000 + 82 + 40},
            "lead_ms": -11_000,
            "future_dated": False,
        },
    }


def test_the_tolerance_is_the_servers_setting(database_url, engine, monkeypatch):
    write_telemetry(engine)
    monkeypatch.setenv("WMON_FUTURE_TOLERANCE", str(3 * 3_600))  # 3 h: 2 h ahead is tolerated
    app = create_app({"DATABASE_URL": database_url, "CLOCK": lambda: at(6), "TESTING": True})
    body = ok(app.test_client().get(f"/api/queries/{NAME}/diagnosis"))
    assert body["future_tolerance_ms"] == 10_800_000
    assert body["latest"]["driver"]["future_dated"] is False
    assert body["latest"]["watermark_ahead_ms"] == 7_200_000
    # Not future-dated by that tolerance: the 2 h 19 min delay is the advice.
    whole = body["lateness"]["query"]
    assert delays(whole) == [(0.99, 8_398_608), (0.999, 8_398_608), (1.0, 8_398_608)]
    web.stop(app)


@pytest.mark.parametrize(
    ("since", "until", "shares"),
    [
        (None, None, {"telemetry/0": 3, "telemetry/2": 2}),  # batch 0 had no watermark yet
        (at(2), at(5), {"telemetry/0": 2, "telemetry/2": 1}),  # batches 2-4
        (at(4), at(4) + 1, {"telemetry/2": 1}),
        (at(0), at(1), {}),
    ],
    ids=["default-range", "batches-2-to-4", "batch-4", "batch-0"],
)
def test_the_batches_each_partition_drove_the_watermark_in(engine, client, since, until, shares):
    write_telemetry(engine)
    params = {} if since is None else {"from": since, "to": until}
    assert diagnosis(client, **params)["driver_batches"] == shares


def test_future_dated_records_per_partition_over_the_range(engine, client):
    write_telemetry(engine)
    sample_17 = {"key": FUTURE_KEY, "event_ms": FUTURE_MS, "offset": FUTURE_OFFSET}
    sample_21 = dict(zip(("key", "event_ms", "offset"), SECOND_FUTURE, strict=True))
    # Two records, the largest lead the first's; samples from the newest batch first.
    assert diagnosis(client)["future_dated"] == [
        {
            "partition": "telemetry/2",
            "records": 2,
            "lead_ms": 7_230_000,
            "samples": [sample_21, sample_17],
        }
    ]
    assert diagnosis(client, **{"from": at(4), "to": at(6)})["future_dated"] == [
        {"partition": "telemetry/2", "records": 1, "lead_ms": 600_000, "samples": [sample_21]}
    ]
    assert diagnosis(client, **{"from": at(0), "to": at(3)})["future_dated"] == []


def delays(entry):
    assert all(d["no_delay"] is None for d in entry["delays"])
    return [(d["share"], d["delay_ms"]) for d in entry["delays"]]


NO_DELAY_KEEPS = (
    "no delay keeps these records: a future-dated record drove the watermark;"
    " fix the producer's clock"
)


def test_the_advisor_over_all_batches(engine, client):
    """Per record, the delay that would have kept it is DELAY + 1 + the late bucket's upper
    bound, or DELAY + 1 - the slack bucket's lower bound (not below 0): 0 for the 361 on time
    by 16 s or more (and the two future-dated ones), 12,048 ms for the one late by 1-2 s,
    8,398,608 ms for the 30 late by 2^22-2^23 ms. Of 393 records 99% is 390: the ones 2 h
    late are needed for every share. A future-dated record drove the watermark that dropped
    them, and 8,398,608 ms is past the tolerance: no delay is advised, the clock is."""
    write_telemetry(engine)
    lateness = diagnosis(client)["lateness"]
    whole = lateness["query"]
    assert (whole["partition"], whole["records"], whole["late_records"], whole["delay_ms"]) == (
        None,
        393,
        31,
        DELAY,
    )
    no_delay = {"delay_ms": None, "no_delay": NO_DELAY_KEEPS}
    assert whole["delays"] == [{"share": s} | no_delay for s in (0.99, 0.999, 1.0)]
    assert all(p["delays"][0] == {"share": 0.99} | no_delay for p in lateness["partitions"])
    # Late: bucket 11 to 23, the empty ones between included, with their bounds.
    assert [(b["bucket"], b["records"]) for b in whole["late"]] == [
        (11, 1),
        *((number, 0) for number in range(12, 23)),
        (23, 30),
    ]
    assert (whole["late"][0]["min_ms"], whole["late"][0]["max_ms"]) == (1_024, 2_047)
    assert (whole["late"][-1]["min_ms"], whole["late"][-1]["max_ms"]) == (4_194_304, 8_388_607)
    assert [(b["bucket"], b["records"]) for b in whole["slack"] if b["records"]] == [
        (15, 360),
        (20, 1),
        (23, 1),
    ]
    assert len(whole["slack"]) == 9  # buckets 15 to 23


def test_the_advisor_before_the_future_watermark_and_per_partition(engine, client):
    """Batches 2-4: 363 records, one 1-2 s late. 99% is 360 of them, kept with no delay at
    all; 99.9% is 363, which needs the late one: 10,000 + 1 + 2,047 = 12,048 ms."""
    write_telemetry(engine)
    lateness = diagnosis(client, **{"from": at(2), "to": at(5)})["lateness"]
    assert (lateness["query"]["records"], lateness["query"]["late_records"]) == (363, 1)
    assert delays(lateness["query"]) == [(0.99, 0), (0.999, 12_048), (1.0, 12_048)]
    by_name = {entry["partition"]: entry for entry in lateness["partitions"]}
    assert list(by_name) == ["telemetry/0", "telemetry/1", "telemetry/2"]
    # telemetry/1: 121 records, one late: 99% (120) need no delay, 99.9% (121) need it.
    assert (by_name["telemetry/1"]["records"], by_name["telemetry/1"]["delay_ms"]) == (121, DELAY)
    assert delays(by_name["telemetry/1"]) == [(0.99, 0), (0.999, 12_048), (1.0, 12_048)]
    assert delays(by_name["telemetry/0"]) == [(0.99, 0), (0.999, 0), (1.0, 0)]
    assert by_name["telemetry/0"]["late"] == []


def test_a_query_that_is_not_instrumented(engine, client):
    write_events(engine, [batch_event("plain", 0, at(0), name="plain", watermark_ms=at(0))])
    body = ok(client.get("/api/queries/plain/diagnosis"))
    assert body["latest"] == {
        "batch_id": 0,
        "batch_time_ms": at(0),
        "watermark_ms": at(0),
        "watermark_ahead_ms": None,
        "driver": None,
    }
    assert (body["driver_batches"], body["future_dated"]) == ({}, [])
    assert body["lateness"] == {"query": None, "partitions": []}


def test_an_empty_range(engine, client):
    write_telemetry(engine)
    body = diagnosis(client, **{"from": at(-10), "to": at(-5)})
    assert (body["latest"], body["driver_batches"], body["future_dated"]) == (None, {}, [])
    assert body["lateness"] == {"query": None, "partitions": []}


# A cutoff within a day: PostgreSQL's batches expire by whole days
# (tests/monitor/store/tiers/test_prune.py).
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_range_older_than_the_batches_kept_says_where_its_figures_start(engine, client):
    write_telemetry(engine)
    whole = diagnosis(client, **{"from": at(0), "to": at(7)})
    assert (whole["batches_kept_from_ms"], whole["lateness_resolution"]) == (None, "batch")
    prune(engine, Cutoffs(at(3), 0, 0))
    body = diagnosis(client, **{"from": at(0), "to": at(7)})
    assert body["batches_kept_from_ms"] == at(3)
    assert sum(body["driver_batches"].values()) < sum(whole["driver_batches"].values())
    # Every batch of the range is in its one minute: the lateness read from it is the batches'.
    assert body["lateness_resolution"] == "minute"
    assert body["lateness"] == whole["lateness"] and whole["lateness"]["query"]["late_records"]
    assert diagnosis(client, **{"from": at(3), "to": at(7)})["batches_kept_from_ms"] is None


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("from=yesterday", "from"),
        ("to=1.5", "to"),
        (f"from={T0}&to={T0}", "from"),
        (f"from={T0 + 1}&to={T0}", "from"),
        ("to=-1", "to"),
        ("from=99999999999999999999", "from"),
    ],
)
def test_bad_parameters_get_a_400_naming_them(engine, client, query, named):
    write_telemetry(engine)
    response = client.get(f"/api/queries/{NAME}/diagnosis?{query}")
    assert response.status_code == 400
    assert named in response.get_json()["error"]


def test_an_unknown_query_gets_a_404(client):
    response = client.get("/api/queries/nosuchquery/diagnosis")
    assert response.status_code == 404
    assert "nosuchquery" in response.get_json()["error"]

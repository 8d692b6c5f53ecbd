"""Alert rules as pure predicates: each rule on the facts that should and should not fire it."""

import dataclasses

import pytest

from monitor.alerts.rules import (
    MEANINGS,
    RULES,
    URGENT,
    Severity,
    failure_reason,
    rate_text,
    rule,
    thresholds,
)
from monitor.config import load_settings
from monitor.health.backlog import Verdict
from monitor.health.facts import FutureDated, PartitionFacts, QueryFacts, Thresholds
from monitor.health.status import Status

NOW = 1_800_000_000_000
MINUTE = 60_000


def facts(**changes):
    base = dict(query_id="q", name="orders", status="active", last_progress_ms=NOW - 1_000)
    base.update(watermark_ms=NOW - MINUTE)
    return QueryFacts(**(base | changes))


AHEAD = FutureDated(3, 2 * 60 * MINUTE, (("s-17", NOW + 2 * 60 * MINUTE, 8812), ("s-18", NOW, 9)))
PARTS = (
    PartitionFacts("t/0", offset_lag=10, future=AHEAD),
    PartitionFacts("t/1", idle=True, offset_lag=0),
    PartitionFacts("t/2", stalled=True, rewound=True, offset_lag=500, late_records=7, records=9),
    PartitionFacts("t/3", late_records=150, records=1_000),
)

BEHIND = (
    PartitionFacts("t/0", offset_lag=900, verdict=Verdict.FALLING_BEHIND),
    PartitionFacts("t/1", offset_lag=50, verdict=Verdict.CATCHING_UP),
    PartitionFacts("t/2", offset_lag=700, verdict=Verdict.FALLING_BEHIND),
    # Falling behind in a batch before the latest: not now.
    PartitionFacts("t/3", in_latest_batch=False, verdict=Verdict.FALLING_BEHIND),
)


def found(name, query_facts, **params):
    """What the rule finds with `params`, as [(its partitions, its value)]; [] for nothing. The
    facts are read with the thresholds the parameters set, as the evaluator reads them."""
    rule_ = RULES[name]
    every = {other: known.defaults() for other, known in RULES.items()}
    every[name] |= params
    query_facts = dataclasses.replace(query_facts, thresholds=thresholds(every))
    finding = rule_.check(query_facts, NOW, every[name])
    return [] if finding is None else [(finding.partitions, finding.value)]


@pytest.mark.parametrize(
    "name, query_facts, params, expected",
    [
        ("watermark_stalled", facts(watermark_stalled=True), {}, [((), NOW - MINUTE)]),
        ("watermark_stalled", facts(), {}, []),
        ("watermark_stalled", facts(watermark_stalled=True, status="terminated"), {}, []),
        ("partition_stalled", facts(partitions=PARTS), {}, [(("t/2",), 1)]),
        ("partition_idle", facts(partitions=PARTS), {}, [(("t/1",), 1)]),
        ("falling_behind", facts(partitions=BEHIND), {}, [(("t/0", "t/2"), 2)]),
        ("falling_behind", facts(partitions=BEHIND, status="terminated"), {}, []),
        ("falling_behind", facts(partitions=PARTS), {}, []),
        ("partition_idle", facts(partitions=PARTS, status="failed"), {}, []),
        ("rewound", facts(partitions=PARTS), {}, [(("t/2",), None)]),
        (
            "rewound",
            facts(watermark_rewound=True),
            {},
            [((), NOW - MINUTE)],
        ),
        ("watermark_skew", facts(skew_ms=5 * MINUTE + 1), {}, [((), 5 * MINUTE + 1)]),
        ("watermark_skew", facts(skew_ms=5 * MINUTE), {}, []),
        ("watermark_skew", facts(skew_ms=90_000), {"threshold": MINUTE}, [((), 90_000)]),
        ("watermark_skew", facts(), {}, []),
        ("late_records", facts(partitions=PARTS), {}, [(("t/3",), 150)]),
        ("late_records", facts(partitions=PARTS), {"count": 150}, []),
        ("late_records", facts(partitions=PARTS), {"share": 1_500}, []),
        ("late_records", facts(partitions=PARTS), {"count": 6}, [(("t/2", "t/3"), 157)]),
        (
            "late_records",
            facts(partitions=(PartitionFacts("t/0", late_records=150, records=100_000),)),
            {},
            [],
        ),
        ("future_event_time", facts(partitions=PARTS), {}, [(("t/0",), 2 * 60 * MINUTE)]),
        ("future_event_time", facts(partitions=PARTS), {"count": 3}, []),
        ("future_event_time", facts(), {}, []),
        (
            "future_event_time",
            facts(watermark_ms=NOW + 5 * MINUTE + 1),
            {},
            [((), 5 * MINUTE + 1)],
        ),
        ("future_event_time", facts(watermark_ms=NOW + 5 * MINUTE), {}, []),
        (
            "future_event_time",
            facts(watermark_ms=NOW + 60 * MINUTE, partitions=PARTS),
            {},
            [(("t/0",), 2 * 60 * MINUTE)],
        ),
        ("future_event_time", facts(watermark_ms=NOW + 60 * MINUTE, status="failed"), {}, []),
        ("watermark_age", facts(watermark_ms=NOW - 11 * MINUTE), {}, [((), 11 * MINUTE)]),
        ("watermark_age", facts(), {}, []),
        ("watermark_age", facts(watermark_ms=None), {}, []),
        ("offset_lag", facts(partitions=PARTS), {"threshold": 509}, [((), 510)]),
        ("offset_lag", facts(partitions=PARTS), {}, []),
        ("query_failed", facts(status="failed", exception="boom\nat x"), {}, [((), None)]),
        ("query_failed", facts(status="terminated"), {}, []),
        ("query_terminated", facts(status="terminated"), {}, [((), None)]),
        ("query_terminated", facts(status="active"), {}, []),
        (
            "query_terminated",
            facts(status="terminated", ended_at_ms=NOW - 60 * MINUTE),
            {},
            [((), None)],
        ),
        ("query_terminated", facts(status="terminated", ended_at_ms=NOW - 61 * MINUTE), {}, []),
        (
            "query_failed",
            facts(status="failed", ended_at_ms=NOW - 23 * 60 * MINUTE),
            {},
            [((), None)],
        ),
        ("query_failed", facts(status="failed", ended_at_ms=NOW - 25 * 60 * MINUTE), {}, []),
        (
            "query_failed",
            facts(status="failed", ended_at_ms=NOW - 25 * 60 * MINUTE),
            {"within": 26 * 60 * MINUTE},
            [((), None)],
        ),
        (
            "query_failed",
            facts(
                status="failed",
                ended_at_ms=NOW - 25 * 60 * MINUTE,
                alerting=frozenset({"query_failed"}),
            ),
            {},
            [((), None)],
        ),
        ("no_progress", facts(last_progress_ms=NOW - 6 * MINUTE), {}, [((), 6 * MINUTE)]),
        ("no_progress", facts(last_progress_ms=NOW - 6 * MINUTE, status="terminated"), {}, []),
        ("no_progress", facts(), {}, []),
        (
            "no_progress",
            facts(last_progress_ms=NOW - 6 * MINUTE, status="idle"),
            {},
            [((), 6 * MINUTE)],
        ),
    ],
    ids=[
        "stalled-watermark",
        "moving-watermark",
        "stalled-but-stopped",
        "stalled-partition",
        "idle-partition",
        "falling-behind",
        "falling-behind-but-terminated",
        "not-falling-behind",
        "idle-but-failed",
        "rewound-partition",
        "rewound-watermark",
        "skew-above",
        "skew-at-threshold",
        "skew-own-threshold",
        "skew-unknown",
        "late-above-count-and-share",
        "late-at-count",
        "late-at-share",
        "late-partitions-grouped",
        "late-a-trickle-of-a-busy-partition",
        "future-dated-above-zero",
        "future-dated-at-count",
        "nothing-future-dated",
        "watermark-ahead",
        "watermark-at-tolerance",
        "partitions-named-before-the-watermark",
        "watermark-ahead-but-stopped",
        "old-watermark",
        "fresh-watermark",
        "no-watermark",
        "lag-above",
        "lag-below-default",
        "failed",
        "terminated-is-not-failed",
        "terminated",
        "running-is-not-terminated",
        "terminated-an-hour-ago",
        "terminated-longer-ago",
        "failed-within-a-day",
        "failed-longer-ago",
        "failed-within-its-own-window",
        "failed-longer-ago-and-told-already",
        "silent",
        "silent-but-stopped",
        "reporting",
        "idle-and-silent",
    ],
)
def test_rule(name, query_facts, params, expected):
    assert found(name, query_facts, **params) == expected


@pytest.mark.parametrize(
    "future, message",
    [
        (
            AHEAD,
            "t/0 read 3 records up to 2 h ahead of the clock in 5 min, e.g. offset 8812, key s-17",
        ),
        (
            FutureDated(1, 400_000, ((None, NOW, None),)),
            "t/0 read 1 record up to 6 min 40 s ahead of the clock in 5 min",
        ),
        (
            FutureDated(2, 400_000),
            "t/0 read 2 records up to 6 min 40 s ahead of the clock in 5 min",
        ),
    ],
    ids=["with-offset-and-key", "record-without-either", "no-record-kept"],
)
def test_future_event_time_names_the_partition_and_the_record(future, message):
    rule_ = RULES["future_event_time"]
    parts = (PartitionFacts("t/0", future=future),)
    finding = rule_.check(facts(partitions=parts), NOW, rule_.defaults())
    assert finding.message == message


def test_future_event_time_without_partition_figures_says_the_watermark_is_ahead():
    rule_ = RULES["future_event_time"]
    finding = rule_.check(facts(watermark_ms=NOW + 2 * 60 * MINUTE), NOW, rule_.defaults())
    assert finding.message == (
        "the watermark is 2 h ahead of the clock: a record from the future drags it"
        " (instrument() names the partition and the record)"
    )


def test_failure_message_is_the_first_line_of_the_exception():
    rule_ = RULES["query_failed"]
    finding = rule_.check(facts(status="failed", exception="boom\n at x"), NOW, rule_.defaults())
    assert finding.message == "the query failed: boom"


def test_rule_names_are_unique():
    with pytest.raises(ValueError, match="already registered"):

        @rule("again", Severity.WARNING)
        def watermark_stalled(facts, now_ms, params):
            return None


@pytest.mark.parametrize(
    "text, reason",
    [
        ("boom\n at x", "boom"),
        ((), "no exception text"),
        (
            "py4j.Py4JException: An exception was raised by the Python Proxy. Return Message: "
            'Traceback (most recent call last):\n  File "x.py", line 3, in call\n'
            "    raise RuntimeError('gone')\nRuntimeError: the scooter table is gone\n\n"
            "\tat py4j.Protocol.getReturnValue(Protocol.java:476)",
            "RuntimeError: the scooter table is gone",
        ),
        (
            "org.apache.spark.SparkException: Job aborted.\nCaused by: java.io.IOException: disk",
            "org.apache.spark.SparkException: Job aborted.",
        ),
    ],
    ids=["first-line", "none", "python-traceback", "java-only"],
)
def test_failure_reason(text, reason):
    assert failure_reason(text) == reason


@pytest.mark.parametrize(
    "count, message",
    [
        (1, "t/0 is stalled"),
        (2, "t/0 and t/1 are stalled"),
        (3, "t/0, t/1 and t/2 are stalled"),
        (5, "t/0, t/1, t/2 and 2 more are stalled"),
    ],
)
def test_one_finding_lists_the_partitions_it_covers(count, message):
    parts = tuple(PartitionFacts(f"t/{n}", stalled=True) for n in range(count))
    rule_ = RULES["partition_stalled"]
    finding = rule_.check(facts(partitions=parts), NOW, rule_.defaults())
    assert finding.message == message
    assert finding.partitions == tuple(f"t/{n}" for n in range(count))


def test_late_records_say_how_much_of_the_input_they_were():
    parts = (
        PartitionFacts("t/0", late_records=120, records=2_000),
        PartitionFacts("t/1", late_records=300, records=4_000),
    )
    rule_ = RULES["late_records"]
    finding = rule_.check(facts(partitions=parts), NOW, rule_.defaults())
    assert finding.message == (
        "t/0 and t/1 dropped 420 late records in 5 min, 7.0 % of what they read"
    )


@pytest.mark.parametrize(
    "query_facts, expected",
    [
        (facts(running_batch_id=12, running_since_ms=NOW - 7 * MINUTE), []),
        (facts(running_batch_id=12, running_since_ms=NOW - 11 * MINUTE), [((), 11 * MINUTE)]),
        (facts(running_batch_id=12, running_since_ms=NOW - 11 * MINUTE, status="failed"), []),
        (facts(), []),
    ],
    ids=["within-the-threshold", "past-it", "not-running-any-more", "nothing-in-flight"],
)
def test_long_batch(query_facts, expected):
    assert found("long_batch", query_facts) == expected


def test_a_long_batch_says_which_and_for_how_long():
    rule_ = RULES["long_batch"]
    running = facts(running_batch_id=12, running_since_ms=NOW - 11 * MINUTE)
    assert rule_.check(running, NOW, rule_.defaults()).message == "batch 12 has run for 11 min"


@pytest.mark.parametrize(
    ("per_second", "said"),
    [
        (12.5, "12.5 rows/s"),
        (0.1, "0.1 rows/s"),
        (0.05, "3.0 rows/min"),
        # One row over the five minutes a growth is judged on: the slowest that grows.
        (1 / 300, "0.2 rows/min"),
        (1 / 3_600, "1.0 rows/h"),
    ],
)
def test_a_slow_growth_is_said_per_minute_or_per_hour_not_as_nothing_a_second(per_second, said):
    assert rate_text(per_second, "rows") == said


def test_the_rules_default_parameters_are_the_facts_default_thresholds():
    """A query without a rules file is read over the thresholds the rules' defaults set: the
    facts' own defaults, so a reader that takes those sees what the evaluator sees."""
    defaults = {name: known.defaults() for name, known in RULES.items()}
    assert thresholds(defaults) == Thresholds()


def test_a_watermark_is_ahead_by_what_makes_a_record_future_dated():
    tolerance_ms = load_settings({}).future_tolerance_s * 1000
    assert RULES["future_event_time"].defaults()["tolerance"] == tolerance_ms


def test_what_a_rule_is_is_declared_with_it():
    """The rules whose live alert keeps a query stalled, and those that explain every other
    finding on a query (its first causes, and listed first), as the rules declare them."""
    stalling = {name for name, status in MEANINGS.items() if status is Status.STALLED}
    assert stalling == {"watermark_stalled", "partition_stalled", "no_progress"}
    assert URGENT == ("query_failed", "query_terminated", "no_progress", "query_unreadable")
    assert RULES["watermark_age"].caused_by == (*URGENT, "watermark_stalled", "partition_stalled")
    assert RULES["long_batch"].caused_by == URGENT
    assert [RULES[name].caused_by for name in URGENT] == [(), (), (), ()]

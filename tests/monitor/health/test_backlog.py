"""A partition's backlog, trend, catch-up time and verdict from its points (health.backlog)."""

from monitor.health.backlog import (
    Age,
    Arrival,
    Point,
    Trend,
    Verdict,
    assess,
    head_arrival,
    of_query,
    trend_of,
)


def points(ends, latests, every_ms=1_000):
    return [Point(i * every_ms, e, v) for i, (e, v) in enumerate(zip(ends, latests, strict=True))]


def test_the_head_arrives_evenly_between_the_batches_that_bracket_it():
    before, after = Point(10_000, 5, 100), Point(11_000, 6, 110)
    # Offsets 100..109 arrived between the two batches, a tenth of a second apart.
    assert head_arrival(100, before, after) == Arrival(10_100, Age.INTERPOLATED)
    assert head_arrival(109, before, after) == Arrival(11_000, Age.INTERPOLATED)
    assert head_arrival(104, before, after) == Arrival(10_500, Age.INTERPOLATED)


def test_a_head_there_at_the_first_stored_batch_waited_at_least_since_it():
    assert head_arrival(3, None, Point(10_000, 3, 50)) == Arrival(10_000, Age.AT_LEAST)


def test_a_drain_at_a_known_rate_gives_its_catch_up_time():
    # 10 records a second arrive, 30 are read: the backlog of 300 drains at 20 a second.
    ends = [0 + 30 * i for i in range(11)]
    latests = [300 + 10 * i for i in range(11)]
    backlog = assess(points(ends, latests), Arrival(0, Age.AT_LEAST), 10_000, running=True)
    assert backlog.records == 300 + 100 - 300
    assert backlog.trend is Trend.SHRINKING
    assert backlog.arrival_rate == 10.0 and backlog.read_rate == 30.0
    assert backlog.catch_up_ms == 5_000
    assert backlog.verdict is Verdict.CATCHING_UP
    assert (backlog.age_ms, backlog.age) == (10_000, Age.AT_LEAST)


def test_a_long_backfill_read_faster_than_it_arrives_is_catching_up_whatever_its_size():
    # 42,000 records behind, read at 40 a second while 10 arrive, a batch every 5 s with a
    # record or two of jitter: the minute's change (1,800) is a small share of the backlog,
    # and it drains all the same, in 42,000 / 30 = 1,400 s.
    jitter = [0, 2, -1, 1, 0, -2, 1, 0, 2, -1, 0, 1, 0]
    ends = [40 * 5 * i + j for i, j in enumerate(jitter)]
    latests = [42_000 + 10 * 5 * i for i in range(13)]
    backlog = assess(points(ends, latests, every_ms=5_000), None, 60_000, running=True)
    assert backlog.trend is Trend.SHRINKING and backlog.verdict is Verdict.CATCHING_UP
    expected_ms = backlog.records / (backlog.read_rate - backlog.arrival_rate) * 1000
    assert abs(backlog.catch_up_ms - 1_400_000) <= 140_000
    assert abs(backlog.catch_up_ms - expected_ms) <= 1_000


def test_a_growing_backlog_is_falling_behind_and_never_catches_up():
    backlog = assess(
        points(range(0, 50, 5), range(10, 110, 10)),
        Arrival(0, Age.INTERPOLATED),
        9_000,
        running=True,
    )
    assert backlog.trend is Trend.GROWING
    assert backlog.verdict is Verdict.FALLING_BEHIND
    assert backlog.catch_up_ms is None


def test_a_steady_backlog_keeps_pace_and_an_emptied_one_is_ok():
    steady = assess(points([0, 10, 20, 30], [50, 60, 70, 80]), None, 3_000, running=True)
    assert (steady.trend, steady.verdict, steady.catch_up_ms) == (Trend.STABLE, Verdict.OK, None)
    noisy = assess(points([0, 10, 20, 30], [50, 63, 69, 82]), None, 3_000, running=True)
    assert (noisy.trend, noisy.verdict, noisy.catch_up_ms) == (Trend.STABLE, Verdict.OK, None)
    emptied = assess(points([0, 10, 20, 30], [0, 30, 60, 90]), None, 3_000, running=True)
    assert emptied.verdict is Verdict.OK and emptied.trend is Trend.GROWING
    caught_up = assess(points([0, 10], [10, 10]), None, 1_000, running=True)
    assert (caught_up.records, caught_up.age_ms, caught_up.age) == (0, 0, Age.NONE)
    assert caught_up.catch_up_ms == 0


def test_offsets_that_do_not_move_under_a_backlog_are_stalled_and_back_are_rewound():
    stalled = assess(points([7, 7, 7], [9, 12, 15]), None, 2_000, running=True)
    assert stalled.verdict is Verdict.STALLED
    rewound = assess(points([7, 9, 3], [9, 12, 15]), None, 2_000, running=True)
    assert rewound.verdict is Verdict.REWOUND


def test_a_backlog_of_a_query_that_does_not_run_is_stopped():
    stopped = assess(points([0, 10, 20], [30, 30, 30]), None, 2_000, running=False)
    assert stopped.verdict is Verdict.STOPPED
    done = assess(points([0, 10, 20], [20, 20, 20]), None, 2_000, running=False)
    assert done.verdict is Verdict.OK


def test_a_source_without_latest_offsets_has_no_backlog_figures():
    unknown = assess(points([0, 10], [None, None]), None, 1_000, running=True)
    assert unknown.records is None and unknown.verdict is None


def test_the_trend_stands_out_of_the_saw_tooth_or_is_stable():
    seconds = [0, 1_000, 2_000, 3_000, 4_000, 5_000]
    assert trend_of(seconds, [100, 103, 99, 102, 98, 101])[0] is Trend.STABLE
    assert trend_of(seconds, [100, 120, 140, 160, 180, 200])[0] is Trend.GROWING
    # A small backlog's steady drain is as much a trend as a large one's.
    assert trend_of(seconds, [50_000, 49_990, 49_981, 49_970, 49_960, 49_951])[0] is (
        Trend.SHRINKING
    )
    assert trend_of(seconds, [10, 8, 6, 4, 2, 1])[0] is Trend.SHRINKING
    # Two points show no noise to judge against, so no trend.
    assert trend_of(seconds[:2], [100, 200]) == (None, 100.0)


def test_a_query_has_its_oldest_head_its_longest_catch_up_and_its_worst_verdict():
    fast = assess(points([0, 30, 60], [100, 110, 120]), Arrival(0, Age.AT_LEAST), 2_000, True)
    slow = assess(points([0, 5, 10], [100, 110, 120]), Arrival(500, Age.INTERPOLATED), 2_000, True)
    done = assess(points([0, 10], [10, 10]), None, 1_000, True)
    query = of_query([fast, done])
    assert query.records == fast.records
    assert (query.age_ms, query.age) == (2_000, Age.AT_LEAST)
    assert query.catch_up_ms == fast.catch_up_ms and query.verdict is Verdict.CATCHING_UP
    behind = of_query([fast, slow, done])
    assert behind.catch_up_ms is None and behind.verdict is Verdict.FALLING_BEHIND
    assert of_query([]).records is None


def test_partitions_that_keep_pace_do_not_hold_back_a_querys_catch_up():
    draining = assess(points([0, 30, 60], [100, 110, 120]), None, 2_000, True)
    steady = assess(points([0, 10, 20, 30], [50, 60, 70, 80]), None, 3_000, True)
    done = assess(points([0, 10], [10, 10]), None, 1_000, True)
    query = of_query([draining, steady, done])
    assert query.verdict is Verdict.CATCHING_UP and query.catch_up_ms == draining.catch_up_ms
    pace = of_query([steady, done])
    assert pace.verdict is Verdict.OK and pace.records > 0 and pace.catch_up_ms is None
    assert of_query([done]).catch_up_ms == 0
    young = assess(points([0, 10], [50, 70]), None, 1_000, True)
    assert young.verdict is None
    assert of_query([draining, young]).catch_up_ms is None

"""A query's batches over a window against its trigger (health.trigger_pace): the median
duration, the batches slower than the interval, whether it falls behind, the stage that grew."""

from monitor.health.trigger_pace import BatchTiming, assess, pace_fields, timing


def batches(durations, stages=None):
    """Batches a second apart with these durations and, per batch, these stages."""
    stages = stages or [{} for _ in durations]
    return [
        BatchTiming(1_000 * k, duration, parts)
        for k, (duration, parts) in enumerate(zip(durations, stages, strict=True))
    ]


def test_a_batch_timing_holds_its_total_apart_from_its_stages():
    found = timing(5, {"triggerExecution": 900, "addBatch": 700, "latestOffset": 12.0})
    assert found == BatchTiming(5, 900, {"addBatch": 700, "latestOffset": 12})
    assert timing(5, None) == BatchTiming(5, None, {})


def test_batches_whose_median_is_longer_than_the_interval_fall_behind_the_trigger():
    pace = assess("ProcessingTime", 1_000, batches([800, 1_200, 1_300, 1_400]))
    assert (pace.duration_ms, pace.slower, pace.behind) == (1_250, 3, True)
    pace = assess("ProcessingTime", 1_000, batches([800, 900, 1_300, 700]))
    assert (pace.duration_ms, pace.slower, pace.behind) == (850, 1, False)


def test_nothing_is_judged_without_an_interval_or_on_too_few_batches():
    slow = batches([5_000, 6_000, 7_000])
    assert assess("ProcessingTime", 1_000, slow[:2]).behind is None
    for trigger, interval in (("AvailableNow", None), ("OneTime", None), (None, None)):
        pace = assess(trigger, interval, slow)
        assert (pace.duration_ms, pace.slower, pace.behind) == (6_000, 0, None)
    # The default trigger runs each batch as soon as the last ends: no interval to keep.
    assert assess("ProcessingTime", 0, slow).behind is None
    assert assess("Continuous", 1_000, slow).behind is True


def test_the_stage_that_grew_most_between_the_windows_halves_is_named():
    stages = [
        {"addBatch": 100, "latestOffset": 300},
        {"addBatch": 100, "latestOffset": 300},
        {"addBatch": 900, "latestOffset": 350},
        {"addBatch": 1_100},  # a stage a batch does not report took no time in it
    ]
    pace = assess("ProcessingTime", 1_000, batches([500, 500, 1_300, 1_200], stages))
    assert (pace.stage, pace.stage_from_ms, pace.stage_to_ms) == ("addBatch", 100, 1_000)
    assert pace.stage_grew


def test_where_no_stage_grew_the_longest_is_named():
    stages = [{"addBatch": 900, "walCommit": 50}, {"addBatch": 800, "walCommit": 40}] * 2
    pace = assess("ProcessingTime", 500, batches([1_000] * 4, stages))
    assert (pace.stage, pace.stage_from_ms, pace.stage_to_ms) == ("addBatch", 850, 850)
    assert not pace.stage_grew
    # With an odd number of batches, the middle one is in both halves.
    three = batches([1, 1, 1], [{"addBatch": 10}, {"addBatch": 40}, {"addBatch": 70}])
    assert assess(None, None, three).stage_from_ms == 25
    assert assess(None, None, three).stage_to_ms == 55
    assert assess(None, None, []).stage is None


def test_the_api_gives_the_pace_with_its_trigger():
    pace = assess("ProcessingTime", 1_000, batches([1_500] * 3, [{"addBatch": 1_400}] * 3))
    assert pace_fields(pace) == {
        "kind": "ProcessingTime",
        "interval_ms": 1_000,
        "batches": 3,
        "duration_ms": 1_500,
        "slower_batches": 3,
        "behind": True,
        "stage": "addBatch",
        "stage_from_ms": 1_400,
        "stage_to_ms": 1_400,
        "stage_grew": False,
    }

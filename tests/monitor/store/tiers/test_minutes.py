"""Per-minute and per-hour rollups of queries and their partitions: what the write path keeps is
what the stored batches say, however they arrive (out of order, repeated, superseded by a
restart, in groups of any size); a long range read from them shows every stall and lag peak,
and late records, input rows and batches that add up exactly. (test_migrations checks that
migrations 0021 to 0023 fill the same rows.)"""

import random
from collections import Counter, defaultdict

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.numbers import INT64_MAX
from monitor.store.read.history import Kept, Window, batch_series, partition_series, resolution
from monitor.store.schema.models import (
    PartitionHour,
    PartitionMinute,
    Query,
    QueryHour,
    QueryMinute,
)
from monitor.store.tiers.minutes import HOUR_MS, MINUTE_MS
from monitor.store.tiers.prune import Cutoffs, prune
from monitor.store.write.writes import write_event, write_events
from tests.support.group_events import T0, A, B, events, progress
from tests.support.progress import EPOCH, QUERY, batch_event, write
from tests.support.stores import stored_rows, unpacked_rows

DAY_MS = 86_400_000


def expected_minutes(engine, query_id):
    """The minutes as the stored batches' rows say, added up here row by row."""
    stored = stored_rows(engine, query_id, tables=("batch_offsets", "batch_event_times"))
    minutes = defaultdict(lambda: defaultdict(list))
    for table in ("batch_offsets", "batch_event_times"):
        for row in stored[table]:
            key = (row["batch_time_ms"] // MINUTE_MS * MINUTE_MS, row["partition"])
            minutes[key][table].append(row)
    expected = {}
    for (minute, partition), rows in minutes.items():
        offsets, times = rows["batch_offsets"], rows["batch_event_times"]

        def some(values):
            return [value for value in values if value is not None]

        def total(values):
            found = some(values)
            return sum(found) if found else None

        expected[(minute, partition)] = {
            "batches": len({row["batch_id"] for row in offsets + times}),
            "records": total(row["records"] for row in times),
            "offset_records": total(
                row["end_offset"] - row["start_offset"]
                for row in offsets
                if row["start_offset"] is not None
            ),
            "late_records": total(row["late_records"] for row in times),
            "future_records": total(row["future_records"] for row in times),
            "max_event_time_ms": max(some(r["max_event_time_ms"] for r in times), default=None),
            "watermark_min_ms": min(some(r["partition_watermark_ms"] for r in times), default=None),
            "watermark_max_ms": max(some(r["partition_watermark_ms"] for r in times), default=None),
            "time_lag_max_ms": max(some(r["time_lag_ms"] for r in times), default=None),
            "offset_lag_max": max(some(r["offset_lag"] for r in offsets), default=None),
            "idle_batches": sum(bool(row["idle"]) for row in offsets),
            "stalled_batches": sum(bool(row["stalled"]) for row in offsets),
            "rewound_batches": sum(bool(row["rewound"]) for row in offsets),
            "delay_max_ms": max(some(r["delay_ms"] for r in times), default=None),
            "late_buckets": histograms(row["late_buckets"] for row in times),
            "slack_buckets": histograms(row["slack_buckets"] for row in times),
        }
    return expected


def histograms(measured):
    """Lateness histograms added up bucket by bucket; None when none was measured."""
    found = [histogram for histogram in measured if histogram is not None]
    if not found:
        return None
    total = Counter()
    for histogram in found:
        total.update(histogram)
    return dict(sorted(total.items(), key=lambda item: int(item[0])))


def expected_query_minutes(engine, query_id):
    """The query's minutes as its stored batches and their state operators say, added up here."""
    stored = stored_rows(engine, query_id, tables=("batches", "state_operators"))
    operators = defaultdict(list)
    for row in stored["state_operators"]:
        operators[row["batch_id"]].append(row)
    minutes = defaultdict(list)
    for batch in stored["batches"]:
        minutes[(batch["batch_time_ms"] // MINUTE_MS * MINUTE_MS,)].append(batch)

    def some(values):
        return [value for value in values if value is not None]

    def total(values):
        found = some(values)
        return sum(found) if found else None

    def state(batches, name):
        return max(
            some(total(row[name] for row in operators[b["batch_id"]]) for b in batches),
            default=None,
        )

    expected = {}
    for key, batches in minutes.items():
        ops = [row for b in batches for row in operators[b["batch_id"]]]
        watermarks = some(b["watermark_ms"] for b in batches)
        skews = some(b["watermark_skew_ms"] for b in batches)
        durations = some(b["trigger_duration_ms"] for b in batches)
        inputs = some(b["input_rows_per_second"] for b in batches)
        processed = some(b["processed_rows_per_second"] for b in batches)
        expected[key] = {
            "batches": len(batches),
            "first_batch_id": min(b["batch_id"] for b in batches),
            "last_batch_id": max(b["batch_id"] for b in batches),
            "watermark_min_ms": min(watermarks, default=None),
            "watermark_max_ms": max(watermarks, default=None),
            "flink_watermark_max_ms": max(
                some(b["flink_watermark_ms"] for b in batches), default=None
            ),
            "watermark_age_max_ms": max(
                some(
                    b["batch_time_ms"] - b["watermark_ms"]
                    for b in batches
                    if b["watermark_ms"] is not None
                ),
                default=None,
            ),
            "skew_sum_ms": total(skews),
            "skew_batches": len(skews),
            "skew_max_ms": max(skews, default=None),
            "duration_sum_ms": total(durations),
            "duration_batches": len(durations),
            "duration_max_ms": max(durations, default=None),
            "input_rows": total(b["num_input_rows"] for b in batches),
            "input_rate_sum": total(inputs),
            "input_rate_batches": len(inputs),
            "processed_rate_sum": total(processed),
            "processed_rate_batches": len(processed),
            "stalled_batches": sum(bool(b["watermark_stalled"]) for b in batches),
            "rewound_batches": sum(bool(b["watermark_rewound"]) for b in batches),
            "rows_dropped_by_watermark": total(row["num_rows_dropped_by_watermark"] for row in ops),
            "state_rows_max": state(batches, "num_rows_total"),
            "state_memory_max_bytes": state(batches, "memory_used_bytes"),
        }
    return expected


def stored_rollups(engine, query_id, model=PartitionMinute, start="minute_ms"):
    """A query's stored minutes (or hours) by (start, partition), or by (start,) in the
    queries' tiers, their figures; sums of rates rounded, as their order of adding differs."""
    with engine.connect() as connection:
        rows = connection.execute(
            sa.select(model.__table__).where(model.query_id == query_id)
        ).mappings()
        if "figures" in model.__table__.c:
            rows = unpacked_rows(rows)
        return {
            tuple(row[name] for name in (start, "partition") if name in row): {
                name: round(value, 6) if isinstance(value, float) else value
                for name, value in row.items()
                if name not in ("query_id", start, "partition")
            }
            for row in rows
        }


def hours_of(minutes):
    """The minutes folded into hours, here: sums, the largest and the smallest."""
    hours = {}
    for (minute, *partition), figures in sorted(minutes.items()):
        key = (minute - minute % HOUR_MS, *partition)
        if key not in hours:
            hours[key] = dict(figures)
            continue
        hour = hours[key]
        for name, value in figures.items():
            if value is None or hour[name] is None:
                hour[name] = value if hour[name] is None else hour[name]
            elif name.endswith("_buckets"):
                hour[name] = histograms([hour[name], value])
            elif name in ("watermark_min_ms", "first_batch_id"):
                hour[name] = min(hour[name], value)
            elif "max" in name or name == "last_batch_id":
                hour[name] = max(hour[name], value)
            else:
                hour[name] = round(hour[name] + value, 6)
    return hours


def rounded(rollups):
    """Rollups with their sums of rates rounded as stored_rollups rounds them."""
    return {
        key: {name: round(v, 6) if isinstance(v, float) else v for name, v in figures.items()}
        for key, figures in rollups.items()
    }


def shuffled_arrivals(seed):
    """The events of the group-write test with some batches held back and sent after later
    ones, others sent twice, cut into groups of random sizes."""
    rng = random.Random(seed)
    written = events()
    late = [event for event in written if hasattr(event, "batch_id") and rng.random() < 0.2]
    again = [event for event in written if hasattr(event, "batch_id") and rng.random() < 0.2]
    order = [event for event in written if event not in late] + late + again
    groups, start = [], 0
    while start < len(order):
        size = rng.randint(1, 6)
        groups.append(order[start : start + size])
        start += size
    return groups


@pytest.mark.parametrize("seed", range(4))
def test_the_minutes_are_what_the_stored_batches_say_however_they_arrive(engine, seed):
    for group in shuffled_arrivals(seed):
        write_events(engine, group)
    for query in (A, B):
        minutes = stored_rollups(engine, query)
        assert minutes == expected_minutes(engine, query)
        assert stored_rollups(engine, query, PartitionHour, "hour_ms") == hours_of(minutes)
        query_minutes = stored_rollups(engine, query, QueryMinute)
        assert query_minutes == rounded(expected_query_minutes(engine, query))
        assert stored_rollups(engine, query, QueryHour, "hour_ms") == hours_of(query_minutes)
    minutes = stored_rollups(engine, A)
    assert any(row["rewound_batches"] for row in minutes.values()), "a restart was rolled up"
    assert any(row["late_records"] for row in minutes.values())
    query_minutes = stored_rollups(engine, A, QueryMinute)
    assert {row["state_rows_max"] for row in query_minutes.values()} > {10}


def test_two_days_read_from_the_minutes_show_a_forty_minute_stall_and_its_lag_peak(engine):
    """Batches two minutes apart for three hours, 50 records a minute into each of two
    partitions: t/1 reads nothing from 10 to 50 minutes in, then catches up. Two days at 48
    points are hours: the stall is inside the first, whose last batch shows neither the stall
    nor the lag."""
    ends = [0, 0]
    for batch_id, minute in enumerate(range(0, 180, 2)):
        latest = (minute + 2) * 50
        starts, ends = ends, [latest, ends[1] if 10 <= minute < 50 else latest]
        write(engine, batch_id, minute * 60, ends, [latest, latest], starts=starts)
    first_minute = EPOCH - EPOCH % MINUTE_MS  # the minutes read are those starting in range
    window = Window(first_minute, first_minute + 2 * DAY_MS, 48)
    assert (resolution(window), window.bucket_ms) == ("minute", 60 * MINUTE_MS)
    with so.Session(engine) as session:
        series = partition_series(session, QUERY, window)
    behind, steady = series["t/1"], series["t/0"]
    assert (behind["offset_lag"][0], behind["stalled"][0]) == (2_000, True)
    assert not any(steady["stalled"]) and max(steady["offset_lag"]) == 0
    assert sum(behind["records"]) == sum(steady["records"]) == 180 * 50

    hour_end = first_minute + 60 * MINUTE_MS
    last = max(
        (row for row in stored_rows(engine, QUERY, tables=("batch_offsets",))["batch_offsets"]),
        key=lambda row: (
            row["partition"] == "t/1",
            row["batch_time_ms"] < hour_end,
            row["batch_id"],
        ),
    )
    assert (last["stalled"], last["offset_lag"]) == (False, 0), "the hour's last batch hides it"


def test_a_month_read_from_the_hours_shows_the_stall_and_its_lag_peak(engine):
    """The same stall in a 30-day view at 800 points (54-minute buckets), read from the hours:
    the bucket that holds the stall's hour shows it."""
    ends = [0, 0]
    start_s = 29 * DAY_MS // 1000
    for batch_id, minute in enumerate(range(0, 180, 2)):
        latest = (minute + 2) * 50
        starts, ends = ends, [latest, ends[1] if 10 <= minute < 50 else latest]
        write(engine, batch_id, start_s + minute * 60, ends, [latest, latest], starts=starts)
    first_hour = EPOCH - EPOCH % HOUR_MS
    window = Window(first_hour, first_hour + 30 * DAY_MS, 800)
    assert resolution(window) == "hour"
    with so.Session(engine) as session:
        series = partition_series(session, QUERY, window)
    behind, steady = series["t/1"], series["t/0"]
    assert max(behind["offset_lag"]) == 2_000 and any(behind["stalled"])
    assert not any(steady["stalled"]) and max(steady["offset_lag"]) == 0
    assert sum(behind["records"]) == sum(steady["records"]) <= 180 * 50


def test_each_range_is_read_from_the_finest_tier_cheap_enough():
    """A day of minutes is 92,160 rows of 64 partitions, 30 days of them 2.8 million, which
    take seconds: past two days, hours."""
    assert resolution(Window(EPOCH, EPOCH + 3_600_000, 800)) == "last_batch"
    assert resolution(Window(EPOCH, EPOCH + DAY_MS, 800)) == "minute"
    assert resolution(Window(EPOCH, EPOCH + 2 * DAY_MS + 1, 800)) == "hour"
    assert resolution(Window(EPOCH, EPOCH + 365 * DAY_MS, 800)) == "hour"


def test_late_records_of_any_range_from_the_minutes_are_the_sum_over_the_batches(engine):
    rng = random.Random(7)
    write_events(engine, [progress(A, "a1", n, T0 + n * 20_000) for n in range(60)])
    stored = stored_rows(engine, A, tables=("batch_event_times",))["batch_event_times"]
    first_minute = T0 - T0 % MINUTE_MS
    with so.Session(engine) as session:
        for _ in range(12):
            first, last = sorted(rng.sample(range(22), 2))
            window = Window(first_minute + first * MINUTE_MS, first_minute + last * MINUTE_MS, 3)
            series = partition_series(session, A, window)
            read = sum(late or 0 for each in series.values() for late in each["late_records"])
            raw = sum(
                row["late_records"]
                for row in stored
                if window.from_ms <= row["batch_time_ms"] < window.to_ms
            )
            assert (read, resolution(window)) == (raw, resolution(window))
            assert raw > 0 or last - first < 1


def test_the_query_series_of_any_range_from_the_minutes_and_hours_add_up_as_the_batches(engine):
    """Batches 20 s apart for 40 minutes: 14 buckets of three minutes read from the minutes hold
    the batches, input rows, longest and mean duration of the batches inside them; a month
    read from the hours holds them all."""
    first_minute = T0 - T0 % MINUTE_MS
    write_events(engine, [progress(A, "a1", n, first_minute + n * 20_000) for n in range(120)])
    batches = stored_rows(engine, A, tables=("batches",))["batches"]
    window = Window(first_minute, first_minute + 42 * MINUTE_MS, 14)
    with so.Session(engine) as session:
        series = batch_series(session, A, window)
        first_hour = T0 - T0 % HOUR_MS  # the hours read are those starting in range
        month = batch_series(session, A, Window(first_hour, first_hour + 30 * DAY_MS, 800))
    assert resolution(window) == "minute" and window.bucket_ms == 3 * MINUTE_MS
    for index, start in enumerate(series["time_ms"]):
        inside = [b for b in batches if start <= b["batch_time_ms"] < start + window.bucket_ms]
        durations = [b["trigger_duration_ms"] for b in inside]
        assert series["batches"][index] == len(inside) == (9 if index < 13 else 3)
        assert series["last_batch_id"][index] == max(b["batch_id"] for b in inside)
        assert series["input_rows"][index] == sum(b["num_input_rows"] for b in inside)
        assert series["duration_max_ms"][index] == max(durations)
        assert series["duration_avg_ms"][index] == pytest.approx(sum(durations) / len(inside))
        assert series["rows_dropped_by_watermark"][index] == len(inside)
    assert sum(month["batches"]) == 120
    assert sum(month["input_rows"]) == sum(b["num_input_rows"] for b in batches)
    assert max(month["duration_max_ms"]) == max(b["trigger_duration_ms"] for b in batches)


# A cutoff within a day: PostgreSQL's batches expire by whole days (test_prune covers them).
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_late_batch_older_than_the_batches_kept_rolls_up_again_only_what_is_kept(engine):
    """Batches 20 s apart for two hours, batch 30 held back; the first hour's batches are
    pruned (its minutes and hours stay), then batch 30, from that hour, arrives: it is folded
    into its minute and hour, and rolling up again starts where the kept batches start, so no
    pruned batch goes missing from the rollups. Ranges older than the batches kept are read
    from the minutes."""
    first_hour = T0 - T0 % HOUR_MS
    written = [progress(A, "a1", n, first_hour + n * 20_000) for n in range(360)]
    write_events(engine, [event for event in written if event.batch_id != 30])
    pruned = prune(engine, Cutoffs(first_hour + HOUR_MS, 0, 0))
    assert pruned.deleted["batches"] == 179 and pruned.deleted["query_minutes"] == 0
    write_event(engine, written[30])

    with so.Session(engine) as session:
        query = session.get(Query, A)
        kept = Kept.of(query)
        assert (kept.batches_from_ms, kept.minutes_from_ms) == (first_hour + HOUR_MS, None)
        for model in (QueryMinute, QueryHour):
            start = "minute_ms" if model is QueryMinute else "hour_ms"
            rollups = stored_rollups(engine, A, model, start)
            assert sum(row["batches"] for row in rollups.values()) == 360, model
        for name in ("telemetry/0", "telemetry/3"):
            minutes = stored_rollups(engine, A)
            assert sum(row["batches"] for key, row in minutes.items() if key[1] == name) == 360

        half_hour = Window(first_hour, first_hour + 30 * MINUTE_MS, 800)
        assert (resolution(half_hour), resolution(half_hour, kept)) == ("last_batch", "minute")
        series = batch_series(session, A, half_hour, kept)
        assert sum(series["batches"]) == 90
        assert sum(partition_series(session, A, half_hour, kept)["telemetry/0"]["records"]) > 0
        older = Kept(first_hour + HOUR_MS, first_hour + HOUR_MS)
        assert resolution(Window(first_hour, first_hour + DAY_MS, 48), older) == "hour"


def test_a_minute_of_absurd_offsets_is_stored_saturated_and_recording_goes_on(engine):
    """A broken source that says each batch read from offset 0 to 2^63 - 1: the minute's sum
    is past what a 64-bit column holds, and saturates rather than failing the write."""
    for batch_id in range(3):
        starts, ends = (0, 10 * batch_id), (INT64_MAX, 10 * (batch_id + 1))
        write_event(engine, batch_event("q", batch_id, T0 + batch_id, starts=starts, ends=ends))
    minutes = stored_rollups(engine, "q")
    assert [row["batches"] for row in minutes.values()] == [3, 3]
    assert minutes[(T0 - T0 % MINUTE_MS, "t/0")]["offset_records"] == INT64_MAX
    assert minutes[(T0 - T0 % MINUTE_MS, "t/1")]["offset_records"] == 30

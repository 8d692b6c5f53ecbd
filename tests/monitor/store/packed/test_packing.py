"""Partitions' rollups packed a row per span, a batch's partitions packed a row per batch, and
the series read from packed spans."""

import random

import pytest

from monitor.numbers import INT64_MAX, INT64_MIN
from monitor.store.packed.packed_series import SERIES, bucket_series
from monitor.store.packed.packing import pack, pack_rows, unpack, unpack_columns
from monitor.store.tiers.minutes import PARTITION_MINUTES

FIGURES = PARTITION_MINUTES.figures


def random_rows(rng, names):
    """Figures of some partitions: counts always, other figures sometimes None, a few at the
    ends of 64 bits."""
    extremes = (INT64_MIN, INT64_MAX, 0, -1)
    return {
        name: {
            figure: (
                rng.randrange(4)
                if figure == "batches" or figure.endswith("_batches")
                else None
                if rng.random() < 0.2
                else rng.choice(extremes)
                if rng.random() < 0.05
                else rng.randrange(-(10**13), 10**13)
            )
            for figure in FIGURES
        }
        for name in names
    }


@pytest.mark.parametrize("seed", range(5))
def test_packed_figures_unpack_as_they_were(seed):
    rng = random.Random(seed)
    names = rng.sample([f"topic/{n}" for n in range(100)] + ["é/0", ""], rng.randrange(0, 70))
    rows = random_rows(rng, names)
    assert unpack(pack(FIGURES, rows), len(FIGURES)).rows(FIGURES) == rows


CELLS = ("partition", "samples", "buckets")
NUMBERS = ("source_index", "end_offset", "idle", "lead_ms")


@pytest.mark.parametrize("seed", range(5))
def test_packed_rows_unpack_as_they_were_in_their_order(seed):
    rng = random.Random(seed)
    texts = ["t/0", "é/1", "t\x00\udc80/2", "", None]
    rows = [
        {
            "partition": rng.choice(texts),
            "samples": rng.choice([[], [["k", 1_795_000_000_000, 7]], None]),
            "buckets": rng.choice([{}, {"3": 10, "14": 2}, None]),
            "source_index": rng.randrange(3),
            "end_offset": rng.choice([None, INT64_MIN, INT64_MAX, rng.randrange(10**15)]),
            "idle": rng.random() < 0.5,
            "lead_ms": None if rng.random() < 0.3 else rng.randrange(-(10**6), 10**6),
        }
        for _ in range(rng.randrange(1, 80))
    ]
    columns = unpack_columns(pack_rows(CELLS, NUMBERS, rows), CELLS, NUMBERS)
    rows_back = zip(*columns.values(), strict=True)
    unpacked = [dict(zip(columns, values, strict=True)) for values in rows_back]
    assert unpacked == rows


def test_a_packed_minute_of_64_partitions_takes_about_a_kilobyte():
    rng = random.Random(1)
    span = 1_764_000_000_000
    rows = {
        f"telemetry/{n}": {
            "batches": 6,
            "records": rng.randrange(400, 800),
            "offset_records": rng.randrange(400, 800),
            "late_records": rng.choice((0, 0, 0, 2)),
            "future_records": 0,
            "max_event_time_ms": span + rng.randrange(60_000),
            "watermark_min_ms": span - rng.randrange(20_000),
            "watermark_max_ms": span + rng.randrange(10_000),
            "time_lag_max_ms": rng.randrange(5_000, 30_000),
            "offset_lag_max": rng.randrange(300),
            "idle_batches": 0,
            "stalled_batches": 0,
            "rewound_batches": 0,
            "delay_max_ms": 10_000,
        }
        for n in range(64)
    }
    assert len(pack(FIGURES, rows)) < 1_200


def expected_series(spans):
    """bucket_series, the plain way: per partition and bucket, over the spans that hold it."""
    found = {}
    for bucket, rows in spans:
        for name, figures in rows.items():
            found.setdefault(name, {}).setdefault(bucket, []).append(figures)
    result = {}
    for name, buckets in found.items():
        series = result[name] = {"time_ms": []} | {s: [] for s, _, _ in SERIES}
        for bucket in sorted(buckets):
            series["time_ms"].append(1000 * bucket)
            for name_of_series, figure, how in SERIES:
                values = [row[figure] for row in buckets[bucket] if row[figure] is not None]
                if how == "sum":
                    value = max(INT64_MIN, min(INT64_MAX, sum(values))) if values else None
                elif how == "any":
                    value = any(value > 0 for value in values)
                else:
                    value = max(values, default=None)
                series[name_of_series].append(value)
    return result


@pytest.mark.parametrize("seed", range(8))
def test_series_of_packed_spans_are_the_plain_reduction_however_partitions_come_and_go(seed):
    rng = random.Random(seed)
    names = [f"t/{n}" for n in range(6)]
    spans = []
    for bucket in sorted(rng.choices(range(12), k=30)):
        spans.append((bucket, random_rows(rng, rng.sample(names, rng.randrange(1, 7)))))
    packed = [(bucket, pack(FIGURES, rows)) for bucket, rows in spans]
    assert bucket_series(packed, FIGURES, lambda bucket: 1000 * bucket) == expected_series(spans)


def test_no_spans_are_no_series():
    assert bucket_series([], FIGURES, lambda bucket: bucket) == {}

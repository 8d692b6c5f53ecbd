"""Render stored rows for a terminal: aligned tables, or JSON for scripts."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import ROUND_HALF_UP, Decimal
from typing import Any


def printable(text: str) -> str:
    """`text` with each character a terminal would act on or hide written as Python escapes it."""
    # Names, partitions and exception texts come from the jobs: a raw ESC, CR or U+202E in them
    # would drive the operator's terminal. `repr`'s escapes (\x1b, \n, \u202e) say which
    # character it was; printable text (accents, CJK, emoji) stays as it is, and so does a
    # backslash, so paths and messages that already quote a value with repr read as before.
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def _width(text: str) -> int:
    """How many terminal columns printable text takes."""
    # CJK and most emoji take two columns and combining accents none: len() would misalign them.
    return len(text) if text.isascii() else sum(map(_char_width, text))


def _char_width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def iso_time(ms: int | None) -> str:
    """Epoch milliseconds as a readable UTC time, '-' when unknown."""
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _compound(sign: str, big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f"{sign}{big} {big_unit} {small} {small_unit}" if small else f"{sign}{big} {big_unit}"


def duration(ms: int | None) -> str:
    """Milliseconds as people read a duration, as the dashboard writes them: '840 ms', '7.5 s',
    '36 min 5 s', '1 h 57 min', '5 d 11 h'; '-' when unknown."""
    if ms is None:
        return "-"
    sign, size = ("−" if ms < 0 else ""), abs(ms)
    if size < 1_000:
        return f"{sign}{size} ms"
    if size < 60_000:  # rounded half up, as the pages' toFixed does
        step = Decimal("0.1") if size < 10_000 else Decimal(1)
        return f"{sign}{(Decimal(size) / 1_000).quantize(step, ROUND_HALF_UP)} s"
    if size < 3_600_000:
        return _compound(sign, size // 60_000, "min", size % 60_000 // 1_000, "s")
    if size < 86_400_000:
        return _compound(sign, size // 3_600_000, "h", size % 3_600_000 // 60_000, "min")
    return _compound(sign, size // 86_400_000, "d", size % 86_400_000 // 3_600_000, "h")


def change(ms: int | None) -> str:
    """How much longer (+) or shorter (−) one duration is than another, given the difference:
    '+2 h 19 min', '−3 ms', '±0'; '-' when unknown."""
    if ms is None:
        return "-"
    if ms == 0:
        return "±0"
    return f"+{duration(ms)}" if ms > 0 else duration(ms)


def ago(ms: int | None) -> str:
    """How long ago, '37 min ago'; '-' when unknown."""
    return "-" if ms is None else f"{duration(ms)} ago"


def record_text(record: list[Any] | None) -> str:
    """A [key, event ms, offset] record as 'key@offset event time', '-' when unknown."""
    if record is None:
        return "-"
    key, event_ms, offset = record
    return f"{plain(key)}@{plain(offset)} {iso_time(event_ms)}"


def plain(value: Any) -> str:
    """A value as table text, '-' when unknown."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


@dataclass(frozen=True)
class Column:
    """One column: its header, the row attribute it shows and how to show it."""

    header: str
    attribute: str
    show: Callable[[Any], str] = plain


# A query as the overview lists it (web.api.payloads.summary_json), and how long since it was
# last heard from.
QUERY_COLUMNS = (
    Column("name", "name"),
    Column("health", "status"),
    Column("heard", "heard_ms", ago),
    Column("last batch", "last_batch_id"),
    Column("spark", "stored_status"),
    Column("error", "error_class"),
    Column("id", "id"),
)
BATCH_COLUMNS = (
    Column("batch", "batch_id"),
    Column("time", "batch_time_ms", iso_time),
    Column("watermark", "watermark_ms", iso_time),
    Column("event time min", "event_time_min_ms", iso_time),
    Column("event time max", "event_time_max_ms", iso_time),
    Column("rows", "num_input_rows"),
    Column("rows/s in", "input_rows_per_second"),
    Column("rows/s done", "processed_rows_per_second"),
    Column("took", "trigger_duration_ms", duration),
    Column("skew", "watermark_skew_ms", duration),
    Column("flink watermark", "flink_watermark_ms", iso_time),
    Column("watermark state", "watermark_state"),
    Column("watermark driver", "watermark_driver_partition"),
    Column("driver record", "watermark_driver_record", record_text),
)
PARTITION_COLUMNS = (
    Column("batch", "batch_id"),
    Column("partition", "partition"),
    Column("start", "start_offset"),
    Column("end", "end_offset"),
    Column("latest", "latest_offset"),
    Column("offset lag", "offset_lag"),
    Column("state", "state"),
    Column("records", "records"),
    Column("max event time", "max_event_time_ms", iso_time),
    Column("partition watermark", "partition_watermark_ms", iso_time),
    Column("time lag", "time_lag_ms", duration),
    Column("late", "late_records"),
    Column("late total", "late_records_total"),
    Column("future", "future_records"),
    Column("lead", "future_lead_ms", duration),
)
TIMER_COLUMNS = (
    Column("taken", "taken_at_ms", iso_time),
    Column("watermark", "watermark_ms", iso_time),
    Column("pending timers", "pending"),
    Column("next expiry", "next_expiry_ms", iso_time),
    Column("due within", "due_within_ms", duration),
    Column("due", "due"),
)

REJECTED_COLUMNS = (
    Column("id", "id"),
    Column("received", "received_at_ms", iso_time),
    Column("from", "origin"),
    Column("why", "error"),
    Column("event", "document", lambda text: text if len(text) <= 60 else text[:59] + "…"),
)

ALERT_COLUMNS = (
    Column("id", "id"),
    Column("state", "state"),
    Column("severity", "severity"),
    Column("rule", "rule"),
    Column("query", "query"),
    Column("partition", "partition"),
    Column("since", "active_since_ms", iso_time),
    Column("fired", "fired_at_ms", iso_time),
    Column("resolved", "resolved_at_ms", iso_time),
    Column("message", "message"),
)


def partition_state(row: Mapping[str, Any]) -> str:
    """A partition's flags in one word: 'idle', 'stalled,rewound', or 'ok'."""
    flags = [name for name in ("idle", "stalled", "rewound") if row.get(name)]
    return ",".join(flags) or "ok"


def _field(row: Any, attribute: str) -> Any:
    """A row's value: an attribute of a stored row, a key of a JSON-like one."""
    return row[attribute] if isinstance(row, Mapping) else getattr(row, attribute)


def render_table(columns: Sequence[Column], rows: Sequence[Any]) -> str:
    """Rows as an aligned text table under a header line, control characters escaped."""
    if not rows:
        return "(none)"
    cells = [[c.header for c in columns]]
    cells += [[printable(c.show(_field(row, c.attribute))) for c in columns] for row in rows]
    widths = [max(_width(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join(
        "  ".join(
            text + " " * (room - _width(text)) for text, room in zip(line, widths, strict=True)
        ).rstrip()
        for line in cells
    )


def render_json(columns: Sequence[Column], rows: Sequence[Any]) -> str:
    """Rows as a JSON list of objects keyed by attribute, raw values (times in epoch ms)."""
    return json.dumps(
        [{c.attribute: getattr(row, c.attribute) for c in columns} for row in rows], indent=2
    )

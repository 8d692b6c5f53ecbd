"""Render stored rows for a terminal: aligned tables, or JSON for scripts."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
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


def seconds(ms: int | None) -> str:
    """Milliseconds as seconds with one decimal, '-' when unknown."""
    return "-" if ms is None else f"{ms / 1000:.1f}"


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


QUERY_COLUMNS = (
    Column("id", "id"),
    Column("name", "name"),
    Column("status", "status"),
    Column("last batch", "last_batch_id"),
    Column("updated", "updated_at_ms", iso_time),
    Column("run", "run_id"),
    Column("error", "error_class"),
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
    Column("ms", "trigger_duration_ms"),
    Column("skew s", "watermark_skew_ms", seconds),
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
    Column("time lag s", "time_lag_ms", seconds),
    Column("late", "late_records"),
    Column("late total", "late_records_total"),
    Column("future", "future_records"),
    Column("lead s", "future_lead_ms", seconds),
)
TIMER_COLUMNS = (
    Column("taken", "taken_at_ms", iso_time),
    Column("watermark", "watermark_ms", iso_time),
    Column("pending timers", "pending"),
    Column("next expiry", "next_expiry_ms", iso_time),
    Column("due within", "due_within_ms", seconds),
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

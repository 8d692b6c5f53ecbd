"""Render stored rows for a terminal: aligned tables, or JSON for scripts."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from monitor.durations import duration
from monitor.sizes import size

# On a terminal a table fits the terminal's width, never less than MIN_WIDTH (a narrower one
# would leave nothing of the values that are cut); in a pipe or a file nothing is cut, and the
# prose beside a table is wrapped to PROSE_WIDTH.
PROSE_WIDTH, MIN_WIDTH = 120, 80
GAP = "  "


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


def ellipsized(text: str, room: int) -> str:
    """Printable `text` in at most `room` terminal columns: cut with '…' when it is wider."""
    if _width(text) <= room:
        return text
    kept, used = [], 0
    for char in text:
        used += _char_width(char)
        if used >= room:
            break
        kept.append(char)
    return "".join(kept) + "…"


def iso_time(ms: int | None) -> str:
    """Epoch milliseconds as a readable UTC time, '-' when unknown."""
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def change(ms: int | None) -> str:
    """How much longer (+) or shorter (−) one duration is than another, given the difference:
    '+2 h 19 min', '−3 ms', '±0'; '-' when unknown."""
    if ms is None:
        return "-"
    if ms == 0:
        return "±0"
    return f"+{duration(ms)}" if ms > 0 else duration(ms)


def age(ms: int | None) -> str:
    """An age, now less a time: '1 h 57 min', or 'ahead of the clock by 1 h 57 min' when the
    time is still to come; '-' when unknown."""
    if ms is not None and ms < 0:
        return f"ahead of the clock by {duration(-ms)}"
    return duration(ms)


def ago(ms: int | None) -> str:
    """How long ago, '37 min ago', 'just now' within a second either way (two hosts' clocks
    are that far apart), or 'ahead of the clock by 3 s' when the time is further to come;
    '-' when unknown."""
    if ms is not None and abs(ms) < 1_000:
        return "just now"
    if ms is None or ms < 0:
        return age(ms)
    return f"{duration(ms)} ago"


def alert_counts(counts: Mapping[str, int] | None) -> str:
    """A query's live alerts counted, as the overview shows them: '1 critical, 2 pending';
    '-' when none."""
    if not counts:
        return "-"
    said = [f"{counts[kind]} {kind}" for kind in ("critical", "warning", "pending") if counts[kind]]
    return ", ".join(said) or "-"


def evaluation_text(evaluated_ms: int | None, now_ms: int) -> str:
    """What a list of alerts is as of, when no process evaluates the rules now."""
    if evaluated_ms is None:
        return (
            "No process has evaluated the alert rules in this store (wmon serve, wmon alerts run)."
        )
    return (
        f"No process evaluates the alert rules now: these alerts are as of their last"
        f" evaluation, {iso_time(evaluated_ms)} ({ago(now_ms - evaluated_ms)})."
    )


def in_flight(running: tuple[int | None, int] | None) -> str:
    """A batch in flight and how long it has run, 'batch 12 for 7 min'; '-' when none."""
    if running is None:
        return "-"
    batch_id, ms = running
    return f"batch {plain(batch_id)} for {duration(ms)}"


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
    """One column: its header, the row attribute it shows and how to show it; whether only
    `--wide` shows it (`extra`), and whether it is text that may be cut to make a line fit a
    terminal (`cut`)."""

    header: str
    attribute: str
    show: Callable[[Any], str] = plain
    extra: bool = False
    cut: bool = False


# Each table's default columns answer its command's question in 120 columns; the extra ones,
# which `--wide` adds, are kept in their place so that both views read in the same order.

# A query as the overview lists it (web.api.payloads.summary_json), and how long since it was
# last heard from and the batch it runs; its name and Spark's error are what it is called and
# what went wrong.
QUERY_COLUMNS = (
    Column("name", "name", cut=True),
    Column("health", "status"),
    Column("alerts", "alerts", alert_counts),
    Column("heard", "heard_ms", ago),
    Column("last batch", "last_batch_id"),
    Column("running", "running", in_flight),
    Column("spark", "stored_status"),
    Column("error", "error_class", cut=True),
    Column("id", "id", extra=True),
)
# Batch by batch: when, how much and how long, and where the watermark stood, whether it moved
# and who drove it; the event times, rates, Flink's watermark and the driving record are extra.
BATCH_COLUMNS = (
    Column("batch", "batch_id"),
    Column("time", "batch_time_ms", iso_time),
    Column("watermark", "watermark_ms", iso_time),
    Column("event time min", "event_time_min_ms", iso_time, extra=True),
    Column("event time max", "event_time_max_ms", iso_time, extra=True),
    Column("rows", "num_input_rows"),
    Column("rows/s in", "input_rows_per_second", extra=True),
    Column("rows/s done", "processed_rows_per_second", extra=True),
    Column("took", "trigger_duration_ms", duration),
    Column("skew", "watermark_skew_ms", duration),
    Column("flink watermark", "flink_watermark_ms", iso_time, extra=True),
    Column("watermark state", "watermark_state"),
    Column("watermark driver", "watermark_driver_partition", cut=True),
    Column("driver record", "watermark_driver_record", record_text, extra=True),
)
# Which partitions are behind, stuck or losing records: the offsets themselves, W_p (M_p less
# the delay), the late total and the future records' lead are extra.
PARTITION_COLUMNS = (
    Column("batch", "batch_id"),
    Column("partition", "partition", cut=True),
    Column("start", "start_offset", extra=True),
    Column("end", "end_offset", extra=True),
    Column("latest", "latest_offset", extra=True),
    Column("offset lag", "offset_lag"),
    Column("state", "state"),
    Column("records", "records"),
    Column("max event time", "max_event_time_ms", iso_time, extra=True),
    Column("partition watermark", "partition_watermark_ms", iso_time, extra=True),
    Column("time lag", "time_lag_ms", age),
    Column("backlog", "backlog_records", extra=True),
    Column("behind", "behind"),
    Column("arrival/s", "arrival_rate", extra=True),
    Column("read/s", "read_rate", extra=True),
    Column("catch-up", "catch_up"),
    Column("verdict", "verdict_text"),
    Column("late", "late_records"),
    Column("late total", "late_records_total", extra=True),
    Column("future", "future_records"),
    Column("lead", "future_lead_ms", duration, extra=True),
)
# Each stateful operator over the last five minutes of batches: its rows (or "not counted"),
# how fast they grow, memory and store, commit latency, snapshot lag, and whether it keeps
# growing; the store's growth a second is extra.
STATE_COLUMNS = (
    Column("operator", "operator_text", cut=True),
    Column("rows", "rows", lambda rows: "not counted" if rows is None else plain(rows)),
    Column("rows/s", "rows_per_second"),
    Column("memory", "memory_bytes", size),
    Column("store", "store_bytes", size),
    Column("store/s", "store_bytes_per_second", size, extra=True),
    Column("commit", "commit_latency_ms", duration),
    Column("snapshot lag", "snapshot_lag"),
    Column("growing", "growing", lambda growing: "growing" if growing else "-"),
)
TIMER_COLUMNS = (
    Column("taken", "taken_at_ms", iso_time),
    Column("watermark", "watermark_ms", iso_time),
    Column("pending timers", "pending"),
    Column("next expiry", "next_expiry_ms", iso_time),
    Column("due within", "due_within_ms", duration),
    Column("due", "due"),
)

# The event is a preview even with --wide: --json gives it whole.
REJECTED_COLUMNS = (
    Column("id", "id"),
    Column("received", "received_at_ms", iso_time),
    Column("from", "origin", cut=True),
    Column("why", "error", cut=True),
    Column("event", "document", lambda text: ellipsized(text, 60), cut=True),
)

# The message names the partitions an alert covers; what causes it and when it fired or
# resolved are extra.
ALERT_COLUMNS = (
    Column("id", "id"),
    Column("state", "state"),
    Column("severity", "severity"),
    Column("rule", "rule"),
    Column("query", "query", cut=True),
    Column("partitions", "partitions", lambda names: ", ".join(names) or "-", extra=True),
    Column("caused by", "caused_by", extra=True),
    Column("since", "since_ms", iso_time),
    Column("pending since", "active_since_ms", iso_time, extra=True),
    Column("fired", "fired_at_ms", iso_time, extra=True),
    Column("resolved", "resolved_at_ms", iso_time, extra=True),
    Column("message", "message", cut=True),
)


def partition_state(row: Mapping[str, Any]) -> str:
    """A partition's status in words, as the query page says it: 'losing late', 'ok'."""
    return row["status"].replace("_", " ")


def behind(row: Mapping[str, Any]) -> str:
    """How long a partition's backlog head has waited: 'none' without a backlog, '-' when
    unknown, '>= 3 min' when it was there before the first stored batch."""
    if row.get("backlog_age") == "none":
        return "none"
    text = duration(row.get("backlog_age_ms"))
    return f">= {text}" if row.get("backlog_age") == "at_least" else text


def catch_up(row: Mapping[str, Any]) -> str:
    """When a partition's backlog will be read at the current rates: 'now' when there is none,
    'keeping pace' with a steady one, 'never' when it does not drain, '-' when unknown (as the
    pages' catchUpText)."""
    if row.get("backlog_records") is None:
        return "-"
    if row.get("catch_up_ms") is not None:
        return duration(row["catch_up_ms"]) if row["catch_up_ms"] else "now"
    if row.get("verdict") is None:
        return "-"
    return "keeping pace" if row["verdict"] == "ok" else "never"


def verdict_text(row: Mapping[str, Any]) -> str:
    """A partition's backlog verdict in words: 'falling behind', '-' when unknown."""
    return "-" if row.get("verdict") is None else row["verdict"].replace("_", " ")


def operator_text(row: Mapping[str, Any]) -> str:
    """A stateful operator as 'dedupe #0'."""
    return f"{row['operator'] or 'operator'} #{row['operator_index']}"


def pace_text(pace: Mapping[str, Any]) -> str:
    """A query's batches against its trigger, as the API's `trigger` has them, in a line:
    'trigger every 5.0 s; median batch 7.3 s of the last 12, 11 slower: behind the trigger;
    addBatch grew from 2.1 s to 6.9 s'."""
    kind, interval = pace["kind"], pace["interval_ms"]
    if kind is None:
        trigger = "trigger not known"
    elif interval is None:
        trigger = f"trigger {kind}"
    elif interval == 0:
        trigger = "each batch as soon as the last ends"
    else:
        trigger = f"trigger every {duration(interval)}"
    if pace["duration_ms"] is None:
        return f"{trigger}; no batch durations in the last five minutes"
    batches = f"median batch {duration(pace['duration_ms'])} of the last {pace['batches']}"
    if pace["slower_batches"]:
        batches += f", {pace['slower_batches']} slower"
    if pace["behind"]:
        batches += ": behind the trigger"
    if pace["stage"] is None:
        return f"{trigger}; {batches}"
    if pace["stage_grew"]:
        stage = (
            f"{pace['stage']} grew from {duration(pace['stage_from_ms'])} to "
            f"{duration(pace['stage_to_ms'])}"
        )
    else:
        stage = f"its longest stage {pace['stage']} {duration(pace['stage_to_ms'])}"
    return f"{trigger}; {batches}; {stage}"


def _field(row: Any, attribute: str) -> Any:
    """A row's value: an attribute of a stored row, a key of a JSON-like one."""
    return row[attribute] if isinstance(row, Mapping) else getattr(row, attribute)


def terminal_width() -> int | None:
    """The width a table is cut to: the terminal's when stdout is one, never less than
    MIN_WIDTH; None when it is a pipe or a file, which get every value whole."""
    if not sys.stdout.isatty():
        return None
    return max(shutil.get_terminal_size((PROSE_WIDTH, 24)).columns, MIN_WIDTH)


def render_view(columns: Sequence[Column], rows: Sequence[Any], wide: bool) -> str:
    """A command's table: by default its columns that are not extra, cut to fit the terminal
    when stdout is one and whole otherwise; with --wide, every column and every value whole."""
    if wide:
        return render_table(columns, rows)
    return render_table([c for c in columns if not c.extra], rows, terminal_width())


def paragraph(text: str) -> str:
    """Prose printed with a table, wrapped to the terminal's width, or PROSE_WIDTH off one."""
    return textwrap.fill(text, terminal_width() or PROSE_WIDTH)


def _fitted(columns: Sequence[Column], widths: list[int], width: int) -> list[int]:
    """Column widths within `width`: the text columns that may be cut share the room the
    others leave, so the widest are cut first, each keeping its own width if its share allows
    (the narrowest are served first), and never narrower than its header."""
    fixed = sum(room for c, room in zip(columns, widths, strict=True) if not c.cut)
    left = width - fixed - len(GAP) * (len(columns) - 1)
    fitted = list(widths)
    cuttable = sorted((i for i, c in enumerate(columns) if c.cut), key=widths.__getitem__)
    for done, i in enumerate(cuttable):
        share = left // (len(cuttable) - done)
        fitted[i] = max(min(widths[i], share), _width(columns[i].header))
        left -= fitted[i]
    return fitted


def render_table(columns: Sequence[Column], rows: Sequence[Any], width: int | None = None) -> str:
    """Rows as an aligned text table under a header line, control characters escaped; within
    `width`, if given: the values of the columns that may be cut are cut with '…', and a line
    still too long (the columns that may not be cut wider than `width`) is cut at its end."""
    if not rows:
        return "(none)"
    cells = [[c.header for c in columns]]
    cells += [[printable(c.show(_field(row, c.attribute))) for c in columns] for row in rows]
    widths = [max(_width(line[i]) for line in cells) for i in range(len(columns))]
    fitted = widths if width is None else _fitted(columns, widths, width)
    lines = [
        GAP.join(
            _padded(ellipsized(text, room), room) for text, room in zip(line, fitted, strict=True)
        ).rstrip()
        for line in cells
    ]
    return "\n".join(lines if width is None else [ellipsized(line, width) for line in lines])


def _padded(text: str, room: int) -> str:
    """Printable `text` followed by the spaces that make it `room` columns wide."""
    return text + " " * (room - _width(text))


def render_json(columns: Sequence[Column], rows: Sequence[Any]) -> str:
    """Rows as a JSON list of objects keyed by attribute, raw values (times in epoch ms)."""
    return json.dumps(
        [{c.attribute: getattr(row, c.attribute) for c in columns} for row in rows], indent=2
    )

"""Durations as people read them, the same in alert messages, the terminal and the pages
(web/static/js/format.js writes them the same way), and ages, which are never negative."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def age_ms(now_ms: int, then_ms: int | None) -> int | None:
    """How long before `now_ms` a time was: 0 for one after it (a watermark or a job's clock
    ahead, told apart by future_event_time and clock_ahead), None for an unknown time."""
    return None if then_ms is None else max(now_ms - then_ms, 0)


def duration(ms: int | float | None) -> str:
    """Milliseconds as people read a duration, as the dashboard writes them: '840 ms', '7.5 s',
    '36 min 5 s', '1 h 57 min', '5 d 11 h'; '-' when unknown."""
    if ms is None:
        return "-"
    ms = int(ms)
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


def _compound(sign: str, big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f"{sign}{big} {big_unit} {small} {small_unit}" if small else f"{sign}{big} {big_unit}"

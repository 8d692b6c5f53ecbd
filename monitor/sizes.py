"""Sizes in bytes as people read them, the same in the terminal and the pages
(web/static/js/state.js writes them the same way): '512 B', '12.4 KiB', '1.5 GiB'."""

from __future__ import annotations

import math

UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size(n: int | float | None) -> str:
    """A number of bytes in the largest binary unit it fills; '-' when unknown."""
    if n is None:
        return "-"
    value, unit = float(n), 0
    while abs(value) >= 1024 and unit < len(UNITS) - 1:
        value /= 1024
        unit += 1
    # Whole bytes rounded half up, as the pages' Math.round does.
    return f"{math.floor(value + 0.5)} B" if unit == 0 else f"{value:.1f} {UNITS[unit]}"

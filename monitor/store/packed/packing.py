"""A span's figures of every partition of a query, packed into one compressed value.

A row per partition per minute paid a row header, the query id, the partition's name and an
index entry for about a dozen small integers: some 350 bytes a partition-minute on PostgreSQL.
Packed, a query's minute is one row whose `figures` value holds its partitions' names and a
64-bit integer per figure and partition (None where a figure has no value), about 15 bytes a
partition-minute; and a range is read as arrays, not as rows.

The layout, compressed with zlib: a version byte; the length of the names (4 bytes, little
endian) and the names as a JSON list; a bit per figure and partition, set where it has a value;
then the values, figure by figure, byte-shuffled (every value's first byte, then every second
byte, …), which puts the bytes that barely differ between partitions side by side. The
partitions' lateness histograms, dictionaries of any size, are packed apart, as JSON.

Rows in their order (a batch's source partitions, store.batch_offsets, and their event times,
store.batch_event_times) are packed the same way, their other values (names, samples,
histograms) in the header as a JSON list per row, their numbers as the figures.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

VERSION = 1
Values = npt.NDArray[np.int64]
Present = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Packed:
    """A span's figures: `values[f, p]` is figure f of partition `names[p]`, meaningful only
    where `present[f, p]`."""

    names: tuple[str, ...]
    values: Values
    present: Present

    def rows(self, figures: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Each partition's figures by name, None where a figure has no value."""
        values, present = self.values.tolist(), self.present.tolist()
        return {
            name: {
                figure: values[f][p] if present[f][p] else None for f, figure in enumerate(figures)
            }
            for p, name in enumerate(self.names)
        }


def pack(figures: Sequence[str], rows: Mapping[str, Mapping[str, int | None]]) -> bytes:
    """Partitions' rows of figures, by partition name, as one value (names in sorted order);
    every figure fits 64 bits."""
    names = sorted(rows)
    present = np.zeros((len(figures), len(names)), dtype=np.bool_)
    values = np.zeros((len(figures), len(names)), dtype="<i8")
    for p, name in enumerate(names):
        row = rows[name]
        for f, figure in enumerate(figures):
            value = row[figure]
            if value is not None:
                present[f, p] = True
                values[f, p] = value
    return _compressed(names, values, present)


def _compressed(header_value: Any, values: Values, present: Present) -> bytes:
    """The layout: a JSON header, the presence bits and the byte-shuffled values, zlib'd."""
    header = json.dumps(header_value, separators=(",", ":")).encode()
    shuffled = values.astype("<i8", copy=False).view(np.uint8).reshape(-1, 8).T.tobytes()
    return zlib.compress(
        bytes([VERSION])
        + struct.pack("<I", len(header))
        + header
        + np.packbits(present).tobytes()
        + shuffled
    )


def _opened(data: bytes) -> tuple[bytes, int]:
    """The header of a decompressed value, and where its presence bits start."""
    if data[0] != VERSION:
        raise ValueError(f"packed figures of version {data[0]}, not {VERSION}")
    (length,) = struct.unpack_from("<I", data, 1)
    return data[5 : 5 + length], 5 + length


def _arrays(data: bytes, start: int, figures: int, width: int) -> tuple[Values, Present]:
    """The values and presence bits of `figures` figures of `width` rows from `start` on."""
    count = figures * width
    bits_end = start + (count + 7) // 8
    present = np.unpackbits(
        np.frombuffer(data, np.uint8, (count + 7) // 8, start), count=count
    ).astype(np.bool_)
    shuffled = np.frombuffer(data, np.uint8, count * 8, bits_end)
    values = shuffled.reshape(8, count).T.copy().view("<i8").reshape(figures, width)
    return values.astype(np.int64, copy=False), present.reshape(figures, width)


def unpack(
    blob: bytes, figures: int, names_of: dict[bytes, tuple[str, ...]] | None = None
) -> Packed:
    """What `pack` packed of `figures` figures; `names_of` caches the names lists met, as a
    range's spans mostly share one."""
    data = zlib.decompress(blob)
    header, start = _opened(data)
    names = None if names_of is None else names_of.get(header)
    if names is None:
        names = tuple(json.loads(header))
        if names_of is not None:
            names_of[header] = names
    return Packed(names, *_arrays(data, start, figures, len(names)))


def pack_rows(
    cells: Sequence[str], numbers: Sequence[str], rows: Sequence[Mapping[str, Any]]
) -> bytes:
    """Rows, in their order, as one value: their `cells` fields (names, samples, histograms:
    any JSON value) in the header, a list per row, and their `numbers` fields (whole numbers,
    booleans as 0 and 1, or None) as the figures."""
    present = np.zeros((len(numbers), len(rows)), dtype=np.bool_)
    values = np.zeros((len(numbers), len(rows)), dtype="<i8")
    for r, row in enumerate(rows):
        for f, number in enumerate(numbers):
            value = row[number]
            if value is not None:
                present[f, r] = True
                values[f, r] = value
    return _compressed([[row[cell] for cell in cells] for row in rows], values, present)


def unpack_columns(
    blob: bytes, cells: Sequence[str], numbers: Sequence[str]
) -> dict[str, list[Any]]:
    """What `pack_rows` packed, column by column: each of the `cells` and `numbers` fields'
    values in row order (the numbers as ints, None where they had no value)."""
    data = zlib.decompress(blob)
    header, start = _opened(data)
    found = json.loads(header)
    values, present = _arrays(data, start, len(numbers), len(found))
    columns: dict[str, list[Any]] = {
        cell: [row[c] for row in found] for c, cell in enumerate(cells)
    }
    for number, row, shown in zip(numbers, values.tolist(), present.tolist(), strict=True):
        columns[number] = (
            row if all(shown) else [v if s else None for v, s in zip(row, shown, strict=True)]
        )
    return columns


Histograms = tuple[Mapping[str, int] | None, Mapping[str, int] | None]


def pack_histograms(partitions: Mapping[str, Histograms]) -> bytes | None:
    """Partitions' lateness histograms (late, slack; health.lateness) by name as one value:
    JSON compressed with zlib, only the partitions measured; None when none was."""
    measured = {
        name: [late, slack]
        for name, (late, slack) in sorted(partitions.items())
        if late is not None or slack is not None
    }
    if not measured:
        return None
    return zlib.compress(json.dumps(measured, separators=(",", ":")).encode())


def unpack_histograms(blob: bytes | None) -> dict[str, tuple[Any, Any]]:
    """What `pack_histograms` packed, by partition name."""
    if blob is None:
        return {}
    return {
        name: (late, slack) for name, (late, slack) in json.loads(zlib.decompress(blob)).items()
    }

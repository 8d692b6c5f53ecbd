"""A file's fingerprint: the same however its bytes were read, in chunks or from its two ends,
and another for other bytes at either end."""

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor.ingest.fingerprint import SPAN, Prefix


def read_back(data: bytes, size: int) -> Prefix:
    """The prefix as a check reads it back from storage: its two ends."""
    return Prefix.read_back(data[: min(size, SPAN)], data[max(size - SPAN, 0) : size], size)


@given(
    data=st.binary(max_size=3 * SPAN),
    cuts=st.lists(st.integers(0, 3 * SPAN), max_size=6),
    again=st.integers(0, 3 * SPAN),
)
def test_read_in_any_chunks_or_from_its_ends_it_is_the_same(data, cuts, again):
    prefix = Prefix()
    bounds = sorted({0, *(cut for cut in cuts if cut <= len(data)), len(data)})
    for start, end in pairwise(bounds):
        prefix.take(start, data[start:end])
        back = min(again, start)  # bytes read again from before the end change nothing
        prefix.take(back, data[back:end])
    assert prefix.size == len(data)
    assert prefix.fingerprint == read_back(data, len(data)).fingerprint


@pytest.mark.parametrize("where", [0, SPAN - 1, 2 * SPAN, 3 * SPAN - 1], ids=str)
def test_a_byte_changed_at_either_end_is_another_fingerprint(where):
    data = bytes(range(256)) * (3 * SPAN // 256)
    changed = data[:where] + b"!" + data[where + 1 :]
    assert read_back(data, len(data)).fingerprint != read_back(changed, len(data)).fingerprint


def test_fewer_bytes_than_it_covers_are_another_fingerprint():
    data = b"x" * (2 * SPAN)
    whole = read_back(data, len(data)).fingerprint
    assert Prefix.read_back(data[:SPAN], data[-SPAN + 1 :], len(data)).fingerprint != whole


def test_bytes_after_a_gap_are_refused():
    with pytest.raises(ValueError, match="gap"):
        Prefix().take(1, b"x")

"""Spark's compression formats, decompressed as the bytes arrive, on files Spark wrote."""

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.ingest.codecs import (
    CodecError,
    decompressor,
    is_supported,
)

COMPRESSED = ["zstd", "lz4", "snappy"]


@pytest.fixture(scope="module")
def spark_files(event_logs) -> dict[str, bytes]:
    """Each codec's finished log as Spark wrote it, and the uncompressed one."""
    return {
        variant: event_logs.events_file(variant).read_bytes() for variant in [*COMPRESSED, "plain"]
    }


def decompress(codec, pieces) -> bytes:
    stream = decompressor(codec)
    out = b"".join(stream.decompress(piece) for piece in pieces)
    stream.finish()
    return out


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(cuts), len(data)]
    return [data[start:end] for start, end in zip(bounds, bounds[1:], strict=False)]


@pytest.mark.parametrize("codec", COMPRESSED)
def test_a_whole_spark_file(spark_files, codec):
    text = decompress(codec, [spark_files[codec]])
    assert text.startswith(b'{"Event":"SparkListenerLogStart"')
    assert text.endswith(b"\n")
    # The same run, repeated: only timestamps and ids differ in length.
    assert text.count(b"\n") == spark_files["plain"].count(b"\n")


@pytest.mark.parametrize("codec", COMPRESSED)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_split_of_the_stream_gives_the_same_bytes(spark_files, codec, data):
    compressed = spark_files[codec]
    cuts = data.draw(st.lists(st.integers(0, len(compressed)), max_size=6))
    assert decompress(codec, split(compressed, cuts)) == decompress(codec, [compressed])


@pytest.mark.parametrize("codec", COMPRESSED)
def test_byte_by_byte_near_the_start(spark_files, codec):
    head = spark_files[codec][:200]
    stream = decompressor(codec)
    fed = b"".join(stream.decompress(head[i : i + 1]) for i in range(len(head)))
    whole = decompressor(codec).decompress(head)
    assert fed == whole


@pytest.mark.parametrize("codec", COMPRESSED)
def test_an_incomplete_end_waits_then_finish_reports_truncation(spark_files, codec):
    compressed = spark_files[codec]
    stream = decompressor(codec)
    partial = stream.decompress(compressed[: len(compressed) // 2 + 3])
    with pytest.raises(CodecError, match="truncated"):
        stream.finish()
    assert partial + stream.decompress(compressed[len(compressed) // 2 + 3 :]) == decompress(
        codec, [compressed]
    )


def corrupt_lz4(data: bytes) -> bytes:
    second = data.index(b"LZ4Block", 1)
    return data[:second] + b"LZ4Blick" + data[second + 8 :]


def corrupt_snappy(data: bytes) -> bytes:
    # The first block's length (after the 16-byte header) becomes negative.
    return data[:16] + struct.pack(">i", -5) + data[20:]


def corrupt_zstd(data: bytes) -> bytes:
    return data[:200] + bytes(64) + data[264:]


@pytest.mark.parametrize(
    ("codec", "corrupt", "message"),
    [
        ("lz4", corrupt_lz4, "does not start with LZ4Block"),
        ("snappy", corrupt_snappy, "block length"),
        ("zstd", corrupt_zstd, "corrupt zstd"),
    ],
    ids=["lz4", "snappy", "zstd"],
)
def test_corrupt_data(spark_files, codec, corrupt, message):
    with pytest.raises(CodecError, match=message):
        decompress(codec, [corrupt(spark_files[codec])])


def test_a_corrupt_lz4_block_body():
    body = bytes(range(40))
    block = b"LZ4Block" + struct.pack("<Biii", 0x20, len(body), 64, 0) + body
    with pytest.raises(CodecError, match="corrupt lz4"):
        decompressor("lz4").decompress(block)


def test_lz4_stream_end_marker_then_a_concatenated_stream(spark_files):
    # Two of Spark's lz4 streams back to back, as lz4-java's reader accepts.
    once = decompress("lz4", [spark_files["lz4"]])
    assert decompress("lz4", [spark_files["lz4"] * 2]) == once * 2


def test_snappy_concatenated_streams(spark_files):
    once = decompress("snappy", [spark_files["snappy"]])
    assert decompress("snappy", [spark_files["snappy"] * 2]) == once * 2


def test_snappy_without_its_header():
    with pytest.raises(CodecError, match="no snappy-java stream header"):
        decompressor("snappy").decompress(b"{not snappy at all}")


@pytest.mark.parametrize("codec", ["lzf", "gzip", "zstd.crc"])
def test_unknown_codecs(codec):
    assert not is_supported(codec)
    with pytest.raises(CodecError, match=f"unknown codec '{codec}'"):
        decompressor(codec)


def test_uncompressed_is_supported():
    assert is_supported(None)
    assert decompress(None, [b"a\n", b"b"]) == b"a\nb"

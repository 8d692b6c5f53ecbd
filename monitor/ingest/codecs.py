"""Incremental decompressors for the formats Spark writes event logs in.

Feed compressed bytes as they arrive, get the decompressed bytes complete so far; an
incomplete block or frame at the end waits for more. The formats, as Spark writes them:

- ``zstd``: standard zstd frames; Spark closes a frame at each flush, so a log still being
  written decompresses up to its last flush.
- ``lz4``: lz4-java's ``LZ4BlockOutputStream`` (not the lz4 frame format): blocks of
  ``"LZ4Block"``, a token (method | level), compressed and original lengths and a checksum
  (little-endian int32s), then the data; an empty raw block ends a stream.
- ``snappy``: snappy-java's ``SnappyOutputStream``: a 16-byte header (``\\x82SNAPPY\\0``,
  version, compatible version), then blocks of a big-endian int32 length and raw snappy.

The API::

    decompressor(codec: str | None) -> Decompressor     # None: uncompressed
    Decompressor.decompress(data: bytes) -> bytes
    Decompressor.finish() -> None      # the file is complete: leftover bytes are truncation
    is_supported(codec: str | None) -> bool
    CodecError (a ValueError): corrupt or truncated data, or an unknown codec
"""

from __future__ import annotations

import struct
from typing import Protocol

import cramjam
import lz4.block
import zstandard


class CodecError(ValueError):
    """Compressed data that cannot be decompressed: corrupt, truncated or an unknown codec."""


class Decompressor(Protocol):
    """Decompresses one file's bytes, fed in order in pieces of any size."""

    def decompress(self, data: bytes) -> bytes:
        """The decompressed bytes that ``data`` completes; the rest waits for more."""
        ...

    def finish(self) -> None:
        """Declare the input complete: raise CodecError if a partial block is left over."""
        ...


class Uncompressed:
    """The identity: Spark's ``spark.eventLog.compress=false``."""

    def decompress(self, data: bytes) -> bytes:
        """The bytes themselves."""
        return data

    def finish(self) -> None:
        """Nothing can be left over."""


# Fed in pieces: each frame's end copies the rest of the input (unused_data), and Spark's
# frames are small (one per flush), so whole chunks would make that copying quadratic.
_ZSTD_PIECE = 64 * 1024


class ZstdFrames:
    """A sequence of zstd frames, one decompressor per frame."""

    def __init__(self) -> None:
        self._factory = zstandard.ZstdDecompressor()
        self._frame = self._factory.decompressobj()
        self._in_frame = False

    def decompress(self, data: bytes) -> bytes:
        """Decompress across frame boundaries; a partial frame yields what it can."""
        view = memoryview(data)
        return b"".join(
            self._pieces(view[start : start + _ZSTD_PIECE])
            for start in range(0, len(view), _ZSTD_PIECE)
        )

    def _pieces(self, data: bytes | memoryview) -> bytes:
        out = []
        while data:
            try:
                out.append(self._frame.decompress(data))
            except zstandard.ZstdError as error:
                raise CodecError(f"corrupt zstd data: {error}") from error
            if not self._frame.eof:
                self._in_frame = True
                break
            data = self._frame.unused_data
            self._frame = self._factory.decompressobj()
            self._in_frame = False
        return b"".join(out)

    def finish(self) -> None:
        """Raise CodecError if the last frame is not complete."""
        if self._in_frame:
            raise CodecError("truncated zstd data: the last frame is incomplete")


class _Blocks:
    """Common buffering for formats made of length-prefixed blocks."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def decompress(self, data: bytes) -> bytes:
        """Decompress every complete block buffered so far."""
        self._buffer += data
        out: list[bytes] = []
        start = 0
        while (used := self._block(memoryview(self._buffer)[start:], out)) > 0:
            start += used
        del self._buffer[:start]
        return b"".join(out)

    def finish(self) -> None:
        """Raise CodecError if a partial block is left over."""
        if self._buffer:
            raise CodecError(f"truncated data: {len(self._buffer)} bytes of an incomplete block")

    def _block(self, data: memoryview, out: list[bytes]) -> int:
        """Decode the block at the start of data into out: the bytes it used, 0 if partial."""
        raise NotImplementedError


LZ4_MAGIC = b"LZ4Block"
_LZ4_HEADER = struct.Struct("<Biii")  # token, compressed length, original length, checksum
_LZ4_RAW, _LZ4_COMPRESSED = 0x10, 0x20


class Lz4Blocks(_Blocks):
    """lz4-java's block stream (``LZ4BlockOutputStream``), as Spark's lz4 codec writes it.

    The per-block checksum (xxhash32) is not verified; a block must decompress to exactly
    its stated length.
    """

    def _block(self, data: memoryview, out: list[bytes]) -> int:
        head = len(LZ4_MAGIC) + _LZ4_HEADER.size
        if len(data) < head:
            return 0
        if data[: len(LZ4_MAGIC)] != LZ4_MAGIC:
            raise CodecError("corrupt lz4 data: a block does not start with LZ4Block")
        token, size, length, _ = _LZ4_HEADER.unpack(data[len(LZ4_MAGIC) : head])
        method, level = token & 0xF0, token & 0x0F
        if method not in (_LZ4_RAW, _LZ4_COMPRESSED) or not 0 <= length <= 1 << (10 + level):
            raise CodecError(f"corrupt lz4 data: a block header is invalid (token {token:#x})")
        if size < 0 or (method == _LZ4_RAW and size != length):
            raise CodecError("corrupt lz4 data: a block's lengths are invalid")
        if len(data) < head + size:
            return 0
        body = bytes(data[head : head + size])
        out.append(body if method == _LZ4_RAW else _lz4_block(body, length))
        return head + size


def _lz4_block(body: bytes, length: int) -> bytes:
    try:
        block = lz4.block.decompress(body, uncompressed_size=length)
    except lz4.block.LZ4BlockError as error:
        raise CodecError(f"corrupt lz4 data: {error}") from error
    if len(block) != length:
        raise CodecError(f"corrupt lz4 data: a block gave {len(block)} bytes, not {length}")
    return block


SNAPPY_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_HEADER_SIZE = len(SNAPPY_MAGIC) + 8  # then version and compatible version, int32s
_SNAPPY_LENGTH = struct.Struct(">i")
# A bound on a block's length: anything larger is corruption, not a block still arriving.
MAX_SNAPPY_BLOCK = 1 << 30


class SnappyBlocks(_Blocks):
    """snappy-java's stream (``SnappyOutputStream``), as Spark's snappy codec writes it.

    A header may appear again later: streams concatenated as snappy-java's reader allows.
    """

    def __init__(self) -> None:
        super().__init__()
        self._header_seen = False

    def _block(self, data: memoryview, out: list[bytes]) -> int:
        if len(data) < _SNAPPY_LENGTH.size:
            return 0
        if data[:1] == SNAPPY_MAGIC[:1] or not self._header_seen:
            return self._header(data)
        (size,) = _SNAPPY_LENGTH.unpack(data[: _SNAPPY_LENGTH.size])
        if not 0 < size <= MAX_SNAPPY_BLOCK:
            raise CodecError(f"corrupt snappy data: a block length of {size}")
        end = _SNAPPY_LENGTH.size + size
        if len(data) < end:
            return 0
        try:
            out.append(bytes(cramjam.snappy.decompress_raw(bytes(data[_SNAPPY_LENGTH.size : end]))))
        except cramjam.DecompressionError as error:
            raise CodecError(f"corrupt snappy data: {error}") from error
        return end

    def _header(self, data: memoryview) -> int:
        if len(data) < _SNAPPY_HEADER_SIZE:
            prefix = bytes(data)
            if not SNAPPY_MAGIC.startswith(prefix[: len(SNAPPY_MAGIC)]):
                raise CodecError("corrupt snappy data: no snappy-java stream header")
            return 0
        if data[: len(SNAPPY_MAGIC)] != SNAPPY_MAGIC:
            raise CodecError("corrupt snappy data: no snappy-java stream header")
        self._header_seen = True
        return _SNAPPY_HEADER_SIZE


_DECOMPRESSORS: dict[str | None, type[Decompressor]] = {
    None: Uncompressed,
    "zstd": ZstdFrames,
    "lz4": Lz4Blocks,
    "snappy": SnappyBlocks,
}


def is_supported(codec: str | None) -> bool:
    """Whether we can read a log with this codec (None: uncompressed)."""
    return codec in _DECOMPRESSORS


def decompressor(codec: str | None) -> Decompressor:
    """A fresh decompressor for a codec's short name, or CodecError when it is unknown."""
    if codec not in _DECOMPRESSORS:
        readable = ", ".join(sorted(name for name in _DECOMPRESSORS if name))
        raise CodecError(f"unknown codec {codec!r} (readable: {readable}, or uncompressed)")
    return _DECOMPRESSORS[codec]()

"""Read one event log file's complete lines from a position, again and again as it grows.

The API::

    Position(offset: int = 0, line: int = 0)     # decompressed bytes and lines consumed
    LogLine(text: str, number: int, end: Position)
    LogReader(file: LogFile, position: Position = START, chunk_size: int = CHUNK_SIZE)
    LogReader.read(max_lines: int | None = None) -> list[LogLine]
    LogReader.relocate(file: LogFile) -> None     # the same file, renamed or now complete
    LogReader.position, .bytes_read, .done

A line is returned once its ``\\n`` has arrived: a half-written last line waits. Store a
line's ``end`` with what was made of it; a new reader from that position returns the next
line, nothing skipped or repeated. An uncompressed file is read from the position on; a
compressed one is decompressed from its start, skipping to the position. Every failure
(corrupt or truncated data, a file that is unreadable or gone, an unknown codec) raises
``LogError`` with the file's URL and, where known, the line number; a complete file that ends
inside a line or compressed frame raises its subclass ``LogEndsShort``, with the file's size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from monitor.ingest.codecs import CodecError, decompressor
from monitor.ingest.logfiles import (
    LogEndsShort,
    LogError,
    LogFile,
    filesystem,
    read_range,
    size_of,
)

# Compressed bytes read from storage at a time: a 128 MiB rolled file is never held whole.
CHUNK_SIZE = 1 << 20


@dataclass(frozen=True)
class Position:
    """Where reading resumes: decompressed bytes and lines consumed before the next line."""

    offset: int = 0
    line: int = 0


START = Position()


@dataclass(frozen=True)
class LogLine:
    """One complete line: its text (without the line end), number (from 1) and end."""

    text: str
    number: int
    end: Position


class LogReader:
    """The complete lines of one log file from a position; call ``read`` again for more.

    The decompression state is kept between calls, so an in-progress file is never read
    twice. Once a complete file (``file.complete``) has been read to its end, leftover
    partial data is reported as truncation and ``done`` becomes true.
    """

    def __init__(
        self, file: LogFile, position: Position = START, chunk_size: int = CHUNK_SIZE
    ) -> None:
        try:
            self._decompressor = decompressor(file.codec)
        except CodecError as error:
            raise LogError(file.url, str(error)) from error
        self.file = file
        self._fs, self._path = filesystem(file.url)
        self.position = position
        self.chunk_size = chunk_size
        self.bytes_read = 0
        self.done = False
        self._pending = bytearray()
        self._broken: LogError | None = None
        # An uncompressed file is read from the byte before the position: it must be "\n".
        resume_at = max(position.offset - 1, 0) if file.codec is None else 0
        self._offset = resume_at
        self._skip = position.offset - resume_at
        self._skipped_last = b"\n"

    def relocate(self, file: LogFile) -> None:
        """Follow the same file (same key) to its new URL or completeness."""
        if file.key != self.file.key:
            raise ValueError(f"{file.url} is not {self.file.url}")
        self.file = file
        self._fs, self._path = filesystem(file.url)

    def read(self, max_lines: int | None = None) -> list[LogLine]:
        """The complete lines available now (at most max_lines), in order.

        Lines before a failure are returned first; the failure is raised by the next call.
        """
        if self._broken is not None:
            raise self._broken
        lines = self._take_lines(max_lines)
        try:
            if not self.done and (max_lines is None or len(lines) < max_lines):
                self._read_more(lines, max_lines)
            if self._broken is not None:
                raise self._broken
        except LogError:
            if not lines:
                raise
        return lines

    def _read_more(self, lines: list[LogLine], max_lines: int | None) -> None:
        size = self._size()
        while self._offset < size and (max_lines is None or len(lines) < max_lines):
            if not self._feed(self._read_chunk(size)):
                break
            lines += self._take_lines(None if max_lines is None else max_lines - len(lines))
            if self._broken is not None:
                return
        if self._offset >= size and self.file.complete and b"\n" not in self._pending:
            self._finish(size)

    def _size(self) -> int:
        size = size_of(self._fs, self._path, self.file.url)
        if size < self._offset:
            raise self._fail(f"the file is shorter ({size} bytes) than what was read from it")
        return size

    def _read_chunk(self, size: int) -> bytes:
        end = min(self._offset + self.chunk_size, size)
        chunk = read_range(self._fs, self._path, self.file.url, self._offset, end)
        self._offset += len(chunk)
        self.bytes_read += len(chunk)
        return chunk

    def _feed(self, chunk: bytes) -> bool:
        """Decompress a chunk into the pending bytes; False when there was nothing to feed."""
        if not chunk:
            return False
        try:
            data = self._decompressor.decompress(chunk)
        except CodecError as error:
            raise self._fail(str(error)) from error
        if self._skip:
            data = self._skip_to_position(data)
        self._pending += data
        return True

    def _skip_to_position(self, data: bytes) -> bytes:
        """Drop what comes before the position; the byte just before it must end a line."""
        dropped = data[: self._skip]
        self._skip -= len(dropped)
        if dropped:
            self._skipped_last = dropped[-1:]
        if not self._skip and self._skipped_last != b"\n":
            raise self._fail(f"offset {self.position.offset} is not the start of a line")
        return data[len(dropped) :]

    def _take_lines(self, limit: int | None) -> list[LogLine]:
        """The complete lines pending, up to limit; a line that is not text stops them."""
        lines: list[LogLine] = []
        start = 0
        while self._broken is None and (limit is None or len(lines) < limit):
            end = self._pending.find(b"\n", start)
            if end < 0:
                break
            try:
                text = self._pending[start:end].decode("utf-8").removesuffix("\r")
            except UnicodeDecodeError as error:
                self._fail(f"not UTF-8 text: {error}")
                break
            self.position = Position(self.position.offset + end + 1 - start, self.position.line + 1)
            lines.append(LogLine(text, self.position.line, self.position))
            start = end + 1
        del self._pending[:start]
        return lines

    def _finish(self, size: int) -> None:
        """The whole of a complete file, `size` bytes, has been read: anything left over
        means it ends short."""
        if self._skip:
            self._ends_short(
                size, f"the file ends before the position (offset {self.position.offset})"
            )
        try:
            self._decompressor.finish()
        except CodecError as error:
            self._ends_short(size, str(error), error)
        if self._pending:
            self._ends_short(size, "truncated: the last line has no end")
        self.done = True

    def _ends_short(self, size: int, reason: str, cause: Exception | None = None) -> NoReturn:
        self._broken = LogEndsShort(self.file.url, reason, self.position.line + 1, size)
        raise self._broken from cause

    def _fail(self, reason: str) -> LogError:
        """A LogError at the next line; the decompression state is lost, so it sticks."""
        self._broken = LogError(self.file.url, reason, self.position.line + 1)
        return self._broken

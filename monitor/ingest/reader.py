"""Read one event log file's complete lines from a position, again and again as it grows.

The API::

    Position(offset: int = 0, line: int = 0)     # decompressed bytes and lines consumed
    LogLine(text: str, number: int, end: Position)
    LogReader(file: LogFile, position: Position = START, chunk_size: int = CHUNK_SIZE,
              fingerprint: Fingerprint | None = None)
    LogReader.read(max_lines: int | None = None) -> list[LogLine]
    LogReader.relocate(file: LogFile) -> None     # the same file, renamed or now complete
    LogReader.position, .fingerprint, .bytes_read, .done

A line is returned once its ``\\n`` has arrived: a half-written last line waits. Store a
line's ``end`` and the reader's ``fingerprint`` with what was made of it; a new reader from
that position and fingerprint returns the next line, nothing skipped or repeated. An
uncompressed file is read from the position on; a compressed one (or one without a
fingerprint) is read from its start, skipping to the position. Every failure (corrupt or
truncated data, a file that is unreadable or gone, an unknown codec) raises ``LogError`` with
the file's URL and, where known, the line number; a complete file that ends inside a line or
compressed frame raises its subclass ``LogEndsShort``, with the file's size.

The file is known by its content (ingest.fingerprint): a reader resumed from a fingerprint
checks it before reading on, and a reader that has read to the end checks what it read again
before reading what was added or finishing the file. A file rewritten since (shorter than what
was read, or other bytes where they were read) raises ``LogRewritten``: read it again from its
start with a new reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from monitor.ingest.codecs import CodecError, decompressor
from monitor.ingest.fingerprint import SPAN, Fingerprint, Prefix
from monitor.ingest.logfiles import (
    LogEndsShort,
    LogError,
    LogFile,
    LogRewritten,
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
    partial data is reported as truncation and ``done`` becomes true. `fingerprint` is the
    one stored with `position`: the file must still hold what it covers.
    """

    def __init__(
        self,
        file: LogFile,
        position: Position = START,
        chunk_size: int = CHUNK_SIZE,
        fingerprint: Fingerprint | None = None,
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
        self._prefix = Prefix()
        self._expected = fingerprint
        self._caught_up = False
        # An uncompressed file is read from the byte before the position: it must be "\n".
        # Without a fingerprint (a position stored before there were any), it is read from
        # its start, as a compressed one is, for the bytes its fingerprint covers.
        known = file.codec is None and fingerprint is not None
        resume_at = max(position.offset - 1, 0) if known else 0
        self._offset = resume_at
        self._skip = position.offset - resume_at
        self._skipped_last = b"\n"

    @property
    def fingerprint(self) -> Fingerprint:
        """The fingerprint of the file's bytes read so far, to store with the position."""
        return self._prefix.fingerprint

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
        self._check_content(size)
        while self._offset < size and (max_lines is None or len(lines) < max_lines):
            if not self._feed(self._read_chunk(size)):
                break
            lines += self._take_lines(None if max_lines is None else max_lines - len(lines))
            if self._broken is not None:
                return
        if self._offset >= size:
            self._caught_up = True
            if self.file.complete and b"\n" not in self._pending:
                self._finish(size)

    def _size(self) -> int:
        """The file's size now; it cannot be shorter than what was read from it."""
        size = size_of(self._fs, self._path, self.file.url)
        read = max(self._offset, self._prefix.size, self._expected.size if self._expected else 0)
        if size < read:
            raise self._rewritten(f"it is shorter ({size:,} bytes) than the {read:,} bytes read")
        return size

    def _check_content(self, size: int) -> None:
        """Before reading on from a stored fingerprint, or from the end of what was read once
        more was added or the file completed: the bytes read must be there as they were."""
        if self._expected is not None:
            expected = self._expected
        elif self._caught_up and (size > self._prefix.size or self.file.complete):
            expected = self._prefix.fingerprint
        else:
            return
        found = self._read_back(expected.size)
        if found.fingerprint != expected:
            raise self._rewritten(f"its first {expected.size:,} bytes are not those read from it")
        self._prefix, self._expected, self._caught_up = found, None, False

    def _read_back(self, size: int) -> Prefix:
        """The prefix of the file's first `size` bytes as it holds them now."""
        head = read_range(self._fs, self._path, self.file.url, 0, min(size, SPAN))
        tail = head
        if size > SPAN:
            tail = read_range(self._fs, self._path, self.file.url, size - SPAN, size)
        return Prefix.read_back(head, tail, size)

    def _read_chunk(self, size: int) -> bytes:
        end = min(self._offset + self.chunk_size, size)
        chunk = read_range(self._fs, self._path, self.file.url, self._offset, end)
        self._prefix.take(self._offset, chunk)
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

    def _rewritten(self, reason: str) -> LogRewritten:
        """A LogRewritten: what was read is no longer in the file, so the reader stops."""
        rewritten = LogRewritten(self.file.url, f"rewritten: {reason}")
        self._broken = rewritten
        return rewritten

    def _fail(self, reason: str) -> LogError:
        """A LogError at the next line; the decompression state is lost, so it sticks."""
        self._broken = LogError(self.file.url, reason, self.position.line + 1)
        return self._broken

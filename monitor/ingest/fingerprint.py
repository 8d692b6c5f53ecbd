"""Knowing an event log file by its content, not only by its name and how far it was read.

Spark only ever appends to an event log, and the rename at its end keeps its content. So a file
that is shorter than what was read from it, or whose bytes read are not what they were, has
been rewritten: truncated and written again, or replaced (a rename over it) by another file.
What was read from it then says nothing of where its new content begins: it is read again from
its start.

A fingerprint is taken of a file's stored bytes (compressed as they are, so every codec is
alike) from its start up to `size`: a digest of its first SPAN bytes and of the SPAN bytes
before `size`. Checking it reads those two small ranges however large the file is; a rewrite
goes unseen only if the new content is the old one byte for byte both at its start and just
before where reading goes on. Every Spark log starts with the same line, but its next ones
already carry the application's own times, well inside SPAN.

The API::

    Fingerprint(size: int, digest: str)
    Prefix()                          # what has been read of a file, for its fingerprint
    Prefix.take(offset, chunk)        # bytes read at `offset`; those taken before are skipped
    Prefix.size, Prefix.fingerprint
    Prefix.read_back(head, tail, size) -> Prefix    # from the two ends read from storage
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

# Bytes at each end of what was read that a fingerprint covers: a page, one small read each.
SPAN = 4096


@dataclass(frozen=True)
class Fingerprint:
    """A file's first `size` stored bytes, known by a digest of their two ends."""

    size: int
    digest: str


class Prefix:
    """The bytes read of a file from its start, as much of them as its fingerprint needs: the
    first SPAN and the last SPAN."""

    def __init__(self) -> None:
        self.size = 0
        self._head = b""
        self._tail = b""

    def take(self, offset: int, chunk: bytes) -> None:
        """Take in `chunk`, read at `offset` (at or before the end of what was taken): only
        what lies beyond that end adds to it."""
        if offset > self.size:
            raise ValueError(f"bytes read at {offset} leave a gap after {self.size}")
        new = chunk[self.size - offset :]
        if not new:
            return
        if self.size < SPAN:
            self._head += new[: SPAN - self.size]
        self._tail = (self._tail + new[-SPAN:])[-SPAN:]
        self.size += len(new)

    @property
    def fingerprint(self) -> Fingerprint:
        """The fingerprint of what has been taken in."""
        digest = hashlib.blake2b(len(self._head).to_bytes(8, "big"), digest_size=16)
        digest.update(self._head)
        digest.update(self._tail)
        return Fingerprint(self.size, digest.hexdigest())

    @classmethod
    def read_back(cls, head: bytes, tail: bytes, size: int) -> Prefix:
        """The prefix of a file's first `size` bytes from their two ends as read from storage:
        `head` the first min(size, SPAN), `tail` the min(size, SPAN) before `size` (where the
        file no longer has them all, the fewer bytes make another fingerprint)."""
        prefix = cls()
        prefix.size, prefix._head, prefix._tail = size, head, tail
        return prefix

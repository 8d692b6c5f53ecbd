"""Opening a file whose path a user gave (a rules file, an event log, a pipeline spec) without
ever blocking on it.

`open()` of a FIFO waits until something writes to it, and a device may never end: a rules file
replaced by a FIFO once hung the alert evaluator for good. So the path is opened non-blocking
and the open descriptor itself is checked (not the path, which may change between a check and
the open): anything but a regular file is refused, saying what it is.

The API::

    open_regular(path) -> BinaryIO      # a regular file, open for reading
    regular_size(path) -> int           # its size, without opening it
    NotRegularFile (an OSError): `path`, `kind` ("a FIFO", ...), `reason`
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class NotRegularFile(OSError):
    """A path that names something other than a regular file: a FIFO, a device, a socket, a
    directory. `reason` says what it is, for messages that name the path their own way."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        self.path, self.kind = os.fspath(path), kind
        self.reason = f"is {kind}, not a regular file"
        super().__init__(f"{self.path}: {self.reason}")


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """`path` open for reading in binary, if it is a regular file (symbolic links followed);
    NotRegularFile otherwise, or the OSError of the open."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        if error.errno == errno.ENXIO:  # a socket, or a device without its driver: say which
            regular_size(path)
        raise
    try:
        _check(path, os.fstat(descriptor).st_mode)
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def regular_size(path: str | os.PathLike[str]) -> int:
    """The size of the regular file at `path`; NotRegularFile for anything else."""
    status = os.stat(path)
    _check(path, status.st_mode)
    return status.st_size


def _check(path: str | os.PathLike[str], mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    raise NotRegularFile(path, kind)

"""Find Spark's event log files by Spark's own naming, on any file system fsspec knows.

Spark writes one application's log in one of two layouts (``spark.eventLog.rolling.enabled``)::

    <dir>/<app>[.<codec>][.inprogress]                 a single file, renamed at the end
    <dir>/eventlog_v2_<app>/events_<N>_<app>[.<codec>][.compact]
    <dir>/eventlog_v2_<app>/appstatus_<app>[.inprogress]   rolling: empty status file

``<app>`` is the application id, with ``_<attemptId>`` when there is an attempt; Spark
sanitizes it (no dots), so the first dot starts the suffixes. ``<codec>`` is one of Spark's
short names (``zstd``, ``lz4``, ``snappy``, ``lzf``); no suffix means uncompressed. The
history server's compaction replaces ``events_1..N-1`` with ``events_N_<app>.compact``.

The API::

    discover(url: str, errors: list[LogError] | None = None) -> list[Application]
    Application(app_id, url, rolling, in_progress, files: tuple[LogFile, ...])
    LogFile(url, key, codec, index, compacted, complete)
    LogError(url, reason, line=None); its subclasses LogEndsShort, LogRewritten
    size_of(fs, path, url) -> int; read_range(fs, path, url, start, end) -> bytes

``url`` may be a local path or any fsspec URL (``file://``, ``s3://``, ``hdfs://``); S3's
endpoint and credentials come from the standard AWS environment (``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``, ...). A ``LogFile.key`` is its URL without ``.inprogress``: it stays
the same when Spark renames a finished single file, so a stored read position carries over.
A local file is read only if it is a regular file: a FIFO or a device named like a log is
refused (a LogError saying what it is), never waited on.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from monitor.regular_files import NotRegularFile, open_regular, regular_size

log = logging.getLogger(__name__)

IN_PROGRESS = ".inprogress"
COMPACTED = ".compact"
ROLLING_DIR_PREFIX = "eventlog_v2_"
EVENTS_PREFIX = "events_"
APPSTATUS_PREFIX = "appstatus_"
# The short names Spark puts in a log's name (CompressionCodec's table of short names).
SPARK_CODECS = frozenset({"zstd", "lz4", "snappy", "lzf"})

_EVENTS_FILE = re.compile(r"events_(?P<index>\d+)_(?P<app>[^.]+)(?:\.(?P<codec>[^.]+))?")
# Application ids of Spark's cluster managers: local, standalone, YARN, Kubernetes. A file
# without a codec suffix is taken for a log only with such a name; anything else is unrelated.
_APP_ID = re.compile(
    r"(local-\d+|app-\d+-\d+|application_\d+_\d+|spark-[0-9a-z]+)(_[A-Za-z0-9-]+)?"
)


class LogError(Exception):
    """A log that cannot be read: its URL, the line where known, and why."""

    def __init__(self, url: str, reason: str, line: int | None = None) -> None:
        self.url = url
        self.reason = reason
        self.line = line
        where = url if line is None else f"{url}:{line}"
        super().__init__(f"{where}: {reason}")


class LogEndsShort(LogError):
    """A complete file that ends inside its last line or compressed frame, at `size` bytes:
    truncated, or still being copied in."""

    def __init__(self, url: str, reason: str, line: int, size: int) -> None:
        super().__init__(url, reason, line)
        self.size = size


class LogRewritten(LogError):
    """A file that no longer holds what was read from it: truncated and written again, or
    replaced by another under its name. It is to be read again from its start."""


@dataclass(frozen=True)
class LogFile:
    """One file of an application's event log.

    ``key`` is stable across the ``.inprogress`` rename; ``codec`` is the name's codec suffix
    (None: uncompressed); ``index`` orders a rolling log's files (0 for a single file);
    ``complete`` says Spark will write no more to it (a later file exists or the app ended).
    """

    url: str
    key: str
    codec: str | None
    index: int
    compacted: bool
    complete: bool

    @property
    def name(self) -> str:
        """The file's name, without its directory."""
        return basename(self.url)


@dataclass(frozen=True)
class Application:
    """One application attempt's event log: a single file or a rolling directory."""

    app_id: str
    url: str
    rolling: bool
    in_progress: bool
    files: tuple[LogFile, ...]


def basename(path: str) -> str:
    """The last part of a path or URL."""
    return path.rstrip("/").rsplit("/", 1)[-1]


def key_of(url: str) -> str:
    """A file's stable key: its URL without the ``.inprogress`` suffix."""
    return url.removesuffix(IN_PROGRESS)


def split_single_name(name: str) -> tuple[str, str | None, bool] | None:
    """A single log file's (app id, codec, in progress), or None when it is not one."""
    in_progress = name.endswith(IN_PROGRESS)
    app, dot, codec = name.removesuffix(IN_PROGRESS).partition(".")
    if not app or app[0] in "._" or "." in codec or (dot and not codec):
        return None
    return app, codec or None, in_progress


def is_single_log_name(name: str) -> bool:
    """Whether a name in a history directory is a single-file event log.

    It is one with a Spark codec suffix, or without a suffix when its name is an
    application id; other names (README, notes.txt, .crc files) are unrelated.
    """
    parts = split_single_name(name)
    if parts is None:
        return False
    app, codec, _ = parts
    return codec in SPARK_CODECS if codec else _APP_ID.fullmatch(app) is not None


def filesystem(url: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """The file system and path of a URL or local path, or a LogError."""
    try:
        return fsspec.core.url_to_fs(url)
    except (ImportError, ValueError, OSError) as error:
        raise LogError(url, f"no file system for this URL: {error}") from error


def size_of(fs: fsspec.AbstractFileSystem, path: str, url: str) -> int:
    """The size of a file now (never a cached one), or a LogError."""
    try:
        fs.invalidate_cache(path)
        size = regular_size(path) if isinstance(fs, LocalFileSystem) else fs.size(path)
    except NotRegularFile as error:
        raise LogError(url, error.reason) from error
    except FileNotFoundError as error:
        raise LogError(url, "vanished: the file no longer exists") from error
    except OSError as error:
        raise LogError(url, f"cannot be read: {error}") from error
    if size is None:
        raise LogError(url, "cannot be read: its file system gives no size")
    return int(size)


def read_range(fs: fsspec.AbstractFileSystem, path: str, url: str, start: int, end: int) -> bytes:
    """The bytes of a file from `start` up to `end` (fewer where it ends), or a LogError."""
    try:
        if not isinstance(fs, LocalFileSystem):
            return bytes(fs.cat_file(path, start=start, end=end))
        with open_regular(path) as file:
            file.seek(start)
            return file.read(max(end - start, 0))
    except NotRegularFile as error:
        raise LogError(url, error.reason) from error
    except FileNotFoundError as error:
        raise LogError(url, "vanished: the file no longer exists") from error
    except OSError as error:
        raise LogError(url, f"cannot be read: {error}") from error


def discover(url: str, errors: list[LogError] | None = None) -> list[Application]:
    """The applications at a URL: a single log file, a rolling log directory, or a
    history directory of many (any other file in it is ignored).

    A log directory that cannot be listed inside a history directory does not stop the
    others: its LogError is appended to ``errors`` (logged when no list is given). The
    URL itself missing or unreadable raises LogError.
    """
    fs, path = filesystem(url)
    fs.invalidate_cache(path)
    info = _info(fs, path)
    if info["type"] != "directory":
        return [_single_application(fs, [path])]
    if basename(path).startswith(ROLLING_DIR_PREFIX):
        return [_rolling_application(fs, path)]
    return _history_applications(fs, path, errors)


def _info(fs: fsspec.AbstractFileSystem, path: str) -> dict[str, Any]:
    try:
        return fs.info(path)
    except FileNotFoundError as error:
        raise LogError(fs.unstrip_protocol(path), "not found") from error
    except OSError as error:
        raise LogError(fs.unstrip_protocol(path), f"cannot be read: {error}") from error


def _names(fs: fsspec.AbstractFileSystem, path: str) -> list[str]:
    """The paths in a directory, names only (no per-entry stat, one listing on S3)."""
    try:
        return sorted(fs.ls(path, detail=False))
    except OSError as error:
        raise LogError(fs.unstrip_protocol(path), f"cannot be listed: {error}") from error


def _history_applications(
    fs: fsspec.AbstractFileSystem, path: str, errors: list[LogError] | None
) -> list[Application]:
    applications = []
    singles: dict[str, list[str]] = {}
    for entry in _names(fs, path):
        name = basename(entry)
        if name.startswith(ROLLING_DIR_PREFIX):
            try:
                applications.append(_rolling_application(fs, entry))
            except LogError as error:
                _report(error, errors)
        elif is_single_log_name(name):
            singles.setdefault(key_of(entry), []).append(entry)
    applications.extend(_single_application(fs, paths) for paths in singles.values())
    return sorted(applications, key=lambda application: application.url)


def _report(error: LogError, errors: list[LogError] | None) -> None:
    if errors is None:
        log.warning("%s", error)
    else:
        errors.append(error)


def _single_application(fs: fsspec.AbstractFileSystem, paths: list[str]) -> Application:
    """A single-file log; of ``x.inprogress`` and ``x`` both present (a rename that is a
    copy then a delete, as on S3), the finished ``x``."""
    path = min(paths, key=lambda p: p.endswith(IN_PROGRESS))
    url = fs.unstrip_protocol(path)
    parts = split_single_name(basename(path))
    app_id, codec, in_progress = parts if parts else (basename(path), None, False)
    file = LogFile(url, key_of(url), codec, 0, False, complete=not in_progress)
    return Application(app_id, url, False, in_progress, (file,))


def _rolling_application(fs: fsspec.AbstractFileSystem, path: str) -> Application:
    names = [basename(entry) for entry in _names(fs, path)]
    statuses = [name for name in names if name.startswith(APPSTATUS_PREFIX)]
    # A directory without its status file yet is being created: in progress.
    in_progress = not any(not name.endswith(IN_PROGRESS) for name in statuses)
    found = [(name, match) for name in names if (match := _events_match(name))]
    found.sort(key=lambda item: int(item[1]["index"]))
    found = _from_last_compacted(found)
    files = []
    for position, (name, match) in enumerate(found):
        url = fs.unstrip_protocol(f"{path.rstrip('/')}/{name}")
        last = position == len(found) - 1
        complete = not (last and in_progress)
        compacted = name.endswith(COMPACTED)
        files.append(LogFile(url, url, match["codec"], int(match["index"]), compacted, complete))
    app_id = basename(path).removeprefix(ROLLING_DIR_PREFIX)
    return Application(app_id, fs.unstrip_protocol(path), True, in_progress, tuple(files))


def _events_match(name: str) -> re.Match[str] | None:
    if not name.startswith(EVENTS_PREFIX):
        return None
    return _EVENTS_FILE.fullmatch(name.removesuffix(COMPACTED))


def _from_last_compacted(found: list[tuple[str, re.Match[str]]]) -> list[tuple[str, re.Match[str]]]:
    """The files from the last compacted one on: it holds what the earlier ones held (as
    Spark's own reader does; the earlier files are deleted after compaction)."""
    compacted = [i for i, (name, _) in enumerate(found) if name.endswith(COMPACTED)]
    return found[compacted[-1] :] if compacted else found

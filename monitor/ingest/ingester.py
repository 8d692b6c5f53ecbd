"""Spark's event logs into the store, exactly once: the third way in, from outside the job.

Every file is read from where the store says it was read up to; the events of each group of
lines are stored in the same transaction as the position after them, so a killed and
restarted ingest neither skips nor repeats a line. Times come from the log itself: a terminated
event, which carries none, happened at the log's clock, the latest time its events had shown.
A run the log shows running when its application ends ends with it (Spark logs no end for it);
which runs an application's log showed is kept in the store, so that holds for a new ingest
process too.

A file is known by its content: its position is stored with a fingerprint of what was read
(ingest.fingerprint). One rewritten since (truncated and written again, or replaced under its
name by another) is said to be so, on a line naming it and why, and read again from its start;
what its new content repeats of what was stored is a repeat to the write path, stored once.

A line that is not JSON is reported with its file and line and skipped; a Spark event that
cannot be read, or that the store refuses, is reported and set aside (`wmon rejected`) in the
transaction of its group; a file that cannot be read is reported and left; none of them stops
the other files and applications.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.collect.progress import ProgressError
from monitor.collect.spark_events import (
    TERMINATED,
    event_time_ms,
    named,
    spark_event,
    timestamp_text,
)
from monitor.collect.writer import TRANSIENT_ERRORS
from monitor.events import BatchProgress, Event, QueryIdle, QueryStarted, QueryTerminated
from monitor.health.predicates import Timeouts
from monitor.ingest.fingerprint import Fingerprint
from monitor.ingest.logfiles import (
    Application,
    LogEndsShort,
    LogError,
    LogFile,
    LogRewritten,
    discover,
    filesystem,
    size_of,
)
from monitor.ingest.reader import LogLine, LogReader, Position
from monitor.store.schema.engine import error_reason
from monitor.store.schema.models import LogPosition
from monitor.store.write.positions import (
    ReadPosition,
    running_runs,
    save_position,
    stored_positions,
)
from monitor.store.write.rejected import set_aside
from monitor.store.write.writes import Written, write_events

log = logging.getLogger(__name__)

# Lines stored per transaction: a position is saved this often while a file is read.
LINES_PER_WRITE = 1_000
APPLICATION_END = "SparkListenerApplicationEnd"
# How long a file found ending short while following may stay so before it is reported.
SHORT_GRACE_S = 10.0
# Spark logs no end of a query whose application stops under it (spark.stop() without
# query.stop(), a killed driver): its run ends with the application, failed, saying so.
UNSTOPPED = "the Spark application ended while this run was active; Spark logged no end of it"


@dataclass
class Totals:
    """What an ingest has done so far."""

    applications: int = 0
    files: int = 0
    lines: int = 0
    events: int = 0
    bytes_read: int = 0
    problems: int = 0
    # Files found rewritten and read again from their start.
    rewritten: int = 0


@dataclass
class _AppState:
    """One application being read: its log clock and the readers of its files by key."""

    application: Application
    clock_ms: int | None
    readers: dict[str, LogReader] = field(default_factory=dict)
    finished: set[str] = field(default_factory=set)
    read_before: bool = False
    # The runs this log started (or showed running) and has not ended: run id -> query id.
    running: dict[str, str] = field(default_factory=dict)

    def track(self, event: Event) -> None:
        """Follow which runs of the log are running."""
        if isinstance(event, QueryTerminated):
            self.running.pop(event.run_id, None)
        elif isinstance(event, (QueryStarted, QueryIdle, BatchProgress)):
            self.running[event.run_id] = event.query_id

    def ended(self, at_ms: int) -> list[QueryTerminated]:
        """The ends of the runs still running when the application ended at `at_ms`."""
        ends = [
            QueryTerminated(query_id, run_id, at_ms, exception=UNSTOPPED)
            for run_id, query_id in self.running.items()
        ]
        self.running.clear()
        return ends


class Ingester:
    """Reads the event logs at `urls` into the store on `engine`; call `step` once for a
    backfill, again and again to follow (`following`). `report` gets each problem in one line.

    While following, a complete file that ends inside a line or frame may be one still being
    copied in (an application's directory copied into the history folder): it is read again
    from its stored position at the next step, and reported and left only if it has not grown.
    """

    def __init__(
        self,
        engine: sa.Engine,
        urls: Iterable[str],
        timeouts: Timeouts,
        report: Callable[[str], None] = log.warning,
        max_backoff: float = 5.0,
        following: bool = False,
    ) -> None:
        self._engine, self._urls, self._timeouts = engine, list(urls), timeouts
        self._report, self._max_backoff, self._following = report, max_backoff, following
        self._apps: dict[str, _AppState] = {}
        self._broken: set[str] = set()
        self._short: dict[str, _Short] = {}
        self._counted: set[str] = set()
        self.totals = Totals()

    def discover(self) -> list[Application]:
        """Find the applications at every URL now (new ones, new files, renamed ones)."""
        found: list[Application] = []
        for url in self._urls:
            errors: list[LogError] = []
            try:
                found += discover(url, errors)
            except LogError as unreadable:
                errors.append(unreadable)
            for error in errors:
                self._problem(str(error))
        for application in found:
            state = self._apps.get(application.url)
            if state is None:
                self._apps[application.url] = self._start(application)
            else:
                state.application = application
        self.totals.applications = len(self._apps)
        return found

    def step(self, on_application: Callable[[Application, int, int], None] | None = None) -> int:
        """Discover, then read every application's new lines into the store; the number of
        lines read. `on_application(application, number, of)` follows each one's turn."""
        before = self.totals.lines
        found = self.discover()
        for number, application in enumerate(found, 1):
            self._read_application(self._apps[application.url])
            if on_application is not None:
                on_application(application, number, len(found))
        return self.totals.lines - before

    def _start(self, application: Application) -> _AppState:
        """An application's state from the positions stored for its files."""
        with so.Session(self._engine) as session:
            clocks = session.execute(
                sa.select(sa.func.count(), sa.func.max(LogPosition.clock_ms)).where(
                    LogPosition.app_id == application.app_id
                )
            ).one()
        state = _AppState(application, clocks[1], read_before=clocks[0] > 0)
        if state.read_before:
            state.running = running_runs(self._engine, application.app_id)
        return state

    def _read_application(self, state: _AppState) -> None:
        """Read each file in order; a file still being written ends the application's turn."""
        done = state.finished | self._broken
        files = [file for file in state.application.files if file.key not in done]
        positions = stored_positions(self._engine, [file.key for file in files]) if files else {}
        for file in files:
            if file.key in self._short and not self._grown(file):
                return
            if file.compacted and state.read_before and file.key not in positions:
                self._problem(
                    f"{file.url}: skipped: the history server compacted files this ingest had"
                    " already read from"
                )
                state.finished.add(file.key)
                continue
            reader = self._reader(state, file, positions.get(file.key))
            if reader is None or not self._read_file(state, reader):
                return
            state.finished.add(file.key)

    def _reader(
        self, state: _AppState, file: LogFile, stored: ReadPosition | None
    ) -> LogReader | None:
        reader = state.readers.get(file.key)
        try:
            if reader is None:
                start, known = _resumed(stored)
                reader = state.readers[file.key] = LogReader(file, start, fingerprint=known)
                if file.key not in self._counted:
                    self._counted.add(file.key)
                    self.totals.files += 1
            else:
                reader.relocate(file)
        except LogError as error:
            self._give_up(file.key, str(error))
            return None
        return reader

    def _read_file(self, state: _AppState, reader: LogReader) -> bool:
        """Read the file's new lines into the store; whether it is wholly read."""
        while True:
            bytes_before = reader.bytes_read
            try:
                lines = reader.read(LINES_PER_WRITE)
            except LogRewritten as error:
                return self._read_file(state, self._read_again(state, reader, error))
            except LogEndsShort as error:
                if not self._following:
                    self._give_up(reader.file.key, str(error))
                    return True
                self._short[reader.file.key] = _Short(error, time.monotonic())
                del state.readers[reader.file.key]
                return False
            except LogError as error:
                self._give_up(reader.file.key, str(error))
                # A broken file of a rolling log must not hold back the files after it.
                return reader.file.complete
            finally:
                self.totals.bytes_read += reader.bytes_read - bytes_before
            if not lines:
                return reader.done
            self._store_lines(state, reader, lines)

    def _read_again(self, state: _AppState, reader: LogReader, error: LogRewritten) -> LogReader:
        """A new reader of a rewritten file from its start, saying so. The log's clock goes
        back to what the application's other files showed; the runs it showed running stay
        (the application's end, if it comes, ends them)."""
        file = reader.file
        self.totals.rewritten += 1
        self._report(f"{error}; reading it again from its start")
        with so.Session(self._engine) as session:
            state.clock_ms = session.scalar(
                sa.select(sa.func.max(LogPosition.clock_ms)).where(
                    LogPosition.app_id == state.application.app_id, LogPosition.key != file.key
                )
            )
        state.readers[file.key] = LogReader(file)
        return state.readers[file.key]

    def _store_lines(self, state: _AppState, reader: LogReader, lines: list[LogLine]) -> None:
        """Turn the lines into events and store them with the position after the last one;
        the lines refused are set aside with it."""
        file = reader.file
        numbered: list[_Read] = []
        refused: list[_Refused] = []
        for line in lines:
            for event, doc in self._events(state, file, line, refused):
                state.track(event)
                numbered.append(_Read(line.number, event, doc))
        end, known = lines[-1].end, reader.fingerprint
        position = ReadPosition(
            file.key,
            file.url,
            state.application.app_id,
            end.offset,
            end.line,
            state.clock_ms,
            known.size,
            known.digest,
        )
        self._write(position, file, numbered, refused)
        self.totals.lines += len(lines)
        self.totals.events += len(numbered)

    def _events(
        self, state: _AppState, file: LogFile, line: LogLine, refused: list[_Refused]
    ) -> list[tuple[Event, Any]]:
        """The line's events with the document each came from: its own, if it is one of ours,
        or at the application's end the ends of the runs Spark left running. A line that is
        not JSON is reported and skipped; an event that cannot be read is set aside too."""
        try:
            doc = json.loads(line.text)
        except (ValueError, RecursionError) as error:
            self._problem(f"{file.url}:{line.number}: skipped: not JSON ({error})")
            return []
        try:
            event = spark_event(doc, state.clock_ms)
        except ProgressError as error:
            self._problem(f"{file.url}:{line.number}: set aside: {error}")
            refused.append(_Refused(f"{file.url}:{line.number}", doc, str(error)))
            return []
        moment = event_time_ms(doc)
        if moment is not None and (state.clock_ms is None or moment > state.clock_ms):
            state.clock_ms = moment
        if doc.get("Event") == APPLICATION_END and state.clock_ms is not None:
            return [(end, named(TERMINATED, _document(end))) for end in state.ended(state.clock_ms)]
        return [] if event is None else [(event, doc)]

    def _write(
        self,
        position: ReadPosition,
        file: LogFile,
        numbered: list[_Read],
        refused: list[_Refused],
    ) -> None:
        """Store events and position (with the runs they belong to, and the lines refused)
        together; if the store rejects the group, each event alone, so one it cannot hold is
        set aside and the rest are kept."""
        events = [read.event for read in numbered]
        runs = {event.run_id for event in events}
        error = self._retrying(events, position, runs, refused)
        if error is None:
            return
        for read in numbered:
            reason = self._retrying([read.event], None)
            if reason is not None:
                self._problem(f"{file.url}:{read.line}: set aside: {error_reason(reason)}")
                refused.append(_Refused(f"{file.url}:{read.line}", read.doc, error_reason(reason)))
        self._retrying([], position, runs, refused)

    def _retrying(
        self,
        events: list[Event],
        position: ReadPosition | None,
        runs: Iterable[str] = (),
        refused: Sequence[_Refused] = (),
    ) -> Exception | None:
        """Write, waiting out a store that is unavailable; the error if it rejects them."""
        backoff, waiting = 0.05, False
        also = None if position is None else _saving(position, runs, refused)
        while True:
            try:
                write_events(self._engine, events, self._timeouts, also=also)
                return None
            except TRANSIENT_ERRORS as error:
                if not waiting:
                    self._report(f"store unavailable, retrying: {error_reason(error)}")
                waiting = True
            except Exception as error:
                return error
            time.sleep(backoff)
            backoff = min(backoff * 2, self._max_backoff)

    def _grown(self, file: LogFile) -> bool:
        """Whether a file found ending short has changed size since: then it is read again.
        One that stays the same for SHORT_GRACE_S is reported, once."""
        short = self._short[file.key]
        try:
            size = size_of(*filesystem(file.url), file.url)
        except LogError as error:
            del self._short[file.key]
            self._give_up(file.key, str(error))
            return False
        if size != short.error.size:
            del self._short[file.key]
            return True
        if not short.reported and time.monotonic() - short.since >= SHORT_GRACE_S:
            short.reported = True
            self._problem(
                f"{short.error} (waited {SHORT_GRACE_S:g} s for the rest; read again if it grows)"
            )
        return False

    def _give_up(self, key: str, message: str) -> None:
        """A file that cannot be read: reported once, then left alone."""
        self._broken.add(key)
        self._problem(f"{message} (file skipped)")

    def _problem(self, message: str) -> None:
        self.totals.problems += 1
        self._report(message)


@dataclass
class _Short:
    """A complete file found ending short while following, and since when."""

    error: LogEndsShort
    since: float
    reported: bool = False


@dataclass(frozen=True)
class _Read:
    """An event read from a line of a log, with the document it came from."""

    line: int
    event: Event
    doc: Any


@dataclass(frozen=True)
class _Refused:
    """A line's event refused: where it was, its document, why."""

    origin: str
    doc: Any
    error: str


def _resumed(stored: ReadPosition | None) -> tuple[Position, Fingerprint | None]:
    """Where a file's reading resumes, and the fingerprint of what was read before it."""
    if stored is None:
        return Position(), None
    known = None
    if stored.fingerprint_bytes is not None and stored.fingerprint is not None:
        known = Fingerprint(stored.fingerprint_bytes, stored.fingerprint)
    return Position(stored.bytes_read, stored.lines_read), known


def _document(end: QueryTerminated) -> dict[str, Any]:
    """The JSON of Spark's terminated event for a run ended with its application."""
    return {
        "id": end.query_id,
        "runId": end.run_id,
        "timestamp": timestamp_text(end.timestamp_ms),
        "exception": end.exception,
    }


def _saving(
    position: ReadPosition, runs: Iterable[str], refused: Sequence[_Refused]
) -> Callable[[so.Session, Written], None]:
    """What is stored with a group's events: the position, its runs, the lines refused."""

    def save(session: so.Session, _written: Written) -> None:
        save_position(session, position, runs)
        now_ms = time.time_ns() // 1_000_000
        for line in refused:
            set_aside(session, now_ms, line.origin, [(line.doc, line.error)])

    return save

"""Exactly once, modelled: random sequences of deliveries against both stores, each step
checked against a model of what the store must then hold.

What is modelled: two queries, each a succession of runs ("q1-r1", "q1-r2", ...), each run
beginning well after the one before (further apart than store.lineage's CLOCK_SKEW_MS, so
the store orders them by their clocks). A run reports batches with ids counting up from where
it began; a batch reads offsets 10 * id to 10 * id + 10 of two partitions, and its watermark
and late records are functions of its id too, so a batch id read again by a later run reads
what it read before. The steps: a run's next batch, delivered, or held back and delivered
later, out of order; an identical replay of a delivered batch; a restart, a new run going on
after the last batch, re-running it (Spark's restart after a crash) or rewinding one or three
batches (a restore from an older checkpoint), its first batch delivered or held back; each
run's start and end, delivered, held back or replayed like its batches; a poison
event (a partition name past what the store keeps, a progress without batchId, a document
that is not an object), alone or in a group; a group of these at once; and two groups of one
query from two threads on two engines, the second arriving while the first holds the query's
turn. Events go through the collector's own path (monitor.collect.accept, Spark's JSON) or the
in-process writer's (write_events; it is never sent poison).

The model (`Lineage.deliver`) says: a batch is stale if a run that began later has reported a
batch at or below it; otherwise it is stored in place of what older runs stored from its id
on (superseded: the only way a batch leaves the store), and flagged rewound (its watermark and
partitions) when the newest batch it supersedes is above it, as it then starts before where
that one started. A query is the newest run the store knows the start of by a start or a batch
(the run of the first event it heard, until then), ended if that run's end has come, whatever
came after it. One query's driver keeps a clock three years behind the other's, and a prune
by the default retention may run between any two steps. After every step the store must hold
exactly the model's batches, each once, from the newest run that reported it, with its two
partitions, its late records counted once in the running totals, only the modelled rewinds
flagged, and each poison event set aside once, and each query its run and end; and each write
must say what the model says became of its events (a replayed start or end is unchanged, like
a replayed batch). Not modelled: runs
that began within the clock skew of each other, ordered by when the store first heard of them.
Every example starts on a fresh store.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from monitor.collect.accept import accept
from monitor.collect.spark_events import (
    PROGRESS,
    STARTED,
    TERMINATED,
    named,
    spark_event,
    timestamp_text,
)
from monitor.health.predicates import Timeouts
from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import Batch, Query, RejectedEvent
from monitor.store.tiers.prune import Retention, prune
from monitor.store.write.lineage import CLOCK_SKEW_MS
from monitor.store.write.writes import write_events
from tests.support.progress import fixture_progress, operator_observation
from tests.support.stores import emptied, stored_event_times, stored_partitions

QUERY_IDS = ("q1", "q2")
PARTITIONS = (0, 1)
T0 = 1_795_316_400_000  # 2026-11-22T03:00:00Z
NOW_MS = T0
# Where each query's driver clock begins: q2's runs three years behind (a driver whose clock
# is wrong must cost nothing but its own times).
CLOCKS = {"q1": T0, "q2": T0 - 3 * 365 * 86_400_000}
TIMEOUTS = Timeouts()
# A restart begins this long after the run before: far enough apart that the store orders the
# runs by their clocks, not by when it first heard of each (store.lineage).
RESTART_AFTER_MS = 2 * CLOCK_SKEW_MS
# No explain phase: it traces every line the store runs, and takes minutes to explain a failure.
SETTINGS = settings(
    max_examples=40,
    stateful_step_count=20,
    deadline=None,
    database=None,
    phases=(Phase.explicit, Phase.generate, Phase.shrink),
    report_multiple_bugs=False,
)


def late_records(batch_id: int, partition: int) -> int:
    """Late records a batch read from `partition`: the same whichever run read it."""
    return (batch_id + partition) % 3


@dataclasses.dataclass(frozen=True)
class Report:
    """A progress event: batch `batch_id` of one run of a query, ended at `at_ms`."""

    query_id: str
    run_id: str
    batch_id: int
    at_ms: int

    def document(self) -> dict[str, Any]:
        """The event in Spark's JSON, as the collector is posted it."""
        return named(PROGRESS, {"progress": self.progress()})

    def progress(self) -> dict[str, Any]:
        """The progress document: offsets, watermark and figures from the batch id alone."""
        start, end = 10 * self.batch_id, 10 * self.batch_id + 10
        partitions = {
            f"t/{p}": {
                "records": 10,
                "min_ms": T0,
                "max_ms": T0 + self.batch_id,
                "late": late_records(self.batch_id, p),
                "samples": [],
            }
            for p in PARTITIONS
        }
        return fixture_progress(
            self.query_id,
            self.batch_id,
            self.run_id,
            timestamp=timestamp_text(self.at_ms),
            eventTime={"watermark": timestamp_text(T0 + 1_000 * self.batch_id)},
            sources=[
                {
                    "description": "KafkaV2[Subscribe[t]]",
                    "startOffset": {"t": {str(p): start for p in PARTITIONS}},
                    "endOffset": {"t": {str(p): end for p in PARTITIONS}},
                    "latestOffset": {"t": {str(p): end + 5 for p in PARTITIONS}},
                    "numInputRows": 10 * len(PARTITIONS),
                }
            ],
            observedMetrics=operator_observation(self.batch_id, partitions, 1_000, T0),
        )


@dataclasses.dataclass(frozen=True)
class Start:
    """A run's start, at `at_ms`."""

    query_id: str
    run_id: str
    at_ms: int

    def document(self) -> dict[str, Any]:
        doc = {"id": self.query_id, "runId": self.run_id, "name": self.query_id}
        return named(STARTED, doc | {"timestamp": timestamp_text(self.at_ms)})


@dataclasses.dataclass(frozen=True)
class End:
    """A run's end, at `at_ms`."""

    query_id: str
    run_id: str
    at_ms: int

    def document(self) -> dict[str, Any]:
        doc = {"id": self.query_id, "runId": self.run_id, "exception": None}
        return named(TERMINATED, doc | {"timestamp": timestamp_text(self.at_ms)})


Lifecycle = Start | End


def _long_partition(report: Report, serial: int) -> Any:
    progress = report.progress()
    progress["sources"][0]["endOffset"] = {f"{serial}" + "t" * 501: {"0": 5}}
    return named(PROGRESS, {"progress": progress})


def _without_batch_id(report: Report, serial: int) -> Any:
    progress = report.progress() | {"name": f"poison {serial}"}
    del progress["batchId"]
    return named(PROGRESS, {"progress": progress})


def _not_an_object(report: Report, serial: int) -> Any:
    return [f"poison {serial}", report.query_id]


# Each poison: how to make one (unique by its serial) from a query's next report, and what
# the reason it is set aside with says.
POISONS: dict[str, tuple[Callable[[Report, int], Any], str]] = {
    "partition name past 500 characters": (_long_partition, "longer than 500 characters"),
    "progress without batchId": (_without_batch_id, "batchId"),
    "not a JSON object": (_not_an_object, "JSON object"),
}

# How a restart's new run begins, as a step from the old run's last batch.
RESTARTS = {
    "goes on after the last batch": 1,
    "re-runs the last batch": 0,
    "rewinds one batch": -1,
    "rewinds three batches": -3,
}


@dataclasses.dataclass(frozen=True)
class Poison:
    """An event the collector must set aside."""

    kind: str
    document: Any


Item = Report | Lifecycle | Poison


@dataclasses.dataclass
class Tally:
    """What a write says became of a group: stored, unchanged (repeats, stale), refused."""

    stored: int = 0
    unchanged: int = 0
    refused: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Lineage:
    """The model of one query: its runs in the order they began, what each reported, what
    is held back, and what the store must hold (batch id -> run) and flag rewound."""

    query_id: str
    runs: list[str] = dataclasses.field(default_factory=list)
    next_batch: int = 0
    clock_ms: int = T0
    held: list[Report | Lifecycle] = dataclasses.field(default_factory=list)
    delivered: list[Report | Lifecycle] = dataclasses.field(default_factory=list)
    firsts: dict[str, int] = dataclasses.field(default_factory=dict)
    stored: dict[int, str] = dataclasses.field(default_factory=dict)
    rewound: set[int] = dataclasses.field(default_factory=set)
    # The first run's start until it is made; runs whose start the store knows by a start or
    # a batch; the run of the first event it heard of the query; the delivered ends by run;
    # the runs given an end.
    first_start: Start | None = None
    known: set[str] = dataclasses.field(default_factory=set)
    first_heard: str | None = None
    ended: dict[str, int] = dataclasses.field(default_factory=dict)
    over: set[str] = dataclasses.field(default_factory=set)

    def __post_init__(self) -> None:
        self.clock_ms = CLOCKS[self.query_id]
        self.runs.append(f"{self.query_id}-r1")
        self.first_start = self.start()

    def start(self) -> Start:
        """The current run's start."""
        return Start(self.query_id, self.runs[-1], self.clock_ms)

    def end(self) -> End | None:
        """The current run's end, once (None if it has one)."""
        run = self.runs[-1]
        if run in self.over:
            return None
        self.over.add(run)
        self.clock_ms += 500
        return End(self.query_id, run, self.clock_ms)

    def deliver_lifecycle(self, event: Lifecycle) -> str:
        """Apply a delivered start or end: 'stored' the first time, else 'repeated'."""
        self.first_heard = self.first_heard or event.run_id
        repeated = event in self.delivered
        self.delivered.append(event)
        if isinstance(event, Start):
            self.known.add(event.run_id)
        elif not repeated:
            self.ended[event.run_id] = event.at_ms
        return "repeated" if repeated else "stored"

    def state(self) -> tuple[str, str, int | None] | None:
        """The query as the store must show it: its run and when that run ended (None while
        it runs); None before anything of it was delivered."""
        if self.first_heard is None:
            return None
        current = max(self.known, key=self.runs.index) if self.known else self.first_heard
        return (self.query_id, current, self.ended.get(current))

    def upcoming(self) -> Report:
        """The current run's next batch, not yet generated."""
        return Report(self.query_id, self.runs[-1], self.next_batch, self.clock_ms + 1_000)

    def generate(self) -> Report:
        """The current run's next batch."""
        report = self.upcoming()
        self.next_batch, self.clock_ms = report.batch_id + 1, report.at_ms
        return report

    def restart(self, step: int) -> Report:
        """A new run, from `step` past the last run's last batch: its start and first batch."""
        self.runs.append(f"{self.query_id}-r{len(self.runs) + 1}")
        self.next_batch = max(0, self.next_batch - 1 + step)
        self.clock_ms += RESTART_AFTER_MS
        return self.start(), self.generate()

    def deliver(self, report: Report) -> str:
        """Apply a delivered batch: 'stored', 'repeated' or 'stale'."""
        self.first_heard = self.first_heard or report.run_id
        self.known.add(report.run_id)
        age = self.runs.index(report.run_id)
        newer_firsts = [first for run, first in self.firsts.items() if self.runs.index(run) > age]
        self.firsts[report.run_id] = min(
            self.firsts.get(report.run_id, report.batch_id), report.batch_id
        )
        self.delivered.append(report)
        if any(first <= report.batch_id for first in newer_firsts):
            return "stale"
        if self.stored.get(report.batch_id) == report.run_id:
            return "repeated"
        superseded = [
            batch_id
            for batch_id, run in self.stored.items()
            if batch_id >= report.batch_id and self.runs.index(run) < age
        ]
        for batch_id in superseded:
            del self.stored[batch_id]
            self.rewound.discard(batch_id)
        if max(superseded, default=report.batch_id) > report.batch_id:
            self.rewound.add(report.batch_id)
        self.stored[report.batch_id] = report.run_id
        return "stored"


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """What the store holds, in the terms the model predicts, sorted."""

    batches: list[tuple[str, int, str]]
    partitions: list[tuple[str, int, str]]
    rewound_batches: list[tuple[str, int]]
    rewound_partitions: list[tuple[str, int, str]]
    late_totals: list[tuple[str, int, str, int]]
    set_aside: list[str]
    queries: list[tuple[str, str, int | None]]


# What each part of the snapshot checks.
INVARIANTS = {
    "batches": "each acknowledged batch is stored once, from the newest run that reported it, "
    "and none is gone but those a later run superseded",
    "partitions": "each stored batch has its partitions once",
    "rewound_batches": "a batch's watermark is flagged rewound only where the model rewound",
    "rewound_partitions": "a partition is flagged rewound only where the model rewound",
    "late_totals": "each stored batch's late records are counted once in the running totals",
    "set_aside": "each poison event is set aside once",
    "queries": "each query is its newest known run, ended if that run's end has come",
}


@dataclasses.dataclass
class Model:
    """Every query's lineage and the poison events set aside, in order."""

    lineages: dict[str, Lineage]
    set_aside: list[str] = dataclasses.field(default_factory=list)

    def apply(self, items: list[Item]) -> Tally:
        """Deliver a group; what the write must say became of it."""
        tally = Tally()
        for index, item in enumerate(items):
            if isinstance(item, Poison):
                tally.refused.append(index)
                self.set_aside.append(json.dumps(item.document, ensure_ascii=True))
                continue
            lineage = self.lineages[item.query_id]
            if isinstance(item, Report):
                became = lineage.deliver(item)
            else:
                became = lineage.deliver_lifecycle(item)
            if became == "stored":
                tally.stored += 1
            else:
                tally.unchanged += 1
        return tally

    def expected(self) -> Snapshot:
        """The snapshot the store must show."""
        rows = sorted(
            (lineage.query_id, batch_id, run, lineage)
            for lineage in self.lineages.values()
            for batch_id, run in lineage.stored.items()
        )
        names = [f"t/{p}" for p in PARTITIONS]
        rewound = [(q, b) for q, b, _, lineage in rows if b in lineage.rewound]
        return Snapshot(
            batches=[(q, b, run) for q, b, run, _ in rows],
            partitions=[(q, b, name) for q, b, _, _ in rows for name in names],
            rewound_batches=rewound,
            rewound_partitions=[(q, b, name) for q, b in rewound for name in names],
            late_totals=[
                (q, b, f"t/{p}", sum(late_records(k, p) for k in lineage.stored if k <= b))
                for q, b, _, lineage in rows
                for p in PARTITIONS
            ],
            set_aside=sorted(self.set_aside),
            queries=sorted(
                state for lineage in self.lineages.values() if (state := lineage.state())
            ),
        )


def read_store(engine: sa.Engine) -> Snapshot:
    """The store's snapshot."""
    partitions, times = stored_partitions(engine), stored_event_times(engine)
    with engine.connect() as connection:
        rows = functools.partial(_rows, connection)
        return Snapshot(
            batches=rows(Batch.query_id, Batch.batch_id, Batch.run_id),
            partitions=sorted((p.query_id, p.batch_id, p.partition) for p in partitions),
            rewound_batches=rows(Batch.query_id, Batch.batch_id, where=Batch.watermark_rewound),
            rewound_partitions=sorted(
                (p.query_id, p.batch_id, p.partition) for p in partitions if p.rewound
            ),
            late_totals=sorted(
                (t.query_id, t.batch_id, t.partition, t.late_records_total) for t in times
            ),
            set_aside=sorted(d for (d,) in rows(RejectedEvent.document)),
            queries=[
                (query_id, run_id, ended_at if status in ENDED else None)
                for query_id, run_id, status, ended_at in rows(
                    Query.id, Query.run_id, Query.status, Query.terminated_at_ms
                )
            ],
        )


ENDED = ("terminated", "failed")


def _rows(connection: sa.Connection, *columns: Any, where: Any = True) -> list[tuple[Any, ...]]:
    found = connection.execute(sa.select(*columns).where(where)).all()
    return sorted(tuple(row) for row in found)


def through_collector(engine: sa.Engine, items: list[Item]) -> Tally:
    """Post the group's documents as the collector takes them; check why poison is refused."""
    accepted = accept(engine, [_document(item) for item in items], NOW_MS, TIMEOUTS)
    for index, reason in accepted.refused:
        item = items[index]
        assert isinstance(item, Poison), f"valid event {index} refused: {reason}"
        assert POISONS[item.kind][1] in reason, reason
    return Tally(accepted.stored, accepted.unchanged, [index for index, _ in accepted.refused])


def through_writer(engine: sa.Engine, items: list[Item]) -> Tally:
    """Write the group's events as the in-process writer does (it never sees poison)."""
    events = [spark_event(_document(item), NOW_MS) for item in items]
    written = write_events(engine, [event for event in events if event is not None], TIMEOUTS)
    return Tally(written.stored, written.repeated + written.stale)


def _document(item: Item) -> Any:
    return item.document if isinstance(item, Poison) else item.document()


# What a writer runs once it holds its queries' locks (monitor.store.write.query_locks), on
# either store.
TURN_TAKEN = ("BEGIN IMMEDIATE", "pg_advisory_xact_lock")


@contextlib.contextmanager
def holding_turn(engine: sa.Engine) -> Iterator[threading.Event]:
    """An event set once a writer on `engine` has taken its turn (or has written nothing,
    taking no turn), for a second writer to arrive while the first holds it."""
    taken = threading.Event()

    def note(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if any(marker in statement for marker in TURN_TAKEN):
            taken.set()

    sa.event.listen(engine, "after_cursor_execute", note)
    try:
        yield taken
    finally:
        sa.event.remove(engine, "after_cursor_execute", note)


PATHS = {"collector": through_collector, "writer": through_writer}
paths = st.sampled_from(sorted(PATHS))
queries = st.sampled_from(QUERY_IDS)
picks = st.integers(min_value=0, max_value=7)
MOVES = ("next batch", "held batch", "replay", "poison", "end")
moves = st.lists(st.tuples(st.sampled_from(MOVES), queries, picks), min_size=2, max_size=5)
one_querys_moves = st.lists(st.tuples(st.sampled_from(MOVES), picks), min_size=2, max_size=5)


class FreshStores:
    """A new empty store for each example, and two engines on it: a copy of the migrated
    SQLite file, or the PostgreSQL database with every table emptied. The PostgreSQL engines
    are kept from example to example: connecting afresh twice an example took much of the
    test's time, and an emptied database is as fresh as a new one."""

    def __init__(self, database_url: str, directory: Path) -> None:
        self.url, self.directory, self.made = sa.make_url(database_url), directory, 0
        self.postgresql: tuple[sa.Engine, sa.Engine] | None = None

    def next_engines(self) -> tuple[sa.Engine, sa.Engine]:
        """Two engines on an empty, migrated store."""
        self.made += 1
        if self.url.get_backend_name() == "sqlite":
            for earlier in self.directory.iterdir():  # closed: the example before is over
                earlier.unlink()
            copied = self.directory / f"example-{self.made}.db"
            shutil.copyfile(str(self.url.database), copied)
            return create_engine(f"sqlite:///{copied}"), create_engine(f"sqlite:///{copied}")
        if self.postgresql is None:
            url = self.url.render_as_string(hide_password=False)
            # No ping before each checkout: the server does not go away during the test, and
            # a ping is a round trip more per transaction.
            self.postgresql = (
                create_engine(url, pool_pre_ping=False),
                create_engine(url, pool_pre_ping=False),
            )
        emptied(self.postgresql[0])
        return self.postgresql

    def done_with(self, engines: tuple[sa.Engine, sa.Engine]) -> None:
        """The example is over: close its SQLite engines (the PostgreSQL ones go on)."""
        if engines is not self.postgresql:
            for engine in engines:
                engine.dispose()

    def close(self) -> None:
        """The test is over: close the PostgreSQL engines."""
        for engine in self.postgresql or ():
            engine.dispose()


class ExactlyOnce(RuleBasedStateMachine):
    """Deliveries to one fresh store, each step checked against the model."""

    def __init__(self, stores: FreshStores) -> None:
        super().__init__()
        self.stores = stores
        self.engines = stores.next_engines()
        self.model = Model({query_id: Lineage(query_id) for query_id in QUERY_IDS})
        self.poisoned = 0

    def teardown(self) -> None:
        self.stores.done_with(self.engines)

    def post(self, items: list[Item], path: str) -> None:
        """Deliver one group down `path`; it must say what the model says became of it."""
        expected = self.model.apply(items)
        assert PATHS[path](self.engines[0], items) == expected

    def poison(self, query_id: str, pick: int) -> Poison:
        """A new poison event of `query_id`, of the kind `pick` chooses."""
        kind = sorted(POISONS)[pick % len(POISONS)]
        make, _ = POISONS[kind]
        self.poisoned += 1
        return Poison(kind, make(self.model.lineages[query_id].upcoming(), self.poisoned))

    def move(self, name: str, query_id: str, pick: int) -> Item | None:
        """One item of a group: a next batch, a held back or delivered event, poison or the
        current run's end (None when the query has nothing of the kind)."""
        lineage = self.model.lineages[query_id]
        if name == "next batch":
            return lineage.generate()
        if name == "held batch":
            return lineage.held.pop(pick % len(lineage.held)) if lineage.held else None
        if name == "replay":
            return lineage.delivered[pick % len(lineage.delivered)] if lineage.delivered else None
        if name == "end":
            return lineage.end()
        return self.poison(query_id, pick)

    def group(self, planned: list[tuple[str, str, int]], path: str) -> list[Item]:
        items = [self.move(name, query_id, pick) for name, query_id, pick in planned]
        # The in-process writer builds its events from Spark's own: it is never sent poison.
        kept = (Report, Start, End, Poison) if path == "collector" else (Report, Start, End)
        return [item for item in items if isinstance(item, kept)]

    def held(self) -> list[Report | Lifecycle]:
        return [report for lineage in self.model.lineages.values() for report in lineage.held]

    def delivered(self) -> list[Report | Lifecycle]:
        return [r for lineage in self.model.lineages.values() for r in lineage.delivered]

    @rule(query_id=queries, hold=st.booleans(), path=paths)
    def run_next_batch(self, query_id: str, hold: bool, path: str) -> None:
        report = self.model.lineages[query_id].generate()
        if hold:
            self.model.lineages[query_id].held.append(report)
        else:
            self.post([report], path)

    @precondition(lambda self: self.held())
    @rule(pick=picks, path=paths)
    def deliver_held_back_batch(self, pick: int, path: str) -> None:
        report = self.held()[pick % len(self.held())]
        self.model.lineages[report.query_id].held.remove(report)
        self.post([report], path)

    @precondition(lambda self: self.delivered())
    @rule(pick=picks, path=paths)
    def replay_delivered_batch(self, pick: int, path: str) -> None:
        self.post([self.delivered()[pick % len(self.delivered())]], path)

    @rule(
        query_id=queries,
        how=st.sampled_from(sorted(RESTARTS)),
        hold=st.sampled_from(("neither", "start", "batch", "both")),
        path=paths,
    )
    def restart_query(self, query_id: str, how: str, hold: str, path: str) -> None:
        start, report = self.model.lineages[query_id].restart(RESTARTS[how])
        held = {"neither": [], "start": [start], "batch": [report], "both": [start, report]}
        self.model.lineages[query_id].held.extend(held[hold])
        self.post([event for event in (start, report) if event not in held[hold]], path)

    @rule(query_id=queries, hold=st.booleans(), path=paths)
    def start_or_end_run(self, query_id: str, hold: bool, path: str) -> None:
        """The first run's start (once), or the current run's end (once)."""
        lineage = self.model.lineages[query_id]
        event: Lifecycle | None = lineage.first_start or lineage.end()
        lineage.first_start = None
        if event is None:
            return
        if hold:
            lineage.held.append(event)
        else:
            self.post([event], path)

    @rule(query_id=queries, pick=picks)
    def post_poison(self, query_id: str, pick: int) -> None:
        self.post([self.poison(query_id, pick)], "collector")

    @rule()
    def prune_now(self) -> None:
        """The server's prune, by its default retention, now: every batch here was stored
        moments ago, whatever its driver's clock says (q1's two weeks ago, q2's three years),
        so none goes, nor anything else the model holds."""
        prune(self.engines[0], Retention().cutoffs(time.time_ns() // 1_000_000))

    @rule(planned=moves, path=paths)
    def post_group(self, planned: list[tuple[str, str, int]], path: str) -> None:
        self.post(self.group(planned, path), path)

    @rule(query_id=queries, left=one_querys_moves, right=one_querys_moves)
    def post_two_groups_at_once(self, query_id: str, left: list, right: list) -> None:
        """Two senders post groups of one query from two threads and engines: the right one
        arrives while the left one holds the query's turn, waits, then writes after it."""
        groups = [
            self.group([(name, query_id, pick) for name, pick in planned], "collector")
            for planned in (left, right)
        ]
        expected = [self.model.apply(group) for group in groups]
        with ThreadPoolExecutor(2) as pool, holding_turn(self.engines[0]) as turn_taken:
            first = pool.submit(through_collector, self.engines[0], groups[0])
            first.add_done_callback(lambda _: turn_taken.set())
            assert turn_taken.wait(timeout=30), "the first writer never took its turn"
            second = pool.submit(through_collector, self.engines[1], groups[1])
            assert [first.result(), second.result()] == expected

    @invariant()
    def store_holds_what_the_model_does(self) -> None:
        found, expected = read_store(self.engines[0]), self.model.expected()
        broken = [
            f"{held}: {what}"
            for held, what in INVARIANTS.items()
            if getattr(found, held) != getattr(expected, held)
        ]
        assert found == expected, "broken: " + "; ".join(broken)


# Passing takes seconds; a failure, while Hypothesis shrinks it, up to its five minutes.
@pytest.mark.timeout(600)
def test_each_batch_is_stored_exactly_once_whatever_comes(database_url, tmp_path_factory):
    stores = FreshStores(database_url, tmp_path_factory.mktemp("exactly-once"))
    try:
        run_state_machine_as_test(lambda: ExactlyOnce(stores), settings=SETTINGS)
    finally:
        stores.close()

"""The watch: what anyone wrote to the store since the last look, as the live push's events.

No sockets here. A look reads what changed (monitor.store.signals.row_watch: a few cheap
reads), then in full only what someone is in a room to hear, and turns it into events: new
batches, pending timers, query summaries (every query's, now and then), alert events and
changes to the silences in force. web.live.watching sends them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy.orm as so
from flask import Flask

from monitor.store.read.alerts import active_silences, alert_events_by_id
from monitor.store.read.batches import batches_by_id
from monitor.store.read.queries import list_queries, queries_by_id
from monitor.store.read.timers import timer_snapshots_by_id
from monitor.store.schema.models import Batch
from monitor.store.signals.row_watch import (
    RowWatch,
    alert_event_watch,
    batch_watch,
    query_watch,
    timer_watch,
)
from web.api.alerts import alert_json, silences_in_force
from web.api.payloads import Summarizer, batch_events, overview, timers_json
from web.live.socket_events import ALERTS_ROOM, OVERVIEW_ROOM, Event, room

# Whether anyone, in any process, is in a room or on the way into it.
Heard = Callable[[str], bool]


class StoreWatch:
    """The store as the live push last sent it, and the events that bring it up to date."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self._last_full = 0.0
        self.fresh()

    def fresh(self) -> None:
        """Watch the store afresh: the next look, or join, takes it as it is as sent."""
        self._batches, self._timers, self._queries = batch_watch(), timer_watch(), query_watch()
        self._alert_events = alert_event_watch()
        self._silences: list[dict[str, Any]] | None = None

    def handed(self) -> dict[str, Any]:
        """What the live push has sent, as JSON, for another process's watch to go on from."""
        return {
            "watches": [watch.seen_rows() for watch in self._watches()],
            "silences": self._silences,
        }

    def go_on_from(self, handed: dict[str, Any]) -> None:
        """Watch the store from where another process's watch stopped (its `handed`): the
        next look sends what that one had not."""
        for watch, seen in zip(self._watches(), handed["watches"], strict=True):
            watch.go_on_from(seen)
        self._silences = handed["silences"]

    def _watches(self) -> tuple[RowWatch, ...]:
        return (self._queries, self._batches, self._timers, self._alert_events)

    def prime(self, session: so.Session) -> None:
        """Unless a look already did, take the store as it is as sent."""
        for watch in self._watches():
            if not watch.primed:
                watch.prime(session)
        if self._silences is None:
            self._silences = silences_in_force(session, self.app.config["CLOCK"]())

    def pushed(self, batch: Batch) -> bool:
        """Whether the looks have sent this batch as it is now."""
        return self._batches.seen(batch.id, self._batches.fingerprint(batch))

    def look(self, session: so.Session, heard: Heard) -> list[Event]:
        """The events of what changed since the last accepted look, for the rooms `heard`."""
        queries, batches, timers, alert_events = (watch.look(session) for watch in self._watches())
        events: list[Event] = []
        changed = set(queries)
        changed |= self._new_batches(session, batches, heard, events)
        changed |= self._new_timers(session, timers, events)
        # An alert that fires or resolves changes its query's judgment: its summary goes too.
        changed |= self._alerts(session, alert_events, events)
        self._summaries(session, changed, heard, events)
        self._silences_changed(session, events)
        return events

    def accept(self) -> None:
        """The last look's events were sent: its rows count as sent (if sending failed, the
        next look finds the same rows again)."""
        for watch in self._watches():
            watch.accept()

    def _new_batches(
        self, session: so.Session, ids: Sequence[int], heard: Heard, events: list[Event]
    ) -> set[str]:
        """The new batches' events, and the queries they belong to. A fleet's other queries'
        batches are not read: only those of the rooms someone is in."""
        queries = {key: self._batches.query_of(key) for key in ids}
        wanted = [key for key in ids if heard(room(queries[key]))]
        by_query: dict[str, list[Batch]] = {}
        for batch in batches_by_id(session, wanted) if wanted else ():
            by_query.setdefault(batch.query_id, []).append(batch)
        # Their partitions' statuses are judged on the queries' facts, as the API's.
        watched = queries_by_id(session, list(by_query)) if by_query else []
        summaries = Summarizer.of(self.app).summaries(session, watched, overview=False)
        for summary in summaries:
            for payload in batch_events(session, by_query[summary.query.id], summary.facts):
                events.append(Event("batch", payload, [room(summary.query.id)]))
        return set(queries.values())

    def _new_timers(self, session: so.Session, ids: Sequence[int], events: list[Event]) -> set[str]:
        queries = set()
        for snapshot in timer_snapshots_by_id(session, ids) if ids else ():
            payload = {"query": snapshot.query_id, "snapshot": timers_json(snapshot)}
            events.append(Event("timers", payload, [room(snapshot.query_id)]))
            queries.add(snapshot.query_id)
        return queries

    def _summaries(
        self, session: so.Session, changed: set[str], heard: Heard, events: list[Event]
    ) -> None:
        """The changed queries' summaries (every query's, now and then), for the overview and
        each query's room, reading only those someone is there to receive."""
        overview_heard = heard(OVERVIEW_ROOM)
        full = time.monotonic() - self._last_full >= self.app.config["OVERVIEW_REFRESH_S"]
        if full:
            self._last_full = time.monotonic()
            queries = list_queries(session)
        else:
            wanted = [q for q in changed if overview_heard or heard(room(q))]
            if not wanted:
                return
            queries = queries_by_id(session, wanted)
        if not overview_heard:
            queries = [query for query in queries if heard(room(query.id))]
        if not queries:
            return
        entries = overview(session, queries, Summarizer.of(self.app))
        if overview_heard:
            events.append(Event("overview", {"queries": entries, "full": full}, [OVERVIEW_ROOM]))
        for entry in entries:
            if heard(room(entry["id"])):
                events.append(Event("summary", entry, [room(entry["id"])]))

    def _alerts(self, session: so.Session, ids: Sequence[int], events: list[Event]) -> set[str]:
        """The alert events' events, and the queries they are about."""
        if not ids:
            return set()
        silences = list(active_silences(session, self.app.config["CLOCK"]()))
        about = set()
        for event, alert, name in alert_events_by_id(session, ids):
            about.add(alert.query_id)
            payload = {
                "alert": alert_json(alert, name, silences),
                "transition": event.transition,
                "at_ms": event.at_ms,
            }
            # One event to the three rooms: a client in several of them gets it once.
            events.append(
                Event("alert", payload, [OVERVIEW_ROOM, ALERTS_ROOM, room(alert.query_id)])
            )
        return about

    def _silences_changed(self, session: so.Session, events: list[Event]) -> None:
        # Read afresh each look: a silence ends by time passing as well as by a write.
        silences = silences_in_force(session, self.app.config["CLOCK"]())
        if self._silences is not None and silences != self._silences:
            events.append(Event("silences", {"silences": silences}, [ALERTS_ROOM]))
        self._silences = silences

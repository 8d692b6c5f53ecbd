"""A query's status at a glance: one small pure rule over the facts read from the store.

The first rule that matches wins:

1. `failed` — the run ended with an exception;
2. `error` — the query's stored rows cannot be read or judged (a bad row: the alert rule
   `query_unreadable` names it); nothing else is known of it;
3. `terminated` — the run ended without one;
4. `stalled` — the latest batch's watermark or one of its partitions is stalled, or a running
   query is silent: it has reported nothing for the silence threshold (a hung or killed
   driver) — the conditions of the alert rules `watermark_stalled`, `partition_stalled` and
   `no_progress`, on the same facts; or an alert of a rule that means `stalled` is live (the
   rules say what they mean: :data:`Meanings`): a stall that comes and goes stays `stalled`
   while its alert is held (`keep_firing_for`), not flapping;
5. `lagging` — a partition loses records as late (more than the late count within the late
   window, and more than the late share of what it read: the alert rule `late_records`), a
   partition read future-dated records within the future window (the alert rule
   `future_event_time`: one can drag the watermark ahead), or its backlog's verdict is
   `falling_behind` (work arrives faster than it is done: the alert rule `falling_behind`);
6. `idle` — Spark reported the query idle, or every partition of its latest batch is idle;
7. `waiting` — it runs and has stored no batch yet;
8. `healthy` otherwise.

A firing alert makes the status at least what its rule means (:mod:`monitor.health.judgment`).
Statuses sort by urgency: failed, error, stalled, lagging, idle, waiting, healthy, then
terminated (a query that ended cleanly needs no one's attention).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from monitor.health.backlog import Verdict
from monitor.health.facts import QueryFacts, StoredStatus
from monitor.health.predicates import (
    has_future_dated,
    has_stalled_work,
    is_all_idle,
    is_silent,
    losing_late,
)


class Status(enum.IntEnum):
    """A query's status; a smaller value is more urgent and sorts first."""

    FAILED = 0
    ERROR = 1
    STALLED = 2
    LAGGING = 3
    IDLE = 4
    WAITING = 5
    HEALTHY = 6
    TERMINATED = 7

    @property
    def label(self) -> str:
        """The status as the API and the pages name it."""
        return self.name.lower()


# The status a firing alert of each rule means, as each rule declares it
# (monitor.alerts.rules.MEANINGS, passed in: health does not know the rules); a rule not in it
# means `lagging`.
Meanings = Mapping[str, Status]


def query_status(facts: QueryFacts, now_ms: int, meanings: Meanings) -> Status:
    """The status of a query at `now_ms`, by the rules of this module's docstring."""
    if facts.status == StoredStatus.FAILED:
        return Status.FAILED
    if facts.unreadable is not None:
        return Status.ERROR
    if facts.status == StoredStatus.TERMINATED:
        return Status.TERMINATED
    if has_stalled_work(facts) or is_silent(facts, now_ms) or _stall_alerting(facts, meanings):
        return Status.STALLED
    if losing_late(facts) or has_future_dated(facts) or _falling_behind(facts):
        return Status.LAGGING
    if is_all_idle(facts):
        return Status.IDLE
    return Status.WAITING if facts.batch_id is None else Status.HEALTHY


def _falling_behind(facts: QueryFacts) -> bool:
    return facts.backlog is not None and facts.backlog.query.verdict is Verdict.FALLING_BEHIND


def _stall_alerting(facts: QueryFacts, meanings: Meanings) -> bool:
    """A rule that means `stalled` has a live alert on the query: it holds after its condition
    clears (keep_firing_for), so the status does not flap with it."""
    return any(meanings.get(rule) is Status.STALLED for rule in facts.alerting)

"""A dozen queries, each in a state that one reader or another once told differently: healthy,
stalled, falling behind, a long backfill catching up, a watermark two hours ahead of the clock,
ended with alerts still live, waiting for its first batch, failed, silent, losing records as
late, idle, and a stall too young to fire; the built-in rules evaluated over them, at NOW."""

import sqlalchemy.orm as so

from monitor.alerts.evaluate import evaluate
from monitor.alerts.rulefile import RuleSet
from monitor.events import QueryIdle, QueryStarted, QueryTerminated
from monitor.store.write.writes import write_events
from tests.support.progress import batch_event

NOW = 1_795_316_400_000  # 2026-11-22T03:00:00Z
MINUTE = 60_000

# Each query's name and the status every reader must give it at NOW.
EXPECTED = {
    "healthy": "healthy",
    "stalled": "stalled",
    "falling_behind": "lagging",
    "backfill_catching_up": "healthy",
    "watermark_ahead_of_the_clock": "lagging",
    "ended_with_alerts_live": "terminated",
    "waiting_for_its_first_batch": "waiting",
    "failed": "failed",
    "silent": "stalled",
    "losing_late_records": "lagging",
    "idle": "idle",
    "stall_too_young_to_fire": "stalled",
}


def _batches(name, count, every_ms, last_ms, ends, latests):
    """`count` batches of `name`, `every_ms` apart up to `last_ms`, each with the watermark
    10 s behind its time; `ends` and `latests` give each batch's offsets per partition from
    its index."""
    times = [last_ms - (count - 1 - i) * every_ms for i in range(count)]
    return [
        batch_event(
            name, i, at, name=name, ends=ends(i), latests=latests(i), watermark_ms=at - 10_000
        )
        for i, at in enumerate(times)
    ]


def _steady(i):
    """Offsets read as soon as they arrive."""
    return (100 * i, 100 * i)


def _stalled(name, at_ms):
    # t/1 has records waiting and is never read: stalled from 2 minutes after the first batch.
    return _batches(
        name, 9, 30_000, at_ms, lambda i: (100 * i, 50), lambda i: (100 * i, 80 + 10 * i)
    )


def _falling_behind(at_ms):
    # t/1 reads 20 records a batch while 50 arrive: the backlog grows by 30 each time.
    ends, latests = (lambda i: (100 * i, 20 * i)), (lambda i: (100 * i, 100 + 50 * i))
    return _batches("falling_behind", 7, 10_000, at_ms, ends, latests)


def _backfill(at_ms):
    # t/1 is 42,000 records behind, read at 40 a second while 10 arrive: caught up in 1,400 s.
    ends, latests = (lambda i: (100 * i, 200 * i)), (lambda i: (100 * i, 42_000 + 50 * i))
    return _batches("backfill_catching_up", 13, 5_000, at_ms, ends, latests)


def _ahead(at_ms):
    # A record from two hours ahead drove the watermark there.
    name = "watermark_ahead_of_the_clock"
    return [
        batch_event(name, i, at_ms - 10_000 * (2 - i), name=name, watermark_ms=at_ms + 7_200_000)
        for i in range(3)
    ]


def _late(at_ms):
    # t/1 drops 150 of the 200 records it reads in its last batch as late.
    name = "losing_late_records"
    times = {0: (50, at_ms - 30_000, at_ms - 20_000, 0), 1: (200, at_ms - 90_000, at_ms, 150)}
    return [
        *_batches(name, 2, 10_000, at_ms - 10_000, _steady, _steady),
        batch_event(name, 2, at_ms, name=name, ends=(300, 300), event_times=times),
    ]


def _young_stall(at_ms):
    # t/1 stops being read 135 s before `at_ms`: stalled in the last batch.
    ends, latests = (lambda i: (100 * i, 10 * min(i, 1))), (lambda i: (100 * i, 10 + 10 * i))
    return _batches("stall_too_young_to_fire", 5, 45_000, at_ms, ends, latests)


def _ended_and_others(at_ms):
    """Every query but the young stall, up to `at_ms`; the failed one ended."""
    # The query waiting for its first batch started ten seconds ago: it is not silent yet.
    waiting, young = "waiting_for_its_first_batch", "stall_too_young_to_fire"
    names = [name for name in EXPECTED if name not in (waiting, young)]
    events = [QueryStarted(name, "run-1", name, at_ms - 30 * MINUTE) for name in names]
    events.append(QueryStarted(waiting, "run-1", waiting, at_ms - 10_000))
    events += _batches("healthy", 6, 10_000, at_ms, _steady, _steady)
    events += [*_stalled("stalled", at_ms), *_stalled("ended_with_alerts_live", at_ms)]
    events += [*_falling_behind(at_ms), *_backfill(at_ms), *_ahead(at_ms), *_late(at_ms)]
    events += _batches("silent", 2, 10_000, at_ms - 10 * MINUTE, _steady, _steady)
    events += _batches("idle", 2, 10_000, at_ms - MINUTE, _steady, _steady)
    events.append(QueryIdle("idle", "run-1", at_ms - 5_000))
    events += _batches("failed", 2, 10_000, at_ms - MINUTE, _steady, _steady)
    events.append(QueryTerminated("failed", "run-1", at_ms - 30_000, "boom", "X_ERROR"))
    return events


def fill(engine, rules=None):
    """The dozen queries, the built-in rules (or `rules`) evaluated over them as a server does,
    two minutes, one minute and no time before NOW. The young stall's batches are stored just
    before the last evaluation; the query that ends does so just after it, its stall's alert
    firing still, as when the evaluator stopped with it."""
    rules = rules or RuleSet()
    write_events(engine, _ended_and_others(NOW))
    with so.Session(engine) as session:
        evaluate(session, rules, NOW - 2 * MINUTE)
        evaluate(session, rules, NOW - MINUTE)
    young = "stall_too_young_to_fire"
    write_events(
        engine, [QueryStarted(young, "run-1", young, NOW - 30 * MINUTE), *_young_stall(NOW)]
    )
    with so.Session(engine) as session:
        evaluate(session, rules, NOW)
    write_events(engine, [QueryTerminated("ended_with_alerts_live", "run-1", NOW - 1_000)])

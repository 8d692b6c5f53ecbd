"""Alert rules: what to tell about one query, now, from the facts its health is judged on.

A rule looks at :class:`~monitor.health.facts.QueryFacts` and its parameters and returns one
:class:`Finding` when it finds something wrong: with the query itself, or with some of its
partitions, listed in the one finding (an alert per query and rule, as Alertmanager groups
them, not one per partition). The conditions are :mod:`monitor.health.predicates`, which the
dashboard's status uses too. Rules register themselves in :data:`RULES` with their default
parameters, their `for` and `keep_firing_for` (Prometheus' names: how long a finding must
hold before its alert fires, how long a firing alert stays after it cleared, so that nothing
flaps), what they are: the status a firing alert of theirs means (a stall, a failure; the
health layer receives it, as :data:`MEANINGS`) and whether their finding explains every other
on the query (a failed, stopped or silent query, whatever its last batch shows; one that
cannot be judged), the other rules whose findings are their causes (a future-dated record
causes late records), and name the
:class:`~monitor.health.facts.Thresholds` their parameters set (how far back the facts look),
whose defaults are those parameters' defaults; a rules file overrides them per query
(:mod:`monitor.alerts.rulefile`). Durations are in ms.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from monitor.config import DEFAULT_FUTURE_TOLERANCE_S
from monitor.durations import duration
from monitor.events import Record
from monitor.health.backlog import Verdict
from monitor.health.facts import QueryFacts, StoredStatus, Thresholds
from monitor.health.predicates import is_silent, losing_late
from monitor.health.state_growth import StateGrowth, growing_while_stalled
from monitor.health.status import Status


class Severity(enum.Enum):
    """How urgent an alert of a rule is."""

    WARNING = "warning"
    CRITICAL = "critical"


class Kind(enum.Enum):
    """What a rule parameter is: a duration (ms, written '5m' in a rules file), a count, or a
    share (hundredths of a percent, written '1%' or '0.25%')."""

    DURATION = "duration"
    COUNT = "count"
    SHARE = "share"


@dataclass(frozen=True)
class Finding:
    """What a rule found wrong with a query: on the query itself, or on the `partitions` named
    (one finding for all of them, listed in its message); `caused_by`, the rule whose finding
    on the same query explains this one (set by the evaluator)."""

    value: float | None
    message: str
    partitions: tuple[str, ...] = ()
    caused_by: str | None = None


Params = Mapping[str, int]
Check = Callable[[QueryFacts, int, Params], Finding | None]


@dataclass(frozen=True)
class Rule:
    """A registered rule: its check, default parameters, how long a finding must hold before
    the alert fires (`for_ms`) and how long a firing alert stays after it cleared
    (`keep_firing_ms`), the status a firing alert of it means (`means`: a query with one is at
    least that), whether its finding explains every other on the query (`explains_all`: the
    query is down, or cannot be judged), and the other rules whose findings are its causes."""

    name: str
    description: str
    severity: Severity
    for_ms: int
    keep_firing_ms: int
    check: Check
    means: Status = Status.LAGGING
    explains_all: bool = False
    causes: tuple[str, ...] = ()
    params: dict[str, tuple[Kind, int]] = field(default_factory=dict)
    # Which of the facts' thresholds each parameter sets: {threshold: parameter}.
    sets: dict[str, str] = field(default_factory=dict)

    def defaults(self) -> dict[str, int]:
        """The parameters' default values."""
        return {name: default for name, (_, default) in self.params.items()}

    @property
    def caused_by(self) -> tuple[str, ...]:
        """The rules whose findings explain this one's, the first to look for first: every rule
        that explains all (unless this is one), then its own causes."""
        if self.explains_all:
            return ()
        return (*(name for name, known in RULES.items() if known.explains_all), *self.causes)


RULES: dict[str, Rule] = {}


def rule(
    description: str,
    severity: Severity,
    for_ms: int = 0,
    keep_firing_ms: int = 0,
    means: Status = Status.LAGGING,
    explains_all: bool = False,
    caused_by: tuple[str, ...] = (),
    sets: Mapping[str, str] | None = None,
    **params: tuple[Kind, int],
) -> Callable[[Check], Check]:
    """Register the decorated check as a rule named after it; names are unique. `means` is
    the status a firing alert of it means; `explains_all`, whether its finding explains every
    other on the query; `caused_by` names the other rules whose findings explain this one's;
    `sets` names the facts' thresholds its parameters set, as {threshold: parameter}."""

    def register(check: Check) -> Check:
        name = check.__name__
        if name in RULES:
            raise ValueError(f"a rule named {name!r} is already registered")
        RULES[name] = Rule(
            name,
            description,
            severity,
            for_ms,
            keep_firing_ms,
            check,
            means=means,
            explains_all=explains_all,
            causes=tuple(caused_by),
            params=dict(params),
            sets=dict(sets or {}),
        )
        return check

    return register


def thresholds(params: Mapping[str, Params]) -> Thresholds:
    """The facts' thresholds that the rules' parameters set, given each rule's parameters."""
    return Thresholds(
        **{
            threshold: params[name][param]
            for name, known in RULES.items()
            for threshold, param in known.sets.items()
        }
    )


def listed(names: Sequence[str], shown: int = 3) -> str:
    """Partition names as a message lists them: 't/1', 't/1 and t/2', 't/1, t/2, t/3 and 5
    more'."""
    if len(names) > shown:
        return f"{', '.join(names[:shown])} and {len(names) - shown} more"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _partitions(names: Sequence[str], value: float | None, said: str) -> Finding | None:
    """One finding over the partitions `names` (None when there are none): '<listed> <said>'."""
    if not names:
        return None
    return Finding(value, f"{listed(names)} {said}", tuple(names))


def _is(names: Sequence[str]) -> str:
    return "is" if len(names) == 1 else "are"


@rule(
    "the query's watermark has not advanced for the stall timeout",
    Severity.CRITICAL,
    for_ms=60_000,
    keep_firing_ms=120_000,
    means=Status.STALLED,
    caused_by=("partition_stalled", "future_event_time"),
)
def watermark_stalled(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """The latest batch's watermark is marked stalled."""
    if not (facts.active and facts.watermark_stalled):
        return None
    return Finding(facts.watermark_ms, "the watermark is stalled")


@rule(
    "a partition with work waiting does not advance",
    Severity.CRITICAL,
    for_ms=60_000,
    keep_firing_ms=120_000,
    means=Status.STALLED,
)
def partition_stalled(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """The partitions of the latest batch marked stalled."""
    if not facts.active:
        return None
    names = [p.name for p in facts.latest_partitions if p.stalled]
    return _partitions(names, len(names), f"{_is(names)} stalled")


@rule(
    "a partition has had no new records for the idle timeout",
    Severity.WARNING,
    for_ms=300_000,
    keep_firing_ms=60_000,
    means=Status.IDLE,
)
def partition_idle(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """The partitions of the latest batch marked idle."""
    if not facts.active:
        return None
    names = [p.name for p in facts.latest_partitions if p.idle]
    return _partitions(names, len(names), f"{_is(names)} idle")


@rule(
    "the watermark or a partition's offset went backwards within `window`",
    Severity.CRITICAL,
    sets={"rewound_window_ms": "window"},
    window=(Kind.DURATION, Thresholds.rewound_window_ms),
)
def rewound(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """The query's watermark, and the partitions, marked rewound in a batch of the window (a
    rewind lasts one batch; the window keeps it from slipping between two evaluations; the
    facts are taken over this rule's `window`)."""
    names = [p.name for p in facts.partitions if p.rewound]
    if facts.watermark_rewound:
        went = ["the watermark", *names] if names else ["the watermark"]
        return Finding(facts.watermark_ms, f"{listed(went)} went back", tuple(names))
    return _partitions(names, None, "went back")


@rule(
    "partition watermarks are further apart than the threshold",
    Severity.WARNING,
    for_ms=120_000,
    keep_firing_ms=120_000,
    caused_by=("future_event_time",),
    threshold=(Kind.DURATION, 300_000),
)
def watermark_skew(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """The latest batch's skew (max W_p - min W_p, idle partitions left out) is too high."""
    skew = facts.skew_ms
    if not facts.active or skew is None or skew <= params["threshold"]:
        return None
    return Finding(skew, f"watermark skew is {duration(skew)}")


@rule(
    "records are dropped as late: a partition lost more than `count` within `window`, over"
    " `share` of what it read",
    Severity.WARNING,
    caused_by=("future_event_time", "rewound"),
    sets={"late_window_ms": "window", "late_count": "count", "late_share": "share"},
    count=(Kind.COUNT, Thresholds.late_count),
    share=(Kind.SHARE, Thresholds.late_share),
    window=(Kind.DURATION, Thresholds.late_window_ms),
)
def late_records(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """The partitions that lost more than `count` records in the late window, and more than
    `share` of the records they read in it (the facts' late thresholds are this rule's
    parameters): a trickle of late records on a busy partition is no alert."""
    losing = losing_late(facts)
    if not losing:
        return None
    late, read = sum(p.late_records for p in losing), sum(p.records for p in losing)
    names = [p.name for p in losing]
    window = duration(facts.thresholds.late_window_ms)
    share = f", {percent(late, read)} of what {'it' if len(names) == 1 else 'they'} read"
    message = f"dropped {late:,} late records in {window}{share if read else ''}"
    return _partitions(names, late, message)


def percent(part: int, whole: int) -> str:
    """`part` as a share of `whole`, '3.3 %'."""
    return f"{100 * part / whole:.1f} %"


@rule(
    "records ahead of the clock: more than `count` within `window`, or the watermark more than"
    " `tolerance` ahead",
    Severity.CRITICAL,
    sets={"future_window_ms": "window"},
    count=(Kind.COUNT, 0),
    window=(Kind.DURATION, Thresholds.future_window_ms),
    # A watermark further ahead than a record may be before it is future-dated (the
    # WMON_FUTURE_TOLERANCE default) was set by a future-dated record.
    tolerance=(Kind.DURATION, DEFAULT_FUTURE_TOLERANCE_S * 1000),
)
def future_event_time(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """The partitions that read more than `count` future-dated records in the window, named
    with the first such record of the one furthest ahead (one can drag the watermark hours
    ahead); else, as Spark's own figures show it whichever way the query is seen, the
    watermark itself more than `tolerance` ahead of now."""
    ahead = [
        (p.name, p.future)
        for p in facts.partitions
        if p.future is not None and p.future.records > params["count"]
    ]
    if ahead:
        lead = max(future.lead_ms or 0 for _, future in ahead)
        records = sum(future.records for _, future in ahead)
        furthest = max(ahead, key=lambda item: item[1].lead_ms or 0)[1]
        window = duration(facts.thresholds.future_window_ms)
        said = (
            f"read {records:,} record{'s' if records != 1 else ''} up to {duration(lead)}"
            f" ahead of the clock in {window}{_record_text(furthest.samples)}"
        )
        return _partitions([name for name, _ in ahead], lead, said)
    watermark = facts.watermark_ms
    over = watermark - now_ms if facts.active and watermark is not None else 0
    if over <= params["tolerance"]:
        return None
    message = (
        f"the watermark is {duration(over)} ahead of the clock: a record from the future"
        " drags it (instrument() names the partition and the record)"
    )
    return Finding(over, message)


def _record_text(samples: tuple[Record, ...]) -> str:
    if not samples:
        return ""
    key, _, offset = samples[0]
    named = [f"offset {offset}"] if offset is not None else []
    named += [f"key {key}"] if key is not None else []
    return f", e.g. {', '.join(named)}" if named else ""


@rule(
    "the query's watermark is older than the threshold",
    Severity.WARNING,
    for_ms=60_000,
    keep_firing_ms=120_000,
    caused_by=("watermark_stalled", "partition_stalled"),
    threshold=(Kind.DURATION, 600_000),
)
def watermark_age(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """now - W is above the threshold while the query runs (no age before the first
    watermark)."""
    if not facts.active or facts.watermark_ms is None:
        return None
    age = now_ms - facts.watermark_ms
    if age <= params["threshold"]:
        return None
    return Finding(age, f"the watermark is {duration(age)} old")


@rule(
    "more records wait to be read than the threshold",
    Severity.WARNING,
    for_ms=60_000,
    keep_firing_ms=120_000,
    caused_by=("partition_stalled",),
    threshold=(Kind.COUNT, 100_000),
)
def offset_lag(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """The latest batch's total offset lag is above the threshold."""
    lag = facts.offset_lag
    if not facts.active or lag is None or lag <= params["threshold"]:
        return None
    return Finding(lag, f"{lag:,} records wait to be read")


@rule(
    "a partition's backlog grew over the last minute of batches (no threshold: Burrow's rule)",
    Severity.WARNING,
    for_ms=300_000,
    keep_firing_ms=120_000,
    caused_by=("partition_stalled",),
)
def falling_behind(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """The partitions of the latest batch whose backlog verdict is falling behind: records
    arrive faster than they are read."""
    if not facts.active:
        return None
    names = [p.name for p in facts.latest_partitions if p.verdict is Verdict.FALLING_BEHIND]
    return _partitions(names, len(names), f"{_is(names)} falling behind")


@rule(
    "a stateful operator's state keeps growing while the watermark is stalled (nothing is "
    "evicted: the road to running out of memory)",
    Severity.WARNING,
    for_ms=120_000,
    keep_firing_ms=120_000,
)
def state_growing(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """The operators whose state grew over the window while the latest batch's watermark is
    stalled, named with how fast."""
    if not facts.active:
        return None
    growing = growing_while_stalled(facts.state, facts.watermark_stalled)
    if not growing:
        return None
    fastest = max(growing, key=lambda op: op.rows_per_second or op.store_bytes_per_second or 0)
    said = ", ".join(_growth_text(op) for op in growing)
    return Finding(
        fastest.rows_per_second or fastest.store_bytes_per_second,
        f"state grows while the watermark is stalled: {said}",
    )


def _growth_text(op: StateGrowth) -> str:
    name = f"{op.operator or 'operator'} #{op.operator_index}"
    if op.rows_per_second is not None:
        return f"{name} by {rate_text(op.rows_per_second, 'rows')} to {op.rows:,} rows"
    kib = (op.store_bytes_per_second or 0) / 1024
    return f"{name} by {rate_text(kib, 'KiB')} (rows not counted)"


def rate_text(per_second: float, unit: str) -> str:
    """A rate of growth as people read it: '12.5 rows/s', or per minute or per hour when it
    is slower than a tenth a second ('3.0 rows/min'), never '0.0 rows/s'."""
    if per_second >= 0.1:
        return f"{per_second:,.1f} {unit}/s"
    if per_second * 60 >= 0.1:
        return f"{per_second * 60:,.1f} {unit}/min"
    return f"{per_second * 3_600:,.1f} {unit}/h"


_PYTHON_ERROR = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit): \S")


def failure_reason(exception: str | None) -> str:
    """The line of Spark's exception text that says what went wrong: the error a Python
    traceback in it ends with (a foreachBatch or UDF failure), else its first line."""
    lines = (exception or "no exception text").strip().splitlines()
    traced = False
    for line in lines:
        if traced and _PYTHON_ERROR.match(line):
            return line.strip()[:200]
        traced = traced or "Traceback (most recent call last)" in line
    return lines[0].strip()[:200]


def _ended(facts: QueryFacts, status: StoredStatus, now_ms: int, within_ms: int, rule: str) -> bool:
    """Whether the query's last run ended with `status`, and that is news: it ended no longer
    than `within_ms` ago, or the rule's alert on it is live already (it stays until the query
    runs again). A store full of old queries does not fire for each of them."""
    if facts.status != status:
        return False
    recent = facts.ended_at_ms is None or now_ms - facts.ended_at_ms <= within_ms
    return recent or rule in facts.alerting


@rule(
    "the query ended with an exception (new alerts: within `within`)",
    Severity.CRITICAL,
    means=Status.FAILED,
    explains_all=True,
    within=(Kind.DURATION, 86_400_000),
)
def query_failed(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """The query's last run failed (see :func:`_ended` for `within`)."""
    if not _ended(facts, StoredStatus.FAILED, now_ms, params["within"], "query_failed"):
        return None
    return Finding(None, f"the query failed: {failure_reason(facts.exception)}")


@rule(
    "the query stopped (new alerts: within `within`)",
    Severity.WARNING,
    means=Status.TERMINATED,
    explains_all=True,
    within=(Kind.DURATION, 3_600_000),
)
def query_terminated(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """The query's last run ended without an exception (see :func:`_ended` for `within`)."""
    if not _ended(facts, StoredStatus.TERMINATED, now_ms, params["within"], "query_terminated"):
        return None
    return Finding(None, "the query stopped")


@rule(
    "a running query has reported nothing for longer than the threshold",
    Severity.CRITICAL,
    means=Status.STALLED,
    explains_all=True,
    sets={"silence_ms": "threshold"},
    threshold=(Kind.DURATION, Thresholds.silence_ms),
)
def no_progress(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """No progress, idle or termination event for `threshold` from a query that runs: it is
    silent (the facts' silence threshold is this rule's `threshold`)."""
    if not is_silent(facts, now_ms):
        return None
    silent = now_ms - facts.last_progress_ms
    return Finding(silent, f"no progress for {duration(silent)}")


@rule(
    "a batch has been running for longer than the threshold",
    Severity.WARNING,
    threshold=(Kind.DURATION, 600_000),
)
def long_batch(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """The batch in flight, as the driver tells (`monitor.attach`), began more than
    `threshold` ago: the query works, but on one batch for long (a slow sink, a backfill)."""
    if not facts.active or facts.running_since_ms is None:
        return None
    running = now_ms - facts.running_since_ms
    if running <= params["threshold"]:
        return None
    return Finding(running, f"batch {facts.running_batch_id} has run for {duration(running)}")


@rule(
    "the job's clock is ahead of the monitor's by more than `tolerance`",
    Severity.WARNING,
    tolerance=(Kind.DURATION, 60_000),
)
def clock_ahead(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """The time the job last claimed was more than `tolerance` ahead of when its event was
    stored: its times are not trusted for liveness, and its charts' times are off."""
    ahead = facts.clock_ahead_ms
    if not facts.active or ahead is None or ahead <= params["tolerance"]:
        return None
    return Finding(ahead, f"the job's clock is {duration(ahead)} ahead of the monitor's")


@rule(
    "the time the job last claimed was more than `tolerance` behind its event's arrival",
    Severity.WARNING,
    for_ms=60_000,
    tolerance=(Kind.DURATION, 600_000),
)
def clock_behind(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """The job's events arrive (through a listener or the collector) more than `tolerance`
    after the times they claim: its clock runs behind, or its events wait on the way (a sender
    draining a backlog clears it within `for`). Its liveness is judged by the arrivals."""
    behind = facts.clock_behind_ms
    if not facts.active or behind is None or behind <= params["tolerance"]:
        return None
    return Finding(
        behind,
        f"the job's clock is {duration(behind)} behind the monitor's, "
        "or its events took that long to arrive",
    )


@rule(
    "the query's stored rows cannot be read or judged: its other rules wait",
    Severity.CRITICAL,
    means=Status.ERROR,
    explains_all=True,
)
def query_unreadable(facts: QueryFacts, now_ms: int, params: Params) -> Finding | None:
    """A row of the query breaks its reading (see :mod:`monitor.store.schema.isolation`); until it
    is mended, its other alerts stay as they were, neither fired nor resolved."""
    if facts.unreadable is None:
        return None
    return Finding(None, f"the query's stored rows cannot be read: {facts.unreadable}")


# What the rules say of themselves, gathered once they are registered: the status a firing
# alert of each means (the health layer's judgment receives it), and the rules whose alerts
# are listed first, as they explain every other on their query.
MEANINGS = {name: known.means for name, known in RULES.items()}
URGENT = tuple(name for name, known in RULES.items() if known.explains_all)

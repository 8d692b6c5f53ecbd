"""Alert rules: what to tell about one query, now, from the facts its health is judged on.

A rule looks at :class:`~monitor.health.facts.QueryFacts` and its parameters and returns a
:class:`Finding` for each subject it finds wrong: the query itself (``partition`` None) or one
of its partitions; the conditions are :mod:`monitor.health.predicates`, which the dashboard's
status uses too. Rules register themselves in :data:`RULES` with their default parameters and
``for`` duration, and name the :class:`~monitor.health.facts.Thresholds` their parameters set
(how far back the facts look); a rules file overrides them per query
(:mod:`monitor.alerts.rulefile`). Durations are in ms.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from monitor.events import Record
from monitor.health.facts import QueryFacts, StoredStatus, Thresholds
from monitor.health.predicates import is_silent


class Severity(enum.Enum):
    """How urgent an alert of a rule is."""

    WARNING = "warning"
    CRITICAL = "critical"


class Kind(enum.Enum):
    """What a rule parameter is: a duration (ms, written '5m' in a rules file) or a count."""

    DURATION = "duration"
    COUNT = "count"


@dataclass(frozen=True)
class Finding:
    """A condition a rule found: on the query (partition None) or one partition."""

    partition: str | None
    value: float | None
    message: str


Params = Mapping[str, int]
Check = Callable[[QueryFacts, int, Params], list[Finding]]


@dataclass(frozen=True)
class Rule:
    """A registered rule: its check, default parameters and how long a finding must hold."""

    name: str
    description: str
    severity: Severity
    for_ms: int
    check: Check
    params: dict[str, tuple[Kind, int]] = field(default_factory=dict)
    # Which of the facts' thresholds each parameter sets: {threshold: parameter}.
    sets: dict[str, str] = field(default_factory=dict)

    def defaults(self) -> dict[str, int]:
        """The parameters' default values."""
        return {name: default for name, (_, default) in self.params.items()}


RULES: dict[str, Rule] = {}


def rule(
    description: str,
    severity: Severity,
    for_ms: int = 0,
    sets: Mapping[str, str] | None = None,
    **params: tuple[Kind, int],
) -> Callable[[Check], Check]:
    """Register the decorated check as a rule named after it; names are unique. `sets` names
    the facts' thresholds its parameters set, as {threshold: parameter}."""

    def register(check: Check) -> Check:
        name = check.__name__
        if name in RULES:
            raise ValueError(f"a rule named {name!r} is already registered")
        RULES[name] = Rule(
            name, description, severity, for_ms, check, dict(params), dict(sets or {})
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


def _seconds(ms: float) -> str:
    return f"{ms / 1000:,.0f} s"


@rule("the query's watermark has not advanced for the stall timeout", Severity.CRITICAL)
def watermark_stalled(facts: QueryFacts, now_ms: int, params: Params) -> list[Finding]:
    """The latest batch's watermark is marked stalled."""
    if not (facts.active and facts.watermark_stalled):
        return []
    return [Finding(None, facts.watermark_ms, "the watermark is stalled")]


@rule("a partition with work waiting does not advance", Severity.CRITICAL)
def partition_stalled(facts: QueryFacts, now_ms: int, params: Params) -> list[Finding]:
    """Every partition of the latest batch marked stalled."""
    if not facts.active:
        return []
    stalled = [p for p in facts.latest_partitions if p.stalled]
    return [Finding(p.name, None, f"{p.name} is stalled") for p in stalled]


@rule("a partition has had no new records for the idle timeout", Severity.WARNING)
def partition_idle(facts: QueryFacts, now_ms: int, params: Params) -> list[Finding]:
    """Every partition of the latest batch marked idle."""
    if not facts.active:
        return []
    return [Finding(p.name, None, f"{p.name} is idle") for p in facts.latest_partitions if p.idle]


@rule(
    "the watermark or a partition's offset went backwards within `window`",
    Severity.CRITICAL,
    sets={"rewound_window_ms": "window"},
    window=(Kind.DURATION, 300_000),
)
def rewound(facts: QueryFacts, now_ms: int, params: Params) -> list[Finding]:
    """The query's watermark, and every partition, marked rewound in a batch of the window (a
    rewind lasts one batch; the window keeps it from slipping between two evaluations; the
    facts are taken over this rule's `window`)."""
    found = [Finding(None, facts.watermark_ms, "the watermark went back")]
    found = found if facts.watermark_rewound else []
    return found + [
        Finding(p.name, None, f"{p.name} went back") for p in facts.partitions if p.rewound
    ]


@rule(
    "partition watermarks are further apart than the threshold",
    Severity.WARNING,
    for_ms=60_000,
    threshold=(Kind.DURATION, 300_000),
)
def watermark_skew(facts: QueryFacts, now_ms: int, params: Params) -> list[Finding]:
    """The latest batch's skew (max W_p - min W_p, idle partitions left out) is too high."""
    skew = facts.skew_ms
    if not facts.active or skew is None or skew <= params["threshold"]:
        return []
    return [Finding(None, skew, f"watermark skew is {_seconds(skew)}")]


@rule(
    "records are dropped as late: more than `count` within `window`",
    Severity.CRITICAL,
    sets={"late_window_ms": "window"},
    count=(Kind.COUNT, 0),
    window=(Kind.DURATION, 300_000),
)
def late_records(facts: QueryFacts, now_ms: int, params: Params) -> list[Finding]:
    """Every partition that lost more than `count` records in the late window (the facts'
    late counts are taken over this rule's `window`)."""
    window = _seconds(facts.thresholds.late_window_ms)
    return [
        Finding(
            p.name, p.late_records, f"{p.name} dropped {p.late_records:,} late records in {window}"
        )
        for p in facts.partitions
        if p.late_records > params["count"]
    ]


@rule(
    "records ahead of the clock: more than `count` within `window`, or the watermark more than"
    " `tolerance` ahead",
    Severity.CRITICAL,
    sets={"future_window_ms": "window"},
    count=(Kind.COUNT, 0),
    window=(Kind.DURATION, 300_000),
    tolerance=(Kind.DURATION, 300_000),
)
def future_event_time(facts: QueryFacts, now_ms: int, params: Params) -> list[Finding]:
    """Every partition that read more than `count` future-dated records in the window, named
    with the newest batch's first such record (one can drag the watermark hours ahead); else,
    as Spark's own figures show it whichever way the query is seen, the watermark itself more
    than `tolerance` ahead of now."""
    window = _seconds(facts.thresholds.future_window_ms)
    found = []
    for p in facts.partitions:
        if p.future is None or p.future.records <= params["count"]:
            continue
        lead, records = p.future.lead_ms or 0, p.future.records
        message = (
            f"{p.name} read {records:,} record{'s' if records != 1 else ''} up to {_hours(lead)}"
            f" ahead of the clock in {window}{_record_text(p.future.samples)}"
        )
        found.append(Finding(p.name, lead, message))
    watermark = facts.watermark_ms
    ahead = watermark - now_ms if facts.active and watermark is not None else 0
    if not found and ahead > params["tolerance"]:
        message = (
            f"the watermark is {_hours(ahead)} ahead of the clock: a record from the future"
            " drags it (instrument() names the partition and the record)"
        )
        found.append(Finding(None, ahead, message))
    return found


def _hours(ms: int) -> str:
    return f"{ms / 3_600_000:,.1f} h" if ms >= 3_600_000 else _seconds(ms)


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
    threshold=(Kind.DURATION, 600_000),
)
def watermark_age(facts: QueryFacts, now_ms: int, params: Params) -> list[Finding]:
    """now - W is above the threshold while the query runs (no age before the first
    watermark)."""
    if not facts.active or facts.watermark_ms is None:
        return []
    age = now_ms - facts.watermark_ms
    if age <= params["threshold"]:
        return []
    return [Finding(None, age, f"the watermark is {_seconds(age)} old")]


@rule(
    "more records wait to be read than the threshold",
    Severity.WARNING,
    for_ms=60_000,
    threshold=(Kind.COUNT, 100_000),
)
def offset_lag(facts: QueryFacts, now_ms: int, params: Params) -> list[Finding]:
    """The latest batch's total offset lag is above the threshold."""
    lag = facts.offset_lag
    if not facts.active or lag is None or lag <= params["threshold"]:
        return []
    return [Finding(None, lag, f"{lag:,} records wait to be read")]


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
    within=(Kind.DURATION, 86_400_000),
)
def query_failed(facts: QueryFacts, now_ms: int, params: Params) -> list[Finding]:
    """The query's last run failed (see :func:`_ended` for `within`)."""
    if not _ended(facts, StoredStatus.FAILED, now_ms, params["within"], "query_failed"):
        return []
    return [Finding(None, None, f"the query failed: {failure_reason(facts.exception)}")]


@rule(
    "the query stopped (new alerts: within `within`)",
    Severity.WARNING,
    within=(Kind.DURATION, 3_600_000),
)
def query_terminated(facts: QueryFacts, now_ms: int, params: Params) -> list[Finding]:
    """The query's last run ended without an exception (see :func:`_ended` for `within`)."""
    if not _ended(facts, StoredStatus.TERMINATED, now_ms, params["within"], "query_terminated"):
        return []
    return [Finding(None, None, "the query stopped")]


@rule(
    "a running query has reported nothing for longer than the threshold",
    Severity.CRITICAL,
    sets={"silence_ms": "threshold"},
    threshold=(Kind.DURATION, 300_000),
)
def no_progress(facts: QueryFacts, now_ms: int, params: Params) -> list[Finding]:
    """No progress, idle or termination event for `threshold` from a query that runs: it is
    silent (the facts' silence threshold is this rule's `threshold`)."""
    if not is_silent(facts, now_ms):
        return []
    silent = now_ms - facts.last_progress_ms
    return [Finding(None, silent, f"no progress for {_seconds(silent)}")]


@rule(
    "the job's clock is ahead of the monitor's by more than `tolerance`",
    Severity.WARNING,
    tolerance=(Kind.DURATION, 60_000),
)
def clock_ahead(facts: QueryFacts, now_ms: int, params: Params) -> list[Finding]:
    """The time the job last claimed was more than `tolerance` ahead of when its event was
    stored: its times are not trusted for liveness, and its charts' times are off."""
    ahead = facts.clock_ahead_ms
    if not facts.active or ahead is None or ahead <= params["tolerance"]:
        return []
    return [Finding(None, ahead, f"the job's clock is {_seconds(ahead)} ahead of the monitor's")]


@rule("the query's stored rows cannot be read or judged: its other rules wait", Severity.CRITICAL)
def query_unreadable(facts: QueryFacts, now_ms: int, params: Params) -> list[Finding]:
    """A row of the query breaks its reading (see :mod:`monitor.store.isolation`); until it
    is mended, its other alerts stay as they were, neither fired nor resolved."""
    if facts.unreadable is None:
        return []
    return [Finding(None, None, f"the query's stored rows cannot be read: {facts.unreadable}")]

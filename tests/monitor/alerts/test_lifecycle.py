"""The alert lifecycle: pending for `for`, firing, resolved once clear for `keep_firing_for`;
one alert per rule and query, the partitions it covers inside it."""

import pytest

from monitor.alerts.lifecycle import State, Timing, Transition, step
from monitor.alerts.rules import Finding

SUBJECT = ("partition_stalled", "q")
FOUND = Finding(3, "t/1 is stalled", ("t/1",))


def run(findings, for_ms, keep_firing_ms=0):
    """Evaluate at t = 0, 10, 20, ...: the states and transitions seen."""
    alert, seen = None, []
    for i, finding in enumerate(findings):
        alert, transition = step(alert, finding, i * 10, Timing(for_ms, keep_firing_ms), SUBJECT)
        seen.append((alert.state if alert else None, transition))
    return alert, seen


P, F, R = State.PENDING, State.FIRING, State.RESOLVED


@pytest.mark.parametrize(
    "findings, for_ms, keep_firing_ms, expected",
    [
        ([FOUND, FOUND], 0, 0, [(F, Transition.FIRING), (F, None)]),
        (
            [FOUND, FOUND, FOUND, None],
            20,
            0,
            [(P, Transition.PENDING), (P, None), (F, Transition.FIRING), (R, Transition.RESOLVED)],
        ),
        (
            [FOUND, None, None],
            20,
            0,
            [(P, Transition.PENDING), (None, Transition.CANCELLED), (None, None)],
        ),
        ([None, None], 0, 0, [(None, None), (None, None)]),
        (
            [FOUND, None, None, FOUND],
            0,
            0,
            [(F, Transition.FIRING), (R, Transition.RESOLVED), (R, None), (F, Transition.FIRING)],
        ),
        (
            [FOUND, None, FOUND, None, None, None],
            0,
            30,
            [
                (F, Transition.FIRING),
                (F, None),
                (F, None),
                (F, None),
                (F, None),
                (R, Transition.RESOLVED),
            ],
        ),
        (
            [FOUND, None, FOUND],
            20,
            30,
            [(P, Transition.PENDING), (None, Transition.CANCELLED), (P, Transition.PENDING)],
        ),
    ],
    ids=[
        "fires-at-once",
        "pending-then-fires",
        "cancelled-before-for",
        "never",
        "fires-again",
        "flapping-stays-firing-until-clear-for-its-hold",
        "a-hold-keeps-only-firing-alerts",
    ],
)
def test_lifecycle(findings, for_ms, keep_firing_ms, expected):
    assert run(findings, for_ms, keep_firing_ms)[1] == expected


def test_a_firing_alert_keeps_its_start_and_takes_the_latest_finding():
    later = Finding(9, "t/1 and t/2 are stalled", ("t/1", "t/2"), "no_progress")
    alert, _ = run([FOUND, FOUND, later], 10)
    assert (alert.active_since_ms, alert.fired_at_ms, alert.value, alert.message) == (
        0,
        10,
        9,
        "t/1 and t/2 are stalled",
    )
    assert (alert.partitions, alert.caused_by, alert.held_at_ms) == (
        ("t/1", "t/2"),
        "no_progress",
        20,
    )
    assert (alert.rule, alert.query_id) == SUBJECT


def test_an_alert_held_after_it_cleared_keeps_what_it_last_found():
    alert, _ = run([FOUND, None], 0, keep_firing_ms=60)
    assert (alert.state, alert.partitions, alert.held_at_ms) == (F, ("t/1",), 0)


def test_a_new_alert_after_resolution_starts_afresh():
    alert, _ = run([FOUND, None, None, FOUND], 0)
    assert (alert.active_since_ms, alert.fired_at_ms, alert.resolved_at_ms) == (30, 30, None)

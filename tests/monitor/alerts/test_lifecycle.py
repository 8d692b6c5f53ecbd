"""The alert lifecycle: pending for `for`, firing, resolved; one alert per rule and subject."""

import pytest

from monitor.alerts.lifecycle import State, Transition, step
from monitor.alerts.rules import Finding

SUBJECT = ("partition_stalled", "q", "t/1")
FOUND = Finding("t/1", 3, "t/1 is stalled")


def run(findings, for_ms):
    """Evaluate at t = 0, 10, 20, ...: the states and transitions seen."""
    alert, seen = None, []
    for i, finding in enumerate(findings):
        alert, transition = step(alert, finding, i * 10, for_ms, SUBJECT)
        seen.append((alert.state if alert else None, transition))
    return alert, seen


P, F, R = State.PENDING, State.FIRING, State.RESOLVED


@pytest.mark.parametrize(
    "findings, for_ms, expected",
    [
        ([FOUND, FOUND], 0, [(F, Transition.FIRING), (F, None)]),
        (
            [FOUND, FOUND, FOUND, None],
            20,
            [(P, Transition.PENDING), (P, None), (F, Transition.FIRING), (R, Transition.RESOLVED)],
        ),
        (
            [FOUND, None, None],
            20,
            [(P, Transition.PENDING), (None, Transition.CANCELLED), (None, None)],
        ),
        ([None, None], 0, [(None, None), (None, None)]),
        (
            [FOUND, None, None, FOUND],
            0,
            [(F, Transition.FIRING), (R, Transition.RESOLVED), (R, None), (F, Transition.FIRING)],
        ),
    ],
    ids=["fires-at-once", "pending-then-fires", "cancelled-before-for", "never", "fires-again"],
)
def test_lifecycle(findings, for_ms, expected):
    assert run(findings, for_ms)[1] == expected


def test_a_firing_alert_keeps_its_start_and_takes_the_latest_value():
    later = Finding("t/1", 9, "t/1 is stalled (9)")
    alert, _ = run([FOUND, FOUND, later], 10)
    assert (alert.active_since_ms, alert.fired_at_ms, alert.value, alert.message) == (
        0,
        10,
        9,
        "t/1 is stalled (9)",
    )
    assert alert.key == SUBJECT


def test_a_new_alert_after_resolution_starts_afresh():
    alert, _ = run([FOUND, None, None, FOUND], 0)
    assert (alert.active_since_ms, alert.fired_at_ms, alert.resolved_at_ms) == (30, 30, None)

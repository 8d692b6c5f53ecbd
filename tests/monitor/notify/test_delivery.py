"""Notifications to a real local HTTP receiver: delivered once each, in order, after outages."""

import socket
import threading
import time

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so

from monitor.alerts.actions import lift_silence, silence
from monitor.alerts.evaluate import evaluate
from monitor.alerts.runner import AlertRunner, descriptions
from monitor.notify import delivery as notify  # the sender, whose internals tests use below
from monitor.notify.delivery import CLAIM_MS, GIVE_UP_AFTER_MS, deliver_due
from monitor.notify.receiver import Receiver
from monitor.notify.silences import silenced
from monitor.notify.transport import Sent, http_post
from monitor.store.schema.models import (
    AlertEvent,
    AlertRow,
    Delivery,
    DeliveryAttempt,
    Query,
    Silence,
)
from tests.support.alert_scenarios import at, moves_again, rules_with, stalled
from tests.support.network import closed_port
from tests.support.waiting import wait_until


def evaluate_at(engine, rules, seconds):
    with so.Session(engine, expire_on_commit=False) as session:
        return evaluate(session, rules, at(seconds))


def test_firing_and_resolved_reach_a_webhook_and_a_slack_receiver(engine, receiver):
    rules = rules_with(
        Receiver("ops", "webhook", f"{receiver.url}/hook"),
        Receiver("chat", "slack", f"{receiver.url}/slack"),
    )
    stalled(engine)
    evaluate_at(engine, rules, 26)
    assert [
        a.ok for a in deliver_due(engine, rules.receivers, at(26), descriptions=descriptions())
    ] == [True, True]
    moves_again(engine)
    evaluate_at(engine, rules, 31)
    deliver_due(engine, rules.receivers, at(31), descriptions=descriptions())

    hooks = [body for path, body in receiver.received if path == "/hook"]
    assert [(h["status"], h["alert"]["rule"], h["alert"]["partitions"]) for h in hooks] == [
        ("firing", "partition_stalled", ["t/1"]),
        ("resolved", "partition_stalled", ["t/1"]),
    ]
    assert hooks[0]["alert"]["message"] == "t/1 is stalled" and hooks[1]["alert"]["resolved_at"]
    texts = [body["text"] for path, body in receiver.received if path == "/slack"]
    assert texts[0].startswith(":rotating_light: [FIRING] ") and "t/1 is stalled" in texts[0]
    assert texts[1].startswith(":white_check_mark: [RESOLVED] ")
    assert deliver_due(engine, rules.receivers, at(60), descriptions=descriptions()) == [], (
        "each delivered once"
    )


def test_a_failing_receiver_gets_everything_once_in_order_after_it_recovers(engine, receiver):
    rules = rules_with(Receiver("ops", "webhook", receiver.url))
    stalled(engine)
    evaluate_at(engine, rules, 26)
    moves_again(engine)
    evaluate_at(engine, rules, 31)
    receiver.failures_left = 3
    now = at(31)
    tried = []
    for step_ms in [0, 500, 500, 1_000, 2_000, 4_000]:
        now += step_ms
        tried.append(
            [
                (a.ok, a.status_code)
                for a in deliver_due(engine, rules.receivers, now, descriptions=descriptions())
            ]
        )
    # Backoff 1 s, 2 s, 4 s; a failing receiver's later deliveries wait behind the first.
    assert tried == [
        [(False, 503)],
        [],
        [(False, 503)],
        [],
        [(False, 503)],
        [(True, 204), (True, 204)],
    ]
    statuses = [body["status"] for _, body in receiver.received]
    ids = [body["delivery_id"] for _, body in receiver.received]
    assert statuses == ["firing", "resolved"] and len(set(ids)) == 2
    with so.Session(engine) as session:
        attempts = session.scalars(sa.select(DeliveryAttempt).order_by(DeliveryAttempt.id)).all()
        assert [(a.ok, a.status_code) for a in attempts] == [(False, 503)] * 3 + [(True, 204)] * 2


def test_an_unreachable_receiver_is_retried_then_given_up_after_a_day(engine):
    rules = rules_with(Receiver("ops", "webhook", f"http://127.0.0.1:{closed_port()}/"))
    stalled(engine)
    evaluate_at(engine, rules, 26)
    [attempt] = deliver_due(engine, rules.receivers, at(26), descriptions=descriptions())
    assert attempt.status_code is None and attempt.error
    deliver_due(engine, rules.receivers, at(26) + GIVE_UP_AFTER_MS, descriptions=descriptions())
    with so.Session(engine) as session:
        delivery = session.scalars(sa.select(Delivery)).one()
        assert delivery.attempts == 2 and delivery.abandoned_at_ms == at(26) + GIVE_UP_AFTER_MS
    assert (
        deliver_due(
            engine, rules.receivers, at(26) + 2 * GIVE_UP_AFTER_MS, descriptions=descriptions()
        )
        == []
    )


def test_a_slow_receiver_does_not_hold_evaluation_up(engine, tmp_path):
    rules = tmp_path / "rules.yml"
    rules.write_text(
        'queries:\n  - match: "*"\n    rules:\n      no_progress: {enabled: false}\n'
        "      watermark_age: {enabled: false}\n"
        "      partition_stalled: {for: 0, keep_firing_for: 0}\n"
        "receivers:\n  - {name: ops, kind: webhook, url: 'http://127.0.0.1:9/'}\n"
    )
    release, posted = threading.Event(), threading.Event()

    def stuck_post(url, message):
        posted.set()
        release.wait()  # until the test ends: evaluation must go on meanwhile
        return Sent(204)

    clock = [at(26)]
    runner = AlertRunner(engine, rules, interval_s=0.05, clock=lambda: clock[0], post=stuck_post)
    stalled(engine)
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(stop,))
    thread.start()
    try:
        wait_until(posted.is_set, 10, "the first notification to be sent")
        moves_again(engine)
        clock[0] = at(31)

        def resolved():
            with so.Session(engine) as session:
                return session.scalar(
                    sa.select(AlertEvent).where(AlertEvent.transition == "resolved")
                )

        wait_until(resolved, 60, "the alert to resolve while the receiver hangs")
    finally:
        release.set()
        stop.set()
        thread.join(10)


def test_a_receiver_answering_nonsense_is_a_failed_attempt():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)

        def answer():
            connection, _ = listener.accept()
            with connection:
                connection.recv(65_536)
                connection.sendall(b"not HTTP at all\r\n\r\n")

        threading.Thread(target=answer, daemon=True).start()
        sent = http_post(f"http://127.0.0.1:{listener.getsockname()[1]}/", {"a": 1})
    assert not sent.ok and sent.status_code is None and sent.error


def test_slack_text_from_a_job_is_shown_literally(engine, receiver):
    rules = rules_with(Receiver("chat", "slack", receiver.url))
    stalled(engine)
    with so.Session(engine) as session:
        session.execute(sa.update(Query).values(name="<!channel> & co"))
        session.commit()
    evaluate_at(engine, rules, 26)
    deliver_due(engine, rules.receivers, at(26), descriptions=descriptions())
    [(_, body)] = receiver.received
    assert "&lt;!channel&gt; &amp; co: t/1 is stalled" in body["text"]


@pytest.mark.parametrize(
    "scope, covered",
    [
        ((None, None, None), True),
        (("partition_stalled", None, None), True),
        (("partition_stalled", "q", "t/1"), True),
        (("partition_idle", None, None), False),
        ((None, "other", None), False),
        ((None, "q", "t/2"), False),
        ((None, "q", "t/3"), False),
    ],
    ids=[
        "everything",
        "the-rule",
        "exactly-it",
        "another-rule",
        "another-query",
        "one-of-its-partitions",
        "another-partition",
    ],
)
def test_a_silence_covers_what_it_names(scope, covered):
    """A silence of a partition covers an alert about that partition alone: of an alert that
    covers it and another, the other would go untold."""
    partitions = ["t/1", "t/2"] if scope[2] == "t/2" else ["t/1"]
    alert = AlertRow(rule="partition_stalled", query_id="q", partitions=partitions)
    rule, query_id, partition = scope
    assert silenced(alert, Silence(rule=rule, query_id=query_id, partition=partition)) is covered


def statuses(receiver):
    return [(body["status"], body["alert"]["partitions"]) for _, body in receiver.received]


def silence_stall(engine, now_ms):
    with so.Session(engine, expire_on_commit=False) as session:
        return silence(
            session,
            rule="partition_stalled",
            query_id=None,
            partition=None,
            until_ms=now_ms + 3_600_000,
            now_ms=now_ms,
            by="ops",
        )


def lift(engine, made, now_ms):
    with so.Session(engine) as session:
        lift_silence(session, made.id, now_ms)


def test_an_alert_that_fired_during_a_silence_is_told_when_the_silence_ends(engine, receiver):
    rules = rules_with(Receiver("ops", "webhook", receiver.url))
    stalled(engine)
    made = silence_stall(engine, at(20))
    evaluate_at(engine, rules, 26)
    evaluate_at(engine, rules, 27)
    assert deliver_due(engine, rules.receivers, at(27), descriptions=descriptions()) == [], (
        "silenced"
    )
    lift(engine, made, at(28))
    evaluate_at(engine, rules, 28)
    evaluate_at(engine, rules, 29)
    deliver_due(engine, rules.receivers, at(29), descriptions=descriptions())
    assert statuses(receiver) == [("firing", ["t/1"])], "told once the silence ended, once"
    moves_again(engine)
    evaluate_at(engine, rules, 31)
    deliver_due(engine, rules.receivers, at(31), descriptions=descriptions())
    assert statuses(receiver) == [("firing", ["t/1"]), ("resolved", ["t/1"])]


def test_a_resolved_alert_is_told_to_whoever_heard_it_fire_even_under_a_silence(engine, receiver):
    ops = Receiver("ops", "webhook", f"{receiver.url}/ops")
    stalled(engine)
    evaluate_at(engine, rules_with(ops), 26)
    deliver_due(engine, [ops], at(26), descriptions=descriptions())
    # A receiver added later hears of what still fires; then a silence starts.
    chat = Receiver("chat", "webhook", f"{receiver.url}/chat")
    evaluate_at(engine, rules_with(ops, chat), 27)
    silence_stall(engine, at(28))
    moves_again(engine)
    evaluate_at(engine, rules_with(ops, chat), 31)
    deliver_due(engine, [ops, chat], at(31), descriptions=descriptions())
    told = [(path, body["status"]) for path, body in receiver.received]
    assert told == [
        ("/ops", "firing"),
        ("/ops", "resolved"),
        ("/chat", "firing"),
        ("/chat", "resolved"),
    ]


def test_an_alert_that_fired_and_resolved_within_a_silence_is_never_told(engine, receiver):
    rules = rules_with(Receiver("ops", "webhook", receiver.url))
    stalled(engine)
    made = silence_stall(engine, at(20))
    evaluate_at(engine, rules, 26)
    moves_again(engine)
    evaluate_at(engine, rules, 31)
    lift(engine, made, at(32))
    evaluate_at(engine, rules, 33)
    assert (
        deliver_due(engine, rules.receivers, at(33), descriptions=descriptions()) == []
        and receiver.received == []
    )
    with so.Session(engine) as session:
        assert session.scalars(sa.select(Delivery)).all() == []


def test_a_sender_reading_while_another_sends_finds_the_delivery_claimed(engine, receiver):
    rules = rules_with(Receiver("ops", "webhook", receiver.url))
    stalled(engine)
    evaluate_at(engine, rules, 26)
    second = []

    def post_while_another_sender_runs(url, message):
        # The second sender reads the queue after the first claimed, before it recorded.
        second.extend(
            deliver_due(engine, rules.receivers, at(26), http_post, descriptions=descriptions())
        )
        return http_post(url, message)

    first = deliver_due(
        engine, rules.receivers, at(26), post_while_another_sender_runs, descriptions=descriptions()
    )
    assert [a.ok for a in first] == [True] and second == []
    assert statuses(receiver) == [("firing", ["t/1"])]
    with so.Session(engine) as session:
        assert session.scalars(sa.select(Delivery)).one().attempts == 1


def test_a_delivery_whose_sender_died_mid_send_is_taken_over_after_the_claim(engine, receiver):
    rules = rules_with(Receiver("ops", "webhook", receiver.url))
    stalled(engine)
    evaluate_at(engine, rules, 26)

    def die(url, message):
        raise SystemExit("the sender's process ends")

    with pytest.raises(SystemExit):
        deliver_due(engine, rules.receivers, at(26), die, descriptions=descriptions())
    assert (
        deliver_due(engine, rules.receivers, at(26) + CLAIM_MS - 1, descriptions=descriptions())
        == []
    )
    [attempt] = deliver_due(engine, rules.receivers, at(26) + CLAIM_MS, descriptions=descriptions())
    assert attempt.ok and statuses(receiver) == [("firing", ["t/1"])]


@pytest.mark.parametrize(
    "status, given_up", [(400, True), (404, True), (429, False), (408, False), (500, False)]
)
def test_a_refusal_for_good_is_final_and_the_next_delivery_goes_on(
    engine, receiver, status, given_up
):
    rules = rules_with(Receiver("ops", "webhook", receiver.url))
    stalled(engine)
    evaluate_at(engine, rules, 26)
    moves_again(engine)
    evaluate_at(engine, rules, 31)
    receiver.failures_left, receiver.failure_status = 1, status
    attempts = deliver_due(engine, rules.receivers, at(31), descriptions=descriptions())
    assert [a.status_code for a in attempts] == ([status, 204] if given_up else [status])
    with so.Session(engine) as session:
        first = session.scalars(sa.select(Delivery).order_by(Delivery.id)).first()
        assert (first.abandoned_at_ms is not None) is given_up
    if not given_up:
        deliver_due(engine, rules.receivers, at(32), descriptions=descriptions())
        assert statuses(receiver) == [("firing", ["t/1"]), ("resolved", ["t/1"])]


def test_of_two_senders_that_read_the_same_delivery_only_one_claims_it(engine):
    rules = rules_with(Receiver("ops", "webhook", "http://127.0.0.1:9/"))
    stalled(engine)
    evaluate_at(engine, rules, 26)
    with so.Session(engine) as one, so.Session(engine) as other:
        # Both read the queue before either claims: the same attempt count in each.
        mine, theirs = (s.scalars(sa.select(Delivery)).one() for s in (one, other))
        assert (mine.attempts, theirs.attempts) == (0, 0)
        assert notify._claim(one, mine, at(26)) is True
        assert notify._claim(other, theirs, at(26)) is False
    with so.Session(engine) as session:
        assert session.scalars(sa.select(Delivery)).one().attempts == 1


def test_a_resolved_alert_is_told_even_when_the_evaluator_names_no_receiver(engine, receiver):
    ops = Receiver("ops", "webhook", receiver.url)
    stalled(engine)
    evaluate_at(engine, rules_with(ops), 26)
    moves_again(engine)
    evaluate_at(engine, rules_with(), 31)  # another process, with rules naming nobody
    deliver_due(engine, [ops], at(31), descriptions=descriptions())
    assert statuses(receiver) == [("firing", ["t/1"]), ("resolved", ["t/1"])]


def test_a_long_pass_leaves_the_rest_to_the_next_rather_than_claim_too_late(
    engine, receiver, monkeypatch
):
    # Half the claim, 1 s, leaves a loaded machine's store the time to claim the first.
    monkeypatch.setattr(notify, "CLAIM_MS", 2_000)
    rules = rules_with(Receiver("ops", "webhook", receiver.url))
    stalled(engine)
    evaluate_at(engine, rules, 26)
    moves_again(engine)
    evaluate_at(engine, rules, 31)

    def slow_post(url, message):
        time.sleep(1.1)  # past half the claim: nothing more is claimed in this pass
        return http_post(url, message)

    assert (
        len(deliver_due(engine, rules.receivers, at(31), slow_post, descriptions=descriptions()))
        == 1
    )
    assert (
        len(deliver_due(engine, rules.receivers, at(31), slow_post, descriptions=descriptions()))
        == 1
    )
    assert statuses(receiver) == [("firing", ["t/1"]), ("resolved", ["t/1"])]


def test_a_sender_whose_claim_ran_out_leaves_the_delivery_to_the_one_that_took_it_over(
    engine, receiver
):
    rules = rules_with(Receiver("ops", "webhook", receiver.url))
    stalled(engine)
    evaluate_at(engine, rules, 26)
    with so.Session(engine, expire_on_commit=False) as late:
        mine = late.scalars(sa.select(Delivery)).one()
        assert notify._claim(late, mine, at(26))
        # The claim runs out mid-send; another sender takes the delivery over and sends it.
        [taken] = deliver_due(
            engine, rules.receivers, at(26) + CLAIM_MS, descriptions=descriptions()
        )
        assert taken.ok
        notify._attempt(late, mine, receiver.url, {}, at(26), lambda url, message: Sent(503))
    with so.Session(engine) as session:
        delivery = session.scalars(sa.select(Delivery)).one()
        assert (delivery.attempts, delivery.delivered_at_ms) == (2, at(26) + CLAIM_MS)
        assert delivery.next_attempt_at_ms == at(26) + CLAIM_MS + 2_000, (
            "the late sender changed nothing"
        )


@pytest.mark.parametrize(
    "status, ok, refused",
    [
        (200, True, False),
        (204, True, False),
        (301, False, False),
        (400, False, True),
        (404, False, True),
        (408, False, False),
        (425, False, False),
        (429, False, False),
        (500, False, False),
        (None, False, False),
    ],
    ids=[
        "ok",
        "no-content",
        "redirect",
        "bad-request",
        "not-found",
        "timeout",
        "too-early",
        "too-many",
        "server-error",
        "unreachable",
    ],
)
def test_what_an_answer_means_for_the_delivery(status, ok, refused):
    sent = Sent(status)
    assert (sent.ok, sent.refused) == (ok, refused)

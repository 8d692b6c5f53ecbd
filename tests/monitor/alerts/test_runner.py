"""The evaluator on a schedule: exactly one of several evaluates; rules files reloaded safely."""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from monitor.alerts.runner import LEASE, AlertRunner, now_ms
from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import Lease
from monitor.store.signals.leases import acquire, release
from tests.support.alert_scenarios import RULES, at, rewrite, stalled
from tests.support.waiting import wait_until


def test_a_lease_has_one_holder_until_it_expires(engine):
    assert acquire(engine, "job", "a", 1_000, 500)
    assert not acquire(engine, "job", "b", 1_200, 500), "a holds it"
    assert acquire(engine, "job", "a", 1_400, 500), "a renews it"
    assert not acquire(engine, "job", "b", 1_899, 500)
    assert acquire(engine, "job", "b", 1_900, 500), "a's lease ran out: b takes over"
    assert not acquire(engine, "job", "a", 2_000, 500)
    release(engine, "job", "b")
    assert acquire(engine, "job", "a", 2_000, 500), "b gave it up"


def test_of_many_processes_asking_at_once_exactly_one_gets_the_lease(database_url):
    engines = [create_engine(database_url) for _ in range(8)]
    start = threading.Barrier(len(engines), timeout=30)

    def ask(index, engine):
        start.wait()
        return acquire(engine, LEASE, f"worker-{index}", 5_000, 30_000)

    # Each asker's own answer: one that raised fails the test here rather than counting as
    # a loser.
    try:
        with ThreadPoolExecutor(len(engines)) as pool:
            answers = list(pool.map(ask, range(len(engines)), engines, timeout=60))
    finally:
        for engine in engines:
            engine.dispose()
    assert sorted(answers) == [False] * 7 + [True]


def test_of_two_runners_only_the_lease_holder_evaluates(engine):
    stalled(engine)
    first, second = (AlertRunner(engine, clock=lambda: at(26)) for _ in range(2))
    events = first.run_once()
    assert [e.transition for e in events] == ["pending"]
    assert second.run_once() is None
    assert first.run_once() == [], "the holder goes on, and the alert does not fire twice"


def test_a_runner_hands_the_lease_on_when_stopped(engine):
    # A lease of 3 x 10 minutes: the second runner gets it only if the first gives it up.
    first, second = AlertRunner(engine, interval_s=600), AlertRunner(engine, interval_s=600)
    stop = threading.Event()
    thread = threading.Thread(target=first.run, args=(stop,))
    thread.start()
    wait_until(lambda: first.holding, 10, "the first runner to take the lease")
    assert second.run_once() is None
    stop.set()
    thread.join(10)
    assert not thread.is_alive()
    assert second.run_once() == []


def test_a_failing_pass_is_logged_and_the_runner_goes_on(engine, caplog):
    runner = AlertRunner(engine)

    def broken():
        raise RuntimeError("a receiver answered nonsense")

    runner._pass(broken)
    assert "a pass failed" in caplog.text
    assert runner.run_once() == []


def test_a_changed_rules_file_is_used_and_a_bad_one_is_not(engine, tmp_path):
    path = tmp_path / "rules.yml"
    path.write_text(RULES)
    runner = AlertRunner(engine, path)
    assert runner.rules.for_query("q")["partition_stalled"].timing.for_ms == 3_600_000
    rewrite(path, "rules:\n  partition_stalled: {for: soon}\n", 1)
    runner.reload_rules()
    assert "line 2: for must be a duration" in runner.rules_error
    assert runner.rules.for_query("q")["partition_stalled"].timing.for_ms == 3_600_000, "kept"
    rewrite(path, "rules:\n  partition_stalled: {for: 5s}\n", 2)
    runner.reload_rules()
    assert runner.rules_error is None
    assert runner.rules.for_query("q")["partition_stalled"].timing.for_ms == 5_000


def test_a_bad_rules_file_at_start_is_an_error(engine, tmp_path):
    path = tmp_path / "rules.yml"
    path.write_text("rules:\n  no_such_rule: {}\n")
    with pytest.raises(ValueError, match="line 2: no rule named 'no_such_rule'"):
        AlertRunner(engine, path)


def test_a_rules_file_replaced_by_a_fifo_is_refused_and_evaluation_goes_on(engine, tmp_path):
    """The issue's probe: a FIFO that nothing writes to, in place of the rules file, hung the
    evaluator for good (the lease stopped, no error, not recovered once the file was back)."""
    path = tmp_path / "rules.yml"
    path.write_text(RULES)
    runner = AlertRunner(engine, path, interval_s=0.05)
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(stop,), daemon=True)
    thread.start()

    def evaluated_since(moment_ms):
        with engine.connect() as connection:
            done_at = connection.scalar(sa.select(Lease.done_at_ms).where(Lease.name == LEASE))
        return done_at is not None and done_at > moment_ms

    try:
        path.unlink()
        os.mkfifo(path)
        replaced_at = now_ms()
        wait_until(
            lambda: runner.rules_error and evaluated_since(replaced_at),
            10,
            "a pass that refuses the FIFO and evaluates",
        )
        assert runner.rules_error == f"{path}: is a FIFO, not a regular file"
        assert runner.rules.for_query("q")["partition_stalled"].timing.for_ms == 3_600_000, "kept"

        path.unlink()
        rewrite_at = now_ms()
        path.write_text("rules:\n  partition_stalled: {for: 5s}\n")
        wait_until(
            lambda: runner.rules_error is None and evaluated_since(rewrite_at),
            10,
            "the restored file to be read",
        )
        assert runner.rules.for_query("q")["partition_stalled"].timing.for_ms == 5_000
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()

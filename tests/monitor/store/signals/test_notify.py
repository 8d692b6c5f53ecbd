"""ChangeSignal: woken by another connection's commit (PostgreSQL's NOTIFY, SQLite's data
version), otherwise it waits out its timeout; it never creates a store or stops its caller."""

import threading
import time

import sqlalchemy.orm as so

from monitor.collect.progress import parse_progress
from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import Query
from monitor.store.signals.notify import ChangeSignal, announce
from monitor.store.write.writes import write_event
from tests.support.progress import progress_doc

LONG_S = 30.0


def waiting(signal):
    """`signal.wait` for LONG_S in a thread: a function that joins it and gives its answer,
    and the thread's stopping event."""
    answer = {}
    stopping = threading.Event()
    thread = threading.Thread(target=lambda: answer.update(woken=signal.wait(LONG_S, stopping)))
    thread.start()

    def joined():
        thread.join(LONG_S + 5)
        return answer["woken"]

    return joined, stopping


def test_a_commit_by_another_connection_wakes_it(engine):
    signal = ChangeSignal(lambda: engine)
    try:
        assert signal.wait(0.05, threading.Event()) is False  # connected; nothing new yet
        woken, _ = waiting(signal)
        write_event(engine, parse_progress(progress_doc()))
        assert woken() is True, "woken by the commit, not after LONG_S"
        assert signal.wait(0.2, threading.Event()) is False, "one commit wakes it once"
    finally:
        signal.close()


def test_a_rolled_back_write_does_not_wake_it(engine):
    signal = ChangeSignal(lambda: engine)
    try:
        signal.wait(0.05, threading.Event())
        with so.Session(engine) as session, session.begin():
            session.add(Query(id="q", run_id="r", status="active", updated_at_ms=0))
            session.flush()
            announce(session)
            session.rollback()
        assert signal.wait(0.5, threading.Event()) is False
    finally:
        signal.close()


def test_stopping_ends_the_wait(engine):
    signal = ChangeSignal(lambda: engine)
    try:
        woken, stopping = waiting(signal)
        started = time.monotonic()
        stopping.set()
        assert woken() is False
        assert time.monotonic() - started < LONG_S
    finally:
        signal.close()


def test_a_missing_store_is_waited_out_and_never_created(tmp_path):
    path = tmp_path / "moved-away.db"
    engine = create_engine(f"sqlite:///{path}", may_create=False)
    signal = ChangeSignal(lambda: engine)
    assert signal.wait(0.1, threading.Event()) is False
    assert not path.exists()
    signal.close()

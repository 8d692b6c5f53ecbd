"""The server's background tasks: started once, stopped promptly, outliving a failed pass."""

import logging
import threading

import pytest
import sqlalchemy.exc as sa_exc

from tests.support.waiting import wait_until
from web import create_app
from web.background.tasks import Periodic, Task

log = logging.getLogger("tests.periodic")


@pytest.fixture(autouse=True)
def bound_socketio(tmp_path):
    """An app binds the Socket.IO server that starts the tasks; nothing here uses its store."""
    return create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'wmon.db'}"})


def periodic(work, every=0.01):
    return Periodic(work, lambda: every, log, cannot="cannot use it", failed="a pass failed")


def test_a_task_starts_once_however_many_callers_ask():
    runs = []
    task = Task(lambda stopping: (runs.append(1), stopping.wait()))
    callers = [threading.Thread(target=task.start) for _ in range(8)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    task.stop()
    assert runs == [1]


def test_stopping_ends_a_long_wait_between_passes():
    threads = []
    task = periodic(lambda: threads.append(threading.current_thread()), every=3600)
    task.start()
    wait_until(lambda: threads, 5, "the first pass")
    task.stop()
    # stop() waits 5 s at most: the task has ended only if its hour's wait was cut short.
    assert len(threads) == 1 and not threads[0].is_alive()


def test_a_failed_pass_is_logged_and_the_next_one_still_comes(caplog):
    outcomes = [
        sa_exc.OperationalError("SELECT 1", {}, Exception("the store is down\nmore")),
        RuntimeError("boom"),
    ]
    done = []

    def work():
        if outcomes:
            raise outcomes.pop(0)
        done.append(1)

    task = periodic(work)
    with caplog.at_level(logging.WARNING, logger="tests.periodic"):
        task.start()
        wait_until(lambda: done, 5, "a pass after the failed ones")
        task.stop()
    assert [(r.levelno, r.getMessage(), bool(r.exc_info)) for r in caplog.records] == [
        (logging.WARNING, "cannot use it: the store is down", False),
        (logging.ERROR, "a pass failed", True),
    ]

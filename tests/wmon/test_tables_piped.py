"""`wmon` run as a program: a pipe gets every row whole, a terminal gets rows cut to its width."""

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

import pytest
import sqlalchemy as sa

from monitor.store.schema.models import AlertRow
from tests.support.alert_scenarios import stalled
from wmon.main import main

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

# What an alert on a production job can say: a long name and the partitions it covers.
MESSAGE = (
    "partitions telemetry.scooters.eu-west-1/0, telemetry.scooters.eu-west-1/1 and "
    "telemetry.scooters.eu-west-1/2 of spark_catalog.analytics.scooter_offline_events_by_region "
    "have not advanced for 5 min 2 s"
)


@pytest.fixture
def store(engine, database_url, capsys):
    """A store whose firing alert has a 200-character message."""
    stalled(engine)
    assert main(["alerts", "run", "--once", "--database-url", database_url]) == 0
    capsys.readouterr()
    with engine.begin() as connection:
        firing = sa.update(AlertRow).where(AlertRow.state == "firing")
        connection.execute(firing.values(message=MESSAGE))
    return database_url


def wmon(*argv: str, columns: str | None = None, **streams) -> subprocess.Popen:
    """`wmon ARGV` in a fresh interpreter, with `COLUMNS` set or not."""
    env = {name: value for name, value in os.environ.items() if name != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.Popen([sys.executable, "-m", "wmon", *argv], env=env, **streams)


def piped(*argv: str, columns: str | None = None) -> str:
    """What `wmon ARGV` writes into a pipe."""
    done = wmon(*argv, columns=columns, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = done.communicate(timeout=60)
    assert (done.returncode, err) == (0, b"")
    return out.decode()


def on_a_terminal(*argv: str, width: int) -> list[str]:
    """The lines `wmon ARGV` writes on a terminal `width` columns wide."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, width, 0, 0))
    running = wmon(*argv, stdout=follower, stderr=subprocess.PIPE)
    os.close(follower)
    written = b""
    # The terminal's end reads EIO once the program has exited and closed it.
    while chunk := _read(leader):
        written += chunk
    os.close(leader)
    assert running.wait(timeout=60) == 0
    return written.decode().splitlines()


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65_536)
    except OSError:
        return b""


@pytest.mark.parametrize("columns", [None, "80"], ids=["no COLUMNS", "COLUMNS=80"])
def test_a_pipe_gets_the_whole_message(store, columns):
    assert len(MESSAGE) == 200
    out = piped("alerts", "--database-url", store, columns=columns)
    [row] = [line for line in out.splitlines() if "firing" in line]
    assert row.endswith(f"  {MESSAGE}")
    assert "…" not in out


def test_a_terminal_gets_the_message_cut_to_its_width(store):
    lines = on_a_terminal("alerts", "--database-url", store, width=140)
    assert max(map(len, lines)) == 140
    [row] = [line for line in lines if "firing" in line]
    shown = row.rsplit("  ", 1)[1]
    assert shown.endswith("…") and MESSAGE.startswith(shown[:-1])
    # The widest text column was cut: the query's name, narrower, is whole.
    assert "  telemetry_windows  " in row


def test_a_terminal_gets_the_whole_message_with_wide(store):
    lines = on_a_terminal("alerts", "--wide", "--database-url", store, width=100)
    [row] = [line for line in lines if "firing" in line]
    assert row.endswith(f"  {MESSAGE}")

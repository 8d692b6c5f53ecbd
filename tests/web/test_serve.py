"""`wmon serve`: its arguments, its errors, and a real server answering the API."""

import json
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest

from monitor.store.write.writes import write_event
from tests.support.network import closed_port
from tests.support.progress import batch_event
from tests.support.waiting import wait_until
from wmon import serve
from wmon.main import main


def get_json(url):
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


def test_serve_answers_the_api_until_interrupted(engine, database_url):
    write_event(engine, batch_event("q", 0, 1_795_316_400_000, name="orders"))
    port = closed_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wmon",
            "serve",
            "--port",
            str(port),
            "--database",
            database_url,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout.readline().startswith(f"wmon: dashboard on http://127.0.0.1:{port}/")

        def answer():
            try:
                return get_json(f"http://127.0.0.1:{port}/api/queries")
            except OSError:
                return None

        body = wait_until(answer, 15, "wmon serve to answer")
        assert [(q["id"], q["name"]) for q in body["queries"]] == [("q", "orders")]
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=15) == 0  # Werkzeug stops quietly on Ctrl-C


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "0"], "argument --port: must be between 1 and 65535, not 0"),
        (["--port", "65536"], "argument --port: must be between 1 and 65535, not 65536"),
        (["--port", "http"], "argument --port: must be a whole number, not 'http'"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(capsys, args, message):
    with pytest.raises(SystemExit) as exit_:
        main(["serve", *args])
    assert exit_.value.code == 2
    [line] = capsys.readouterr().err.splitlines()
    assert message in line


def test_a_missing_store_exits_1_with_one_line(capsys, tmp_path):
    assert main(["serve", "--database", f"sqlite:///{tmp_path / 'none.db'}"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("wmon: error: no store at ")


def test_an_unmigrated_store_exits_1_with_one_line(capsys, empty_database_url):
    if empty_database_url.startswith("sqlite"):
        open(empty_database_url.removeprefix("sqlite:///"), "w").close()  # a file, no schema
    assert main(["serve", "--database-url", empty_database_url]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("wmon: error: store ") and "is not migrated" in line


@pytest.fixture
def store(tmp_path, capsys):
    """The URL of a migrated SQLite store: what serve opens before it listens."""
    url = f"sqlite:///{tmp_path / 'wmon.db'}"
    assert main(["db", "upgrade", "--database-url", url]) == 0
    capsys.readouterr()
    return url


@pytest.fixture
def listening_port():
    """A local port another program listens on."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield other.getsockname()[1]


def test_a_port_in_use_is_one_error_line_before_any_announcement(capsys, store, listening_port):
    assert main(["serve", "--port", str(listening_port), "--database", store]) == 1
    assert capsys.readouterr() == (
        "",
        f"wmon: error: cannot listen on 127.0.0.1:{listening_port}: Address already in use\n",
    )


LONG_LABEL = "a" * 64 + ".example"


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("no-such-host.invalid", "cannot listen on no-such-host.invalid:{port}: "),
        ("192.0.2.1", "cannot listen on 192.0.2.1:{port}: Cannot assign requested address"),
        ("::ffff:zz", "cannot listen on [::ffff:zz]:{port}: "),
        (LONG_LABEL, f"cannot listen on {LONG_LABEL}:{{port}}: encoding with 'idna' codec failed"),
    ],
    ids=["unknown name", "not this machine's", "malformed IPv6", "label too long for IDNA"],
)
def test_a_bad_host_is_one_error_line_before_any_announcement(capsys, store, host, reason):
    port = closed_port()
    assert main(["serve", "--host", host, "--port", str(port), "--database", store]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    [line] = err.splitlines()
    assert line.startswith(f"wmon: error: {reason.format(port=port)}"), line


def test_the_host_it_serves_and_the_configured_names_are_allowed(capsys, store, monkeypatch):
    import web

    served = []
    monkeypatch.setenv("WMON_ALLOWED_HOSTS", "dash.example.com")
    monkeypatch.setattr(serve, "check_address", lambda host, port: None)
    monkeypatch.setattr(web.socketio, "run", lambda app, **address: served.append((app, address)))
    argv = ["serve", "--host", "Monitor.Internal", "--port", "8123", "--database", store]
    assert main(argv) == 0
    [(app, address)] = served
    assert address == {"host": "Monitor.Internal", "port": 8123, "allow_unsafe_werkzeug": True}
    assert {"monitor.internal", "dash.example.com", "localhost"} <= app.config["ALLOWED_HOSTS"]
    assert capsys.readouterr().out.startswith("wmon: dashboard on http://Monitor.Internal:8123/")

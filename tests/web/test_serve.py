"""`wmon serve`: its arguments, its errors, and a real server answering the API."""

import json
import signal
import subprocess
import sys
import urllib.request

import pytest

from monitor.store.writes import write_event
from tests.helpers import closed_port, wait_until
from tests.web_events import batch_event
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
        (["--port", "0"], "argument --port: must be at least 1, not 0"),
        (["--port", "65536"], "argument --port: must be at most 65535, not 65536"),
        (["--port", "http"], "argument --port: not a whole number: 'http'"),
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

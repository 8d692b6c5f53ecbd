"""Every `wmon … --json` output against its JSON Schema (web/schemas/cli/), from a store in
many states at once (tests/support/store_states.py): each command run for every query."""

import argparse
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.store.schema.engine import create_engine
from tests.support.schemas import INDEX, check
from tests.support.store_states import ORDERS, TELEMETRY, fill
from wmon.main import build_parser, main

# The commands that read one query, run for every query; then with options, for some.
PER_QUERY = ("batches", "partitions", "state", "timers", "advise")
WITH_OPTIONS = [
    ("batches", ORDERS, "--limit", "3"),
    ("partitions", ORDERS, "--batch", "2"),
    # Before the batches kept: read from the per-minute rollups.
    ("advise", TELEMETRY, "--from", "2026-11-22T03:00:00Z", "--to", "2026-11-22T03:00:30Z"),
]


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sqlite_template: Path) -> str:
    """The URL of a SQLite store in every state (the API's schema tests hold PostgreSQL's
    answers too); no other store or rules file in the environment."""
    for name in ("WMON_DATABASE_URL", "WMON_ALERT_RULES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WMON_HOME", str(tmp_path / "default-home"))
    shutil.copyfile(sqlite_template, tmp_path / "wmon.db")
    url = f"sqlite:///{tmp_path / 'wmon.db'}"
    engine = create_engine(url)
    fill(engine)
    engine.dispose()
    return url


def json_commands(parser: argparse.ArgumentParser, words: str = "wmon") -> Iterator[str]:
    """Each command of `parser`, its sub-commands' included, that takes --json, as the index
    names it: 'wmon alerts --json'."""
    if "--json" in parser._option_string_actions:
        yield f"{words} --json"
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                yield from json_commands(command, f"{words} {name}")


def test_every_command_with_json_output_has_a_schema() -> None:
    """A command given --json without a schema (and a line in the index) fails here."""
    assert set(json_commands(build_parser())) == set(INDEX["cli"])


class Cli:
    """`wmon` in-process: each --json output is held to its command's schema."""

    def __init__(self, capsys: pytest.CaptureFixture[str], url: str) -> None:
        self.capsys, self.url, self.ran = capsys, url, set()

    def run(self, command: str, *argv: str) -> list:
        """The JSON a command prints, checked."""
        status = main([command, *argv, "--json", "--database-url", self.url])
        out, err = self.capsys.readouterr()
        assert status == 0, err
        printed = json.loads(out)
        name = f"wmon {command} --json"
        check(printed, INDEX["cli"][name], " ".join(["wmon", command, *argv, "--json"]))
        self.ran.add(name)
        return printed


def test_every_json_output_is_as_its_schema_says(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli(capsys, store)
    queries = cli.run("queries")
    for query in [row["id"] for row in queries if row["status"] != "error"]:
        for command in PER_QUERY:
            cli.run(command, query)
    for command, *argv in WITH_OPTIONS:
        cli.run(command, *argv)
    alerts = cli.run("alerts", "--all") + cli.run("alerts")
    rejected = cli.run("rejected")
    assert cli.ran == set(INDEX["cli"]), "every command with a schema printed JSON"
    assert {row["status"] for row in queries} >= {"error", "failed", "terminated"}
    assert {row["state"] for row in alerts} >= {"pending", "firing", "resolved"}
    assert {row["origin"] for row in rejected} == {"app-1", None}

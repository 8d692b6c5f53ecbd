"""`wmon` starts light: building its parser, `--help` and `--version` import no store, web app,
pandas or Spark; each command's implementation is imported only when it runs."""

import argparse
from collections.abc import Iterator
from importlib.metadata import version
from typing import Any

import pytest

from tests.support.imports import loaded_after
from wmon.main import build_parser, implementation, main

# What only a command's implementation may import.
HEAVY = ("sqlalchemy", "flask", "pandas", "numpy", "pyspark", "monitor.store", "web")


def heavy_after(code: str) -> list[str]:
    """The heavy packages a fresh interpreter has imported after running `code`."""
    return loaded_after(code, HEAVY)


def test_the_check_sees_a_heavy_import():
    assert {"monitor.store", "sqlalchemy"} <= set(heavy_after("import wmon.queries"))


def test_building_the_parser_imports_nothing_heavy():
    assert heavy_after("from wmon.main import build_parser\nbuild_parser()") == []


def subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[list[str], Any]]:
    """Every command and sub-command's words and parser, depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                for words, found in [([], child), *subcommands(child)]:
                    yield [name, *words], found


COMMANDS = [words for words, _ in subcommands(build_parser())]


@pytest.mark.parametrize(
    "argv", [["--help"], ["--version"], *([*words, "--help"] for words in COMMANDS)], ids=" ".join
)
def test_help_and_version_import_nothing_heavy(argv):
    code = f"from wmon.main import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    ..."
    assert heavy_after(code) == []


def test_every_command_runs_a_function_of_its_module():
    ran = {
        " ".join(words): parser.get_default("func")
        for words, parser in subcommands(build_parser())
        if " ".join(words) != "db"
    }
    assert ran["queries"] == "wmon.queries:queries"
    assert ran["alerts run"] == "wmon.alerts:run_alerts"
    for name in ran.values():
        assert callable(implementation(name)), name


def test_version_prints_the_installed_packages_on_stdout(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr() == (f"wmon {version('watermark-monitor')}\n", "")

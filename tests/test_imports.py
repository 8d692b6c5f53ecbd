"""Imports stay light where Spark is not run: the dashboard, the store, health, alerts and the
commands that only read the store never load pyspark or pyarrow."""

import pytest

from tests.support.imports import loaded_after

HEAVY = ("pyspark", "pyarrow", "pandas", "py4j")


def heavy_modules_after(code: str) -> list[str]:
    """The heavy packages a fresh interpreter has loaded after running `code`."""
    return loaded_after(code, HEAVY)


@pytest.mark.parametrize(
    "module",
    [
        "monitor",
        "monitor.collect.progress",
        "monitor.collect.writer",
        "monitor.store.write.writes",
        "monitor.store.read.summary",
        "monitor.health.status",
        "monitor.alerts.runner",
        "web",
        "wmon.main",
    ],
)
def test_importing_does_not_load_spark(module):
    assert heavy_modules_after(f"import {module}") == []


def test_the_spark_side_does_load_spark():
    # The check above can tell: the Spark side loads Spark and Arrow.
    assert {"pyspark", "pyarrow"} <= set(heavy_modules_after("import monitor.spark.attach"))


def test_the_public_api_loads_spark_when_first_used():
    loaded = heavy_modules_after("import monitor\nmonitor.attach\nmonitor.instrument")
    assert {"pyspark", "pyarrow"} <= set(loaded)


@pytest.mark.parametrize(
    "arguments",
    [
        ["--help"],
        ["queries", "--help"],
        ["serve", "--help"],
        ["alerts", "run", "--help"],
    ],
    ids=" ".join,
)
def test_help_does_not_load_spark(arguments):
    code = f"from wmon.main import main\ntry:\n    main({arguments!r})\nexcept SystemExit:\n    ..."
    assert heavy_modules_after(code) == []


@pytest.mark.parametrize(
    "arguments",
    [
        ["db", "upgrade"],
        ["queries"],
        ["alerts"],
        ["alerts", "run", "--once"],
    ],
    ids=" ".join,
)
def test_commands_that_read_the_store_do_not_load_spark(arguments, tmp_path):
    store = ["--database-url", f"sqlite:///{tmp_path / 'wmon.db'}"]
    code = (
        "from wmon.main import main\n"
        f"main(['db', 'upgrade', *{store!r}])\n"
        f"assert main([*{arguments!r}, *{store!r}]) == 0"
    )
    assert heavy_modules_after(code) == []


def test_serving_the_dashboard_does_not_load_spark(tmp_path):
    code = (
        "from wmon.main import main\n"
        f"main(['db', 'upgrade', '--database-url', 'sqlite:///{tmp_path / 'wmon.db'}'])\n"
        "from web import create_app\n"
        f"app = create_app({{'DATABASE_URL': 'sqlite:///{tmp_path / 'wmon.db'}'}})\n"
        "assert app.test_client().get('/api/queries').status_code == 200\n"
        "assert app.test_client().get('/').status_code == 200"
    )
    assert heavy_modules_after(code) == []

"""`wmon spark-conf` and `wmon submit`: monitor any Spark job by configuration alone, with the JVM
listener of `jvm/` posting its streaming query events to `wmon serve`'s collector."""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from monitor.config import load_settings
from wmon.options import CliError

LISTENER_CLASS = "wmon.spark.WatermarkListener"
LISTENERS_KEY = "spark.sql.streaming.streamingQueryListeners"
# Settings whose values are lists: a job's own and the listener's are joined, not replaced.
JOINED = ("spark.jars", LISTENERS_KEY)
# spark-submit's options that take no value; every other option is followed by one.
_SUBMIT_FLAGS = {"--verbose", "-v", "--supervise", "--help", "-h", "--version", "--usage-error"}


# The JVM listener and operator, inside this package: `make setup` builds it here in a
# checkout, and the wheel carries it.
PACKAGED_JAR = Path(__file__).resolve().parent / "jars" / "wmon-spark.jar"


def listener_jar() -> Path:
    """The listener's jar: $WMON_LISTENER_JAR, else the one inside this package."""
    configured = os.environ.get("WMON_LISTENER_JAR")
    if configured:
        return Path(configured).expanduser().resolve()
    return PACKAGED_JAR


def built_jar() -> Path:
    """The listener's jar, which must exist."""
    jar = listener_jar()
    if not jar.is_file():
        raise CliError(f"no listener jar at {jar}: run `make setup` to build it")
    return jar


def listener_settings(jar: Path, url: str, token: str | None) -> list[tuple[str, str]]:
    """The Spark settings that load the listener and point it at the collector."""
    settings = [("spark.jars", str(jar)), (LISTENERS_KEY, LISTENER_CLASS), ("spark.wmon.url", url)]
    if token:
        settings.append(("spark.wmon.token", token))
    return settings


def collector_token(args: argparse.Namespace) -> str | None:
    """`--token`, else WMON_INGEST_TOKEN."""
    return args.token if args.token is not None else load_settings().ingest_token


def spark_conf(args: argparse.Namespace) -> None:
    """Print the settings as spark-submit arguments or as spark-defaults.conf lines."""
    settings = listener_settings(built_jar(), args.url, collector_token(args))
    for key, value in settings:
        if args.format == "defaults":
            print(f"{key} {value}")
        elif key == "spark.jars":
            print(f"--jars {shlex.quote(value)}")
        else:
            print(f"--conf {shlex.quote(f'{key}={value}')}")


def submit_job(args: argparse.Namespace) -> None:
    """Run pyspark's spark-submit with the listener's settings before the job's arguments."""
    user_args = list(args.submit_args)
    if user_args[:1] == ["--"]:
        user_args = user_args[1:]
    if not user_args:
        raise CliError("give spark-submit's arguments after `--` (wmon submit -- app.py)")
    settings = listener_settings(built_jar(), args.url, collector_token(args))
    command = [str(spark_submit()), *merged_args(settings, user_args)]
    env = dict(os.environ)
    # A pip-installed pyspark is importable from this Python, not necessarily from `python3`.
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    code = subprocess.run(command, env=env).returncode
    if code != 0:
        raise SystemExit(code)


def spark_submit() -> Path:
    """pyspark's own `bin/spark-submit`."""
    return pyspark_bin("spark-submit", "spark")


def pyspark_bin(name: str, extra: str) -> Path:
    """A launcher in pyspark's own `bin/`, found without importing pyspark; `extra` is the
    package's extra that brings pyspark, named when it is missing."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise CliError(f"pyspark is not installed (pip install 'watermark-monitor[{extra}]')")
    return Path(spec.origin).parent / "bin" / name


def merged_args(settings: list[tuple[str, str]], user_args: Sequence[str]) -> list[str]:
    """`--jars` and `--conf` arguments for the settings, then the job's arguments. spark-submit
    keeps the last value of a setting, so a job's own `--jars` or listener list joins ours."""
    options_end = _options_end(user_args)
    ours = dict(settings)
    rest: list[str] = []
    index = 0
    while index < options_end:
        arg = user_args[index]
        value = user_args[index + 1] if index + 1 < options_end else None
        key, consumed = _setting_of(arg, value)
        if key in JOINED and consumed:
            ours[key] = f"{ours[key]},{consumed[1]}"
            index += consumed[0]
        else:
            rest.append(arg)
            index += 1
    front = ["--jars", ours.pop("spark.jars")]
    front += [arg for key, value in ours.items() for arg in ("--conf", f"{key}={value}")]
    return [*front, *rest, *user_args[options_end:]]


def _setting_of(arg: str, value: str | None) -> tuple[str | None, tuple[int, str] | None]:
    """The setting an option sets and (arguments it spans, its value); `--jars` is spark.jars."""
    if arg == "--jars" and value is not None:
        return "spark.jars", (2, value)
    if arg.startswith("--jars="):
        return "spark.jars", (1, arg.removeprefix("--jars="))
    if arg in ("--conf", "-c") and value is not None and "=" in value:
        key, _, setting = value.partition("=")
        return key, (2, setting)
    if arg.startswith("--conf=") and "=" in arg.removeprefix("--conf="):
        key, _, setting = arg.removeprefix("--conf=").partition("=")
        return key, (1, setting)
    return None, None


def _options_end(args: Sequence[str]) -> int:
    """Where spark-submit's options stop: at the application (jar, .py file or class)."""
    index = 0
    while index < len(args):
        arg = args[index]
        if not arg.startswith("-"):
            return index
        takes_value = arg not in _SUBMIT_FLAGS and "=" not in arg
        index += 2 if takes_value else 1
    return len(args)

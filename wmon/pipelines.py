"""`wmon pipelines`: run pyspark's `spark-pipelines` with the JVM listener in its Spark
Connect server, so that every flow of a Declarative Pipeline is recorded with no change to it.

`spark-pipelines` keeps only the last group of `--conf` settings it is given, and a spec's
`configuration:` is applied to the Connect session, where the listener's settings are static
and refused. What the server does read is `spark-defaults.conf` in `SPARK_CONF_DIR`: this
command writes one, the user's own settings (`$SPARK_CONF_DIR`, else `$SPARK_HOME/conf`) with
the listener's joined in, and names the pipeline (`spark.wmon.pipeline`) so that the
listener records each flow as `pipeline/flow`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from monitor.regular_files import NotRegularFile, open_regular
from wmon.options import CliError
from wmon.submit import (
    JOINED,
    built_jar,
    collector_token,
    listener_settings,
    pyspark_bin,
)

PIPELINE_KEY = "spark.wmon.pipeline"
DEFAULTS_FILE = "spark-defaults.conf"
# Where spark-pipelines looks for a spec when it is given no --spec: the working directory.
SPEC_NAMES = ("spark-pipeline.yaml", "spark-pipeline.yml")


def run_pipelines(args: argparse.Namespace) -> None:
    """Run spark-pipelines with a SPARK_CONF_DIR that loads the listener."""
    user_args = list(args.pipelines_args)
    if user_args[:1] == ["--"]:
        user_args = user_args[1:]
    if not user_args or user_args[0] not in ("run", "dry-run"):
        raise CliError("give spark-pipelines' command: wmon pipelines run [--spec SPEC] …")
    settings = listener_settings(built_jar(), args.url, collector_token(args))
    settings.append((PIPELINE_KEY, pipeline_name(spec_path(user_args))))
    env = dict(os.environ)
    # A pip-installed pyspark is importable from this Python, not necessarily from `python3`.
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    with tempfile.TemporaryDirectory(prefix="wmon-spark-conf-") as conf_dir:
        write_conf_dir(Path(conf_dir), user_conf_dir(env), settings)
        env["SPARK_CONF_DIR"] = conf_dir
        code = subprocess.run([str(spark_pipelines()), *user_args], env=env).returncode
    if code != 0:
        raise SystemExit(code)


def spec_path(args: Sequence[str]) -> Path:
    """The spec spark-pipelines will run: `--spec`'s, else the working directory's."""
    for index, arg in enumerate(args):
        if arg == "--spec" and index + 1 < len(args):
            return Path(args[index + 1])
        if arg.startswith("--spec="):
            return Path(arg.removeprefix("--spec="))
    for name in SPEC_NAMES:
        if Path(name).is_file():
            return Path(name)
    raise CliError(f"no pipeline spec: give --spec, or run where {SPEC_NAMES[0]} is")


def pipeline_name(spec: Path) -> str:
    """The `name:` of a pipeline spec."""
    import yaml

    text = read_text(spec, "the pipeline spec")
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise CliError(f"cannot read the pipeline spec {spec}: {error}") from error
    name = loaded.get("name") if isinstance(loaded, dict) else None
    if not isinstance(name, str) or not name.strip():
        raise CliError(f"the pipeline spec {spec} has no `name`")
    return name.strip()


def user_conf_dir(env: dict[str, str]) -> Path | None:
    """Where Spark would read its configuration from without us, if anywhere."""
    if env.get("SPARK_CONF_DIR"):
        return Path(env["SPARK_CONF_DIR"])
    if env.get("SPARK_HOME"):
        return Path(env["SPARK_HOME"]) / "conf"
    return None


def write_conf_dir(conf_dir: Path, user_dir: Path | None, settings: list[tuple[str, str]]) -> None:
    """Fill `conf_dir` with the user's configuration files and a spark-defaults.conf that adds
    `settings` to theirs (the listener's jar and class joined to any they list)."""
    defaults: list[tuple[str, str]] = []
    if user_dir is not None and user_dir.is_dir():
        for found in user_dir.iterdir():
            if found.name == DEFAULTS_FILE:
                defaults = read_defaults(found)
            elif found.is_file():
                shutil.copy(found, conf_dir / found.name)
    merged = dict(defaults)
    for key, value in settings:
        merged[key] = f"{merged[key]},{value}" if key in JOINED and merged.get(key) else value
    lines = [f"{key} {value}\n" for key, value in merged.items()]
    (conf_dir / DEFAULTS_FILE).write_text("".join(lines), encoding="utf-8")


def read_defaults(path: Path) -> list[tuple[str, str]]:
    """A spark-defaults.conf's settings in order: `key value`, `key=value` or `key: value`
    lines, blank lines and `#` or `!` comments skipped."""
    settings = []
    for line in read_text(path, "the Spark settings").splitlines():
        text = line.strip()
        if not text or text.startswith(("#", "!")):
            continue
        ends = [text.find(separator) for separator in " \t=:" if separator in text]
        split = min(ends, default=len(text))
        value = text[split:].lstrip(" \t")
        if value[:1] in ("=", ":"):
            value = value[1:].lstrip(" \t")
        settings.append((text[:split], value))
    return settings


def spark_pipelines() -> Path:
    """pyspark's own `bin/spark-pipelines`."""
    return pyspark_bin("spark-pipelines", "pipelines")


def read_text(path: Path, what: str) -> str:
    """A user's file as UTF-8 text, or a CliError naming it as `what`: a FIFO or a device is
    refused, never waited on."""
    try:
        with open_regular(path) as file:
            data = file.read()
    except NotRegularFile as error:
        raise CliError(f"cannot read {what} {path}: it {error.reason}") from error
    except OSError as error:
        raise CliError(f"cannot read {what} {path}: {error.strerror or error}") from error
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CliError(f"cannot read {what} {path}: not UTF-8 text") from error

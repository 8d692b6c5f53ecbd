"""Prometheus and Alertmanager (Debian's, as `make setup-tests` installs them) run for tests."""

import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.waiting import wait_until


def installed(program: str, package: str) -> str:
    """The path of `program`; a failure, not a skip, when it is missing."""
    path = shutil.which(program)
    if path is None:
        pytest.fail(
            f"{program} is not installed: `make setup-tests` installs Debian's {package} package"
        )
    return path


@contextmanager
def running(command: list[str], url: str, log: Path) -> Iterator[subprocess.Popen]:
    """`command`, a server of Prometheus' family at `url`, running until the block ends; it
    has started once its /-/ready answers. Its output goes to `log`."""
    with log.open("wb") as output:
        server = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        try:
            wait_until(lambda: _ready(url, server), 60, f"{Path(command[0]).name} to start")
            yield server
        finally:
            server.terminate()
            server.wait(timeout=30)


def _ready(url: str, server: subprocess.Popen) -> bool:
    if server.poll() is not None:
        raise AssertionError(f"{server.args[0]} exited with {server.returncode}")
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False

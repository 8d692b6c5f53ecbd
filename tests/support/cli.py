"""`wmon` commands run in the test's own process: what they return and print."""

import pytest

from wmon.main import main


def run_wmon(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`wmon ARGV…` in this process (its own process would take ~2 s to import what this one
    has): its exit status, and what was printed on stdout and stderr since the last read."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err

"""`python -m benchmarks --fleet` end to end with a tiny fleet: writer processes, `wmon serve` and
its clients on a scratch PostgreSQL database. The figures are measured, so only their presence and
sense are checked, never their size."""

import re

import pytest

from benchmarks import main

NUMBER = r"([\d,]+)"


def test_a_tiny_fleet_is_written_and_pushed_in_full(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--fleet", "3,4", "--fleet-seconds", "2", "--fleet-writers", "2"]
    assert main(args + ["--partitions", "4", "--clients", "2", "--client-processes", "1"]) == 0
    out = capsys.readouterr().out
    for size in (3, 4):
        [line] = [line for line in out.splitlines() if line.startswith(f"  {size} queries: ")]
        stored = re.search(rf"\({NUMBER} of {NUMBER} batches\)", line)
        assert stored and stored.groups() == (str(size * 2), str(size * 2)), line
        # The watched query's two batches, each to both clients.
        pushed = re.search(rf"; {NUMBER} of {NUMBER} deliveries;", line)
        assert pushed and pushed.groups() == ("4", "4"), line
        assert line.endswith(("keeps up", "falls behind"))
    assert re.search(r"^  the largest fleet kept up with: (0|3|4) queries$", out, re.MULTILINE)


def test_fleet_sizes_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--fleet", "10,zero"])
    assert "zero" in capsys.readouterr().err

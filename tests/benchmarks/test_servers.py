"""`python -m benchmarks --servers` end to end with two `wmon serve` sharing the live push on a
scratch PostgreSQL database, a client on each. The figures are measured, so only their presence
and sense are checked, never their size."""

import re

import pytest

from benchmarks import main


def test_two_servers_each_push_every_batch_to_their_client(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--servers", "2", "--clients", "2", "--client-processes", "2", "--live-seconds", "2"]
    assert main(args + ["--partitions", "4"]) == 0
    [line] = [line for line in capsys.readouterr().out.splitlines() if "PostgreSQL:" in line]
    # Two batches, each to both clients, one on each server.
    assert re.search(r"p95 \d+ ms, max \d+ ms; 4 of 4 deliveries;", line), line


def test_the_client_processes_are_spread_evenly_over_the_servers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--servers", "2", "--client-processes", "3"]) == 1
    assert "--client-processes must be a multiple of --servers" in capsys.readouterr().err

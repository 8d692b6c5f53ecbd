"""`python -m benchmarks --senders` end to end with three senders, on a temporary SQLite store
and a scratch PostgreSQL database. The figures are measured, so only their presence and sense
are checked, never their size."""

import re

import pytest

from benchmarks import main

MS = r"p50 \d+ ms, p95 \d+ ms, max \d+ ms"


def test_three_senders_are_answered_and_stored_once_on_both_stores(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--senders", "3"]) == 0
    out = capsys.readouterr().out
    for store in ("SQLite", "PostgreSQL"):
        [line] = [line for line in out.splitlines() if line.startswith(f"  {store}, 3 senders")]
        assert re.search(rf"\(0 answered 503\): POST {MS}; overview during {MS} \(", line), line
        assert re.search(r"\d+ asked, \d+ pushed\)", line), line
        assert re.search(rf"at rest {MS}; 81 of 81 events answered stored, 75 batches", line), line
        assert "MISMATCH" not in line

"""`python -m benchmarks --flood` end to end with a tiny flood, on a temporary SQLite store and a
scratch PostgreSQL database. The figures are measured, so only their presence and sense are
checked, never their size."""

import re

import pytest

from benchmarks import main

SECONDS = r"\d+\.\d\d s"


def test_a_tiny_flood_is_read_and_evaluated_on_both_stores(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--flood", "3"]) == 0
    out = capsys.readouterr().out
    for store in ("SQLite", "PostgreSQL"):
        [line] = [line for line in out.splitlines() if line.startswith(f"  {store}, 3 queries")]
        assert re.search(rf"overview {SECONDS} cold, {SECONDS} warm", line), line
        assert re.search(rf"/metrics {SECONDS} cold, {SECONDS} warm", line), line
        page = rf"the page drawn {SECONDS} cold, {SECONDS} warm \({SECONDS} cold, {SECONDS} warm"
        assert re.search(page, line), line
        # An hour on, each query's no_progress fires and its watermark_age is pending; a
        # second later nothing moves.
        evaluation = rf"evaluation {SECONDS} \(6 transitions\), then {SECONDS} \(0 transitions\)"
        assert re.search(evaluation, line), line

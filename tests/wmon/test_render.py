"""Terminal text from job-supplied strings: control characters escaped, alignment kept."""

import io
import json
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

import wmon.queries
from monitor.collect.progress import parse_progress
from monitor.events import QueryStarted
from monitor.sizes import size
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from monitor.store.write.writes import write_event
from tests.support.progress import progress_doc
from wmon.ingest import Progress
from wmon.main import main
from wmon.render import (
    Column,
    age,
    ago,
    ellipsized,
    pace_text,
    paragraph,
    printable,
    render_table,
    render_view,
    terminal_width,
)

QUERY, RUN = "11111111-1111-1111-1111-111111111111", "run-1"
# 2026-11-22 02:57:30.000 UTC, as epoch ms.
T0 = 1_795_316_250_000
# Clears the screen; the NUL and newline would end or break the row.
NAME = "evil\x1b[2J\x00name\nnext"
# Sets the terminal's title and rings its bell.
TOPIC = "t\x1b]0;pwned\x07\x00\n"

ESCAPES = [
    ("plain", "telemetry_windows", "telemetry_windows"),
    ("escape", "a\x1b[2Jb", "a\\x1b[2Jb"),
    ("nul", "a\x00b", "a\\x00b"),
    ("bell", "a\x07b", "a\\x07b"),
    ("newline, return, tab", "a\nb\rc\td", "a\\nb\\rc\\td"),
    ("delete", "a\x7fb", "a\\x7fb"),
    ("C1 controls", "a\x85b\x9bc", "a\\x85b\\x9bc"),
    ("right-to-left override", "abc\u202edef", "abc\\u202edef"),
    ("line separator", "a\u2028b", "a\\u2028b"),
    ("accents", "café naïve", "café naïve"),
    ("CJK", "水位线", "水位线"),
    ("emoji", "rocket 🚀", "rocket 🚀"),
    ("backslash kept", "C:\\tmp\\x1b", "C:\\tmp\\x1b"),
]


@pytest.mark.parametrize(
    ("text", "expected"), [case[1:] for case in ESCAPES], ids=[case[0] for case in ESCAPES]
)
def test_printable_escapes_controls_only(text: str, expected: str) -> None:
    assert printable(text) == expected


@pytest.mark.parametrize(
    ("ms", "expected_age", "expected_ago"),
    [
        (None, "-", "-"),
        (0, "0 ms", "just now"),
        # Two hosts' clocks are a second apart, either way: not worth saying.
        (-142, "ahead of the clock by 142 ms", "just now"),
        (999, "999 ms", "just now"),
        (7_020_000, "1 h 57 min", "1 h 57 min ago"),
        (-7_020_000, "ahead of the clock by 1 h 57 min", "ahead of the clock by 1 h 57 min"),
        (-4_300, "ahead of the clock by 4.3 s", "ahead of the clock by 4.3 s"),
    ],
    ids=[
        "unknown",
        "now",
        "ahead-within-a-second",
        "behind-within-a-second",
        "behind",
        "ahead",
        "ahead-seconds",
    ],
)
def test_a_negative_age_reads_as_ahead_of_the_clock(
    ms: int | None, expected_age: str, expected_ago: str
) -> None:
    assert (age(ms), ago(ms)) == (expected_age, expected_ago)


COLUMNS = (Column("name", "name"), Column("n", "n"))
ALIGNED = [
    ("escaped", "a\x1bb", "name    n\na\\x1bb  1"),
    ("wide", "水位", "name  n\n水位  1"),
    ("combining accent", "cafe\u0301", "name  n\ncafe\u0301  1"),
]


@pytest.mark.parametrize(
    ("name", "expected"), [case[1:] for case in ALIGNED], ids=[case[0] for case in ALIGNED]
)
def test_a_table_is_aligned_on_what_the_terminal_shows(name: str, expected: str) -> None:
    assert render_table(COLUMNS, [SimpleNamespace(name=name, n=1)]) == expected


CUTS = [
    ("fits", "abcdef", 6, "abcdef"),
    ("cut", "abcdefgh", 6, "abcde…"),
    ("wide characters", "水位线水位线", 7, "水位线…"),
    ("a wide character at the edge", "水位线", 4, "水…"),
    ("combining accent", "cafe\u0301s and more", 6, "cafe\u0301s…"),
    ("an escape", "a\\x1b[2Jb", 5, "a\\x1…"),
]


@pytest.mark.parametrize(
    ("text", "room", "expected"), [case[1:] for case in CUTS], ids=[case[0] for case in CUTS]
)
def test_a_value_too_wide_is_cut_with_an_ellipsis(text: str, room: int, expected: str) -> None:
    assert ellipsized(text, room) == expected


CUT_COLUMNS = (
    Column("id", "id"),
    Column("name", "name", cut=True),
    Column("note", "note", cut=True, extra=True),
)


def test_within_a_width_the_columns_that_may_be_cut_share_what_is_left() -> None:
    rows = [
        SimpleNamespace(id=1, name="short", note="x" * 50),
        SimpleNamespace(id=22, name="水" * 20, note="fine"),
    ]
    # 40 columns less the id's 2 and two gaps of 2: 34, 17 each.
    assert render_table(CUT_COLUMNS, rows, 40).splitlines() == [
        "id  name               note",
        "1   short              xxxxxxxxxxxxxxxx…",
        "22  水水水水水水水水…  fine",
    ]
    # Whole when they fit; the narrower keeps its width, the other has the rest.
    assert render_table(CUT_COLUMNS, rows, 200) == render_table(CUT_COLUMNS, rows)
    assert render_table(CUT_COLUMNS, rows[:1], 40).splitlines()[1] == (
        "1   short  " + "x" * 28 + "…"
    )


def test_a_line_still_too_wide_is_cut_at_its_end() -> None:
    columns = (Column("id", "id"), Column("name", "name", cut=True))
    table = render_table(columns, [SimpleNamespace(id="9" * 30, name="telemetry")], 20)
    assert table.splitlines() == ["id" + " " * 17 + "…", "9" * 19 + "…"]


class Terminal(io.StringIO):
    """Standard output that is a terminal."""

    def isatty(self) -> bool:
        return True


def on_a_terminal(monkeypatch: pytest.MonkeyPatch, columns: int) -> None:
    """Make standard output a terminal `columns` wide (in the test itself: pytest sets its own
    standard output again between a fixture and the test)."""
    monkeypatch.setattr("sys.stdout", Terminal())
    monkeypatch.setenv("COLUMNS", str(columns))


LONG_ROW = SimpleNamespace(id=1, name="n" * 200, note="x")


def test_on_a_terminal_the_default_view_leaves_the_extra_columns_out_and_fits_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    on_a_terminal(monkeypatch, 120)
    [header, line] = render_view(CUT_COLUMNS, [LONG_ROW], wide=False).splitlines()
    assert (header, line) == ("id  name", "1   " + "n" * 115 + "…")
    assert render_view(CUT_COLUMNS, [LONG_ROW], wide=True).splitlines()[1].endswith("n  x")


@pytest.mark.parametrize("columns", ["80", "200"])
def test_off_a_terminal_nothing_is_cut(monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert terminal_width() is None
    [header, line] = render_view(CUT_COLUMNS, [LONG_ROW], wide=False).splitlines()
    assert (header, line) == ("id  name", "1   " + "n" * 200)
    # The prose beside a table is wrapped, never cut.
    assert paragraph("word " * 50) == textwrap.fill("word " * 50, 120)


def test_on_a_terminal_prose_is_wrapped_to_its_width(monkeypatch: pytest.MonkeyPatch) -> None:
    on_a_terminal(monkeypatch, 90)
    assert terminal_width() == 90
    assert paragraph("word " * 50) == textwrap.fill("word " * 50, 90)


WIDEST_FIRST = (
    Column("id", "id"),
    Column("query", "query", cut=True),
    Column("rule", "rule", cut=True),
    Column("message", "message", cut=True),
)
# id 2 and three gaps of 2 leave width − 8 to the text columns: query 12, rule 5, message 40.
TEXT_ROW = SimpleNamespace(id=7, query="q" * 12, rule="stall", message="m" * 40)
WIDEST_CUTS = [
    (65, ("q" * 12, "stall", "m" * 40)),
    (64, ("q" * 12, "stall", "m" * 38 + "…")),
    (42, ("q" * 12, "stall", "m" * 16 + "…")),
    (33, ("q" * 9 + "…", "stall", "m" * 9 + "…")),
    (26, ("q" * 5 + "…", "stall", "m" * 6 + "…")),
]


@pytest.mark.parametrize(("width", "shown"), WIDEST_CUTS, ids=[str(w) for w, _ in WIDEST_CUTS])
def test_the_widest_text_columns_are_cut_first(width: int, shown: tuple[str, ...]) -> None:
    [_, line] = render_table(WIDEST_FIRST, [TEXT_ROW], width).splitlines()
    assert line.split() == ["7", *shown]
    assert len(line) <= width


@pytest.fixture
def hostile_store(tmp_path: Path) -> str:
    """A SQLite store with one query whose name and partition names hold ESC, NUL and a newline
    (SQLite only: PostgreSQL refuses NUL in text)."""
    url = f"sqlite:///{tmp_path / 'wmon.db'}"
    engine = create_engine(url)
    upgrade(engine)
    write_event(engine, QueryStarted(QUERY, RUN, NAME, T0))
    doc = progress_doc(id=QUERY, runId=RUN, batchId=0, timestamp="2026-11-22T02:57:30.500Z")
    doc["name"] = NAME
    for offsets in ("startOffset", "endOffset", "latestOffset"):
        doc["sources"][0][offsets] = {TOPIC: doc["sources"][0][offsets]["telemetry"]}
    write_event(engine, parse_progress(doc))
    engine.dispose()
    return url


def table(*lines: str) -> str:
    return "\n".join(lines) + "\n"


SHOWN_TOPIC = "t\\x1b]0;pwned\\x07\\x00\\n"
# A batch the operator did not measure: records and time lag unknown; its backlogs were there
# at the one batch stored, 30 s before now, with no verdict yet (nor a catch-up); late and
# future unknown.
NOT_MEASURED = "-        -         "
WAITING = ">= 30 s  -         -        -     -"
CLI_TABLES = [
    (
        ["queries"],
        table(
            "name                       health   alerts  heard     last batch  running  spark"
            "   error",
            "evil\\x1b[2J\\x00name\\nnext  healthy  -       30 s ago  0           -        active"
            "  -",
        ),
    ),
    (
        ["partitions", QUERY],
        table(
            "batch  partition                  offset lag  state  records  time lag  behind"
            "   catch-up  verdict  late  future",
            f"0      {SHOWN_TOPIC}/0  4           ok     {NOT_MEASURED}{WAITING}",
            f"0      {SHOWN_TOPIC}/1  0           ok     {NOT_MEASURED}none     now       ok"
            "       -     -",
            f"0      {SHOWN_TOPIC}/2  600         ok     {NOT_MEASURED}{WAITING}",
        ),
    ),
]


@pytest.mark.parametrize(
    ("argv", "expected"), CLI_TABLES, ids=[" ".join(case[0][:1]) for case in CLI_TABLES]
)
def test_names_with_controls_are_escaped_in_tables(
    hostile_store: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    expected: str,
) -> None:
    monkeypatch.setattr(wmon.queries, "now_ms", lambda: T0 + 30_500)
    status = main([*argv, "--database-url", hostile_store])
    out, err = capsys.readouterr()
    assert (status, out, err) == (0, expected, "")
    assert all(line.isprintable() for line in out.splitlines())


@pytest.mark.parametrize(
    ("argv", "field", "expected"),
    [(["queries"], "name", NAME), (["partitions", QUERY], "partition", f"{TOPIC}/0")],
    ids=["queries", "partitions"],
)
def test_json_keeps_names_exact_and_escaped(
    hostile_store: str,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    field: str,
    expected: str,
) -> None:
    status = main([*argv, "--json", "--database-url", hostile_store])
    out, _ = capsys.readouterr()
    assert status == 0
    assert json.loads(out)[0][field] == expected
    assert all(line.isprintable() for line in out.splitlines())


PROBLEMS = [
    ("plain", "log.json:3: not stored", "wmon: log.json:3: not stored\n"),
    ("escape", "log.json:3: bad \x1b[2J line", "wmon: log.json:3: bad \\x1b[2J line\n"),
    ("newline", "bad\nline", "wmon: bad\\nline\n"),
]


@pytest.mark.parametrize(
    ("message", "expected"), [case[1:] for case in PROBLEMS], ids=[case[0] for case in PROBLEMS]
)
def test_ingest_problems_are_one_escaped_line(message: str, expected: str) -> None:
    out = io.StringIO()
    Progress(out).problem(message)
    assert out.getvalue() == expected


def test_an_error_quoting_a_job_is_one_escaped_line(
    hostile_store: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def failing(session: object) -> None:
        raise ValueError(f"cannot read {NAME}")

    monkeypatch.setattr("wmon.queries.list_queries", failing)
    status = main(["queries", "--database-url", hostile_store])
    shown = "evil\\x1b[2J\\x00name\\nnext"
    assert (status, capsys.readouterr().err) == (1, f"wmon: error: cannot read {shown}\n")


def test_a_query_behind_its_trigger_reads_as_one_line() -> None:
    pace = {
        "kind": "ProcessingTime",
        "interval_ms": 5_000,
        "batches": 12,
        "duration_ms": 7_300,
        "slower_batches": 11,
        "behind": True,
        "stage": "addBatch",
        "stage_from_ms": 2_100,
        "stage_to_ms": 6_900,
        "stage_grew": True,
    }
    assert pace_text(pace) == (
        "trigger every 5.0 s; median batch 7.3 s of the last 12, 11 slower: behind the "
        "trigger; addBatch grew from 2.1 s to 6.9 s"
    )
    steady = pace | {"interval_ms": 0, "slower_batches": 0, "behind": None, "stage_grew": False}
    assert pace_text(steady) == (
        "each batch as soon as the last ends; median batch 7.3 s of the last 12; its longest "
        "stage addBatch 6.9 s"
    )
    once = pace | {"kind": "AvailableNow", "interval_ms": None, "duration_ms": None}
    assert pace_text(once) == "trigger AvailableNow; no batch durations in the last five minutes"


@pytest.mark.parametrize(
    ("n", "shown"),
    [
        (None, "-"),
        (0, "0 B"),
        (1023.5, "1024 B"),
        (1024, "1.0 KiB"),
        (12_700, "12.4 KiB"),
        (3 * 1024**3, "3.0 GiB"),
    ],
)
def test_sizes_read_in_the_largest_binary_unit_they_fill(n, shown) -> None:
    assert size(n) == shown

"""The dashboard in a real headless Chromium (Debian's), driven by Playwright, against a real
server on a free port. Each test leaves a screenshot in build/artifacts/."""

import csv
import io
import re
import time

import pytest
import sqlalchemy as sa
import sqlalchemy.orm as so
from playwright.sync_api import expect

import monitor
from monitor.alerts.evaluate import evaluate
from monitor.alerts.rulefile import RuleSet
from monitor.events import BatchRunning, QueryIdle, QueryStarted, QueryTerminated, TimerSnapshot
from monitor.spark.instrument import instrument
from monitor.store.schema.models import Batch
from monitor.store.write.writes import write_event, write_events
from streaming.log import LogRecord, PartitionedLog
from tests.support.pages import SCREEN, assert_not_reloaded, mark_page
from tests.support.paths import ROOT
from tests.support.progress import batch_event
from tests.support.spark_queries import unique_name
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]

SCREENSHOT = ROOT / "docs" / "dashboard.png"
WAIT_MS = 20_000
NOW = (time.time_ns() // 1_000_000) // 1_000 * 1_000
HOSTILE = "<img src=x onerror=alert(1)>"


def rows_text(tab):
    return tab.locator("#queries tbody tr td.name a").all_text_contents()


def write_overview(engine):
    """Three queries through the real write path: healthy (named to sort first by name),
    idle, and one whose partition t/1 has a backlog and has not advanced for 5 minutes."""
    healthy = [
        batch_event("healthy", i, NOW - 30_000 + i * 10_000, name="a_healthy", ends=(i, i))
        for i in range(3)
    ]
    stalled = [
        batch_event("stalled", i, at, name="stalled", ends=(10 * (i + 1), 10), latests=(99, 50))
        for i, at in enumerate((NOW - 300_000, NOW - 150_000, NOW - 10_000))
    ]
    idle = [
        QueryStarted("idle", "run-1", "b_idle", NOW - 200_000),
        batch_event("idle", 0, NOW - 100_000, name="b_idle"),
        QueryIdle("idle", "run-1", NOW - 50_000),
    ]
    write_events(engine, healthy + stalled + idle)


def test_the_overview_lists_a_stalled_query_first_and_updates_live(engine, serve, page):
    write_overview(engine)
    page.goto(serve(CLOCK=lambda: NOW))
    page.wait_for_selector("#queries tbody tr", timeout=WAIT_MS)
    assert rows_text(page) == ["stalled", "b_idle", "a_healthy"]
    first = page.locator("#queries tbody tr").first
    assert first.locator(".badge").text_content() == "stalled"
    assert page.locator("#counts").text_content() == "3 queries: 1 stalled · 1 idle · 1 healthy"
    colours = page.eval_on_selector_all(
        "#queries .badge", "badges => badges.map(b => getComputedStyle(b).backgroundColor)"
    )
    assert len(set(colours)) == 3, f"each status has its own colour: {colours}"
    page.wait_for_selector("#connection.connection-live", timeout=WAIT_MS)

    mark_page(page)
    write_event(engine, QueryTerminated("healthy", "run-1", NOW - 1_000, "boom", "X_ERROR"))
    page.wait_for_function(
        "() => document.querySelector('#queries tbody tr .badge').textContent === 'failed'",
        timeout=WAIT_MS,
    )
    assert rows_text(page) == ["a_healthy", "stalled", "b_idle"]
    assert_not_reloaded(page)
    # Sorted by how far behind: stalled's records have waited since its first batch, 5
    # minutes ago; the others have none waiting and keep their order.
    behind = page.locator("#queries tbody tr").nth(1).locator("td").nth(7)
    assert behind.text_content().startswith("≥ 5 min")
    page.click("#sort-behind")
    assert rows_text(page) == ["stalled", "a_healthy", "b_idle"]
    assert "sort=behind" in page.url


def text_of(tab, selector):
    return tab.locator(selector).text_content()


def chart_points(tab, figure):
    return int(tab.get_attribute(f"#{figure}", "data-points") or 0)


# What uPlot's legend shows, by line label: the values of the point under the cursor.
LEGEND = """(figure) => Object.fromEntries(
    [...document.querySelectorAll(`#${figure} .u-legend tr.u-series`)].map((row) => [
        row.querySelector('.u-label').textContent,
        row.querySelector('.u-value').textContent,
    ]),
)"""


def plotted(tab, figure, end):
    """The values `figure` plots at its "first" or "last" point, as uPlot's legend shows them
    with the cursor there (just inside the plot, clear of the axes), by line label."""
    over = tab.locator(f"#{figure} .u-over")
    box = over.bounding_box()
    x = 2 if end == "first" else box["width"] - 2
    over.hover(position={"x": x, "y": box["height"] / 2})
    return tab.evaluate(LEGEND, figure)


def stored_rows(engine, query_id, batch_id):
    """The input rows the store holds for one batch."""
    with so.Session(engine) as session:
        return session.scalar(
            sa.select(Batch.num_input_rows).where(
                Batch.query_id == query_id, Batch.batch_id == batch_id
            )
        )


@pytest.mark.spark
def test_the_query_page_updates_live_while_a_query_runs(
    spark, database_url, serve, page, log_dir, checkpoint, tmp_path
):
    log = PartitionedLog(log_dir)
    for partition in range(3):
        records = [
            LogRecord(f"scooter-{i}", "{}", NOW - 600_000 + i * 1_000 * (partition + 1))
            for i in range(400)
        ]
        log.append("telemetry", partition, records)
    # Every late record counts: the page must turn lagging within the first few batches.
    rules = tmp_path / "rules.yml"
    rules.write_text("rules:\n  late_records: {count: 0}\n")
    url = serve(ALERT_RULES=rules)
    handle = monitor.attach(spark, database_url)
    source = (
        spark.readStream.format("partitioned_log")
        .option("path", str(log_dir))
        .option("subscribe", "telemetry")
        .option("maxOffsetsPerTrigger", 30)
        .load()
    )
    measured = instrument(source, checkpoint=checkpoint, delay="10 seconds")
    name = unique_name("live")
    query = (
        measured.withWatermark("timestamp", "10 seconds")
        .dropDuplicates(["key", "timestamp"])
        .writeStream.queryName(name)
        .format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        wait_until(lambda: len(query.recentProgress) >= 2, 120, "the query's first batches")
        handle.flush(30)
        page.goto(f"{url}/queries/{name}")
        page.wait_for_function(
            "() => /^\\d+$/.test(document.getElementById('batch-id').textContent)",
            timeout=WAIT_MS,
        )
        page.wait_for_selector("#connection.connection-live", timeout=WAIT_MS)
        first_batch = int(text_of(page, "#batch-id"))
        # The trigger, read from the running query, beside its batches' median duration.
        assert text_of(page, "#trigger").startswith("1.0 s trigger")
        assert text_of(page, "#batch-duration") != "—"
        # Its dropDuplicates keeps a row per key: the state table counts them.
        expect(page.locator("#state-section")).to_be_visible()
        assert text_of(page, "#state tbody td.operator") == "dedupe #0"
        rows = page.locator("#state tbody td.num").first.text_content()
        assert int(rows.replace(",", "")) > 0
        points = {f: chart_points(page, f) for f in ("event-time-chart", "batches-chart")}
        mark_page(page)

        page.wait_for_function(
            "(batch) => Number(document.getElementById('batch-id').textContent) >= batch",
            arg=first_batch + 2,
            timeout=120_000,
        )
        assert_not_reloaded(page)
        for figure, before in points.items():
            assert chart_points(page, figure) > before, f"{figure} got no new points"
        assert text_of(page, "#partitions-batch") == f"batch {text_of(page, '#batch-id')}"
        partitions = page.locator("#partitions tbody td.partition").all_text_contents()
        assert partitions == ["telemetry/0", "telemetry/1", "telemetry/2"]
        # Each batch reads 10 records of each partition; t/2's are 3 s apart and t/0's 1 s, so
        # from batch 1 on t/0's fall behind the watermark that t/2's set: late, within the
        # late window (5 min).
        expect(page.locator("#status")).to_have_text("lagging")
    finally:
        query.stop()
        handle.detach()


# The requests with which a query page loads its charts' history: a page that catches up on
# what it missed over the socket does not make them again.
HISTORY_REQUEST = re.compile(r"/api/queries/[^/?]+/(batches|partitions/history)\?")


def test_the_query_page_catches_up_on_what_it_missed_while_offline(engine, serve, page):
    def write_batch(batch_id):
        at = NOW - 60_000 + batch_id * 1_000
        # t/0 receives three records a batch and reads one: its backlog grows, never empty.
        event = batch_event(
            "q",
            batch_id,
            at,
            name="orders",
            ends=(batch_id, 0),
            latests=(3 * batch_id + 2, 0),
            rows=100 + batch_id,
        )
        write_event(engine, event)

    for batch_id in range(3):
        write_batch(batch_id)
    # The server's clock stays at NOW: minutes later in a long run, a real clock would find
    # the query silent and run its charts on to now, moving the points this test reads.
    page.goto(f"{serve(CLOCK=lambda: NOW)}/queries/orders")
    page.wait_for_selector("#connection.connection-live", timeout=WAIT_MS)
    assert text_of(page, "#batch-id") == "2"
    points = chart_points(page, "batches-chart")
    mark_page(page)
    requests = []
    page.on("request", lambda request: requests.append(request.url))

    page.context.set_offline(True)
    page.wait_for_selector("#connection.connection-reconnecting", timeout=WAIT_MS)
    for batch_id in range(3, 6):
        write_batch(batch_id)
    page.context.set_offline(False)
    page.wait_for_function(
        "() => document.getElementById('batch-id').textContent === '5'", timeout=WAIT_MS
    )
    page.wait_for_selector("#connection.connection-live", timeout=WAIT_MS)
    assert chart_points(page, "batches-chart") == points + 3
    assert page.locator("#partitions tbody td.num").first.text_content() == "5"  # t/0's end
    # The newest batch brought the backlog: t/0 falls behind, and its head has waited since
    # batch 2 (offset 5 arrived between batches 1 and 2).
    assert text_of(page, "#verdict") == "falling behind"
    assert text_of(page, "#catch-up") == "not catching up"
    assert text_of(page, "#behind") not in ("—", "none")
    verdicts = page.locator("#partitions tbody .verdict").all_text_contents()
    assert verdicts == ["falling behind", "ok"]
    assert_not_reloaded(page)
    assert [url for url in requests if HISTORY_REQUEST.search(url)] == [], "reloaded, not caught up"
    # The points it had, and the missed batches added after them.
    ends = {end: plotted(page, "batches-chart", end)["input rows"] for end in ("first", "last")}
    assert ends == {
        "first": str(stored_rows(engine, "q", 0)),
        "last": str(stored_rows(engine, "q", 5)),
    }


def write_hostile(engine):
    sample = ("<script>alert(2)</script>", NOW - 90_000, 7)
    write_events(
        engine,
        [
            QueryStarted("hostile-id", "run-1", HOSTILE, NOW - 100_000),
            batch_event(
                "hostile-id",
                0,
                NOW - 60_000,
                name=HOSTILE,
                event_times={0: (10, NOW - 99_000, NOW - 70_000, 1, [sample])},
            ),
            QueryTerminated("hostile-id", "run-1", NOW - 30_000, "<b>boom</b> in <i>x</i>", "X"),
        ],
    )


def test_a_hostile_query_name_shows_as_text(engine, serve, page):
    write_hostile(engine)
    url = serve(CLOCK=lambda: NOW)
    page.goto(url)
    link = page.get_by_role("link", name=HOSTILE)
    link.wait_for(timeout=WAIT_MS)
    assert link.text_content() == HOSTILE

    link.click()
    page.wait_for_selector("#partitions .sample", timeout=WAIT_MS)
    assert text_of(page, "#query-name") == HOSTILE
    assert page.title() == f"{HOSTILE} · wmon"
    assert text_of(page, "#exception") == "<b>boom</b> in <i>x</i>"
    assert "<script>alert(2)</script> @ " in text_of(page, "#partitions .sample")
    for tag in ("img", "b", "i", "main script"):
        assert page.locator(tag).count() == 0, f"a <{tag}> element was made from data"
    assert page.dialogs == []


def test_a_pipeline_flows_reset_links_its_queries_before_and_after(engine, serve, page):
    flow = "telemetry/spark_catalog.default.readings"
    write_events(
        engine,
        [
            QueryStarted("flow-1", "run-1", flow, NOW - 300_000, pipeline="telemetry"),
            QueryTerminated("flow-1", "run-1", NOW - 250_000),
            QueryStarted("flow-2", "run-2", flow, NOW - 200_000, pipeline="telemetry"),
        ],
    )
    url = serve(CLOCK=lambda: NOW)
    page.goto(f"{url}/queries/flow-2")
    page.wait_for_selector("#reset:not([hidden])", timeout=WAIT_MS)
    assert (
        text_of(page, "#reset").split()
        == (
            "A reset of this pipeline flow (a full refresh) started it here; its history before is"
            " query flow-1"
        ).split()
    )
    page.click("#reset-link")
    page.wait_for_url(f"{url}/queries/flow-1", timeout=WAIT_MS)
    page.wait_for_selector("#reset:not([hidden])", timeout=WAIT_MS)
    assert "its history goes on as query flow-2" in " ".join(text_of(page, "#reset").split())


def write_history(engine, query_id="hist", batches=120):
    """A batch every 30 s over the last hour, three partitions; one late record in each;
    batch i read 100 + i rows."""
    write_events(
        engine,
        [
            batch_event(
                query_id,
                i,
                NOW - 3_600_000 + i * 30_000,
                name="history",
                watermark_ms=NOW - 3_610_000 + i * 30_000,
                ends=(i + 1, 2 * (i + 1), 3 * (i + 1)),
                rows=100 + i,
                event_times={
                    p: (p + 1, NOW - 3_700_000, NOW - 3_600_000 + i * 30_000 - p * 5_000, 1)
                    for p in range(3)
                },
            )
            for i in range(batches)
        ],
    )


def test_the_history_page_loads_a_range_and_exports_csv(engine, serve, page, tmp_path):
    write_history(engine)
    page.goto(f"{serve()}/queries/history/history")
    note = page.locator("#range-note")
    page.wait_for_function(
        "() => document.getElementById('range-note').textContent.includes('120 batches')",
        timeout=WAIT_MS,
    )
    assert "3 partitions" in note.text_content()
    assert note.text_content().endswith("; every batch, partitions at each interval's last batch")
    assert chart_points(page, "event-time-chart") > 0 and chart_points(page, "late-chart") > 0

    page.click("button[data-range='day']")
    page.wait_for_url(re.compile(r"\?range=day$"), timeout=WAIT_MS)
    assert page.get_attribute("button[data-range='day']", "aria-pressed") == "true"
    page.wait_for_function(
        "() => document.getElementById('range-note').textContent.includes('per-minute rollups')",
        timeout=WAIT_MS,
    )
    assert note.text_content().endswith(
        "; from per-minute rollups: each interval's largest lag and any stall"
    )
    assert chart_points(page, "lag-chart") > 0, "the partitions drawn from their minutes"
    # 30 days: the range line gives both ends their dates, the end's today included.
    page.click("button[data-range='month']")
    page.wait_for_url(re.compile(r"\?range=month$"), timeout=WAIT_MS)
    # Past two days the partitions are read from the hours.
    page.wait_for_function(
        "() => / to \\d{4}-\\d\\d-\\d\\d \\d\\d:.*per-hour rollups/.test("
        "document.getElementById('range-note').textContent)",
        timeout=WAIT_MS,
    )
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d to ", note.text_content())
    assert chart_points(page, "batches-chart") > 0, "the query's own charts from its hours"

    # The last 10 minutes, chosen with the date inputs: batches 100 to 119.
    page.fill("input[name=from]", local_input(page, NOW - 600_000 - 1_000))
    page.fill("input[name=to]", local_input(page, NOW))
    page.click("#range button[type=submit]")
    page.wait_for_function(
        "() => document.getElementById('range-note').textContent.includes(' 20 batches')",
        timeout=WAIT_MS,
    )
    # A batch per point: the first and the last plot what the store holds for them.
    ends = {end: plotted(page, "batches-chart", end)["input rows"] for end in ("first", "last")}
    expected = {"first": stored_rows(engine, "hist", 100), "last": stored_rows(engine, "hist", 119)}
    assert ends == {end: str(rows) for end, rows in expected.items()}

    with page.expect_download(timeout=WAIT_MS) as download:
        page.click("#csv")
    saved = tmp_path / "history.csv"
    download.value.save_as(saved)
    lines = list(csv.DictReader(io.StringIO(saved.read_text())))
    assert len(lines) == 20 * 3
    assert {line["batch_id"] for line in lines} == {str(i) for i in range(100, 120)}
    assert {line["partition"] for line in lines} == {"t/0", "t/1", "t/2"}
    assert all(line["late_records"] == "1" for line in lines)


def local_input(tab, ms):
    """A datetime-local value in the browser's own time zone."""
    return tab.evaluate(
        """(ms) => {
            const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
            return d.toISOString().slice(0, 19);
        }""",
        ms,
    )


def test_a_restart_from_an_older_checkpoint_replaces_the_superseded_batches(engine, serve, page):
    def write_batch(batch_id, at_s, start, run_id="run-1"):
        # 10 s apart: the charts' points are the batches, none sharing a downsampling bucket.
        event = batch_event(
            "q",
            batch_id,
            NOW - 120_000 + at_s * 1_000,
            name="orders",
            run_id=run_id,
            starts=(start, 0),
            ends=(start + 10, 0),
        )
        write_event(engine, event)

    for batch_id in range(6):
        write_batch(batch_id, 10 * batch_id, 10 * batch_id)
    page.goto(f"{serve()}/queries/orders")
    page.wait_for_selector("#connection.connection-live", timeout=WAIT_MS)
    assert (text_of(page, "#batch-id"), chart_points(page, "batches-chart")) == ("5", 6)

    # A new run restarted from the checkpoint of batch 2: 3, 4 and 5 superseded.
    write_batch(3, 60, 30, run_id="run-2")
    page.wait_for_function(
        "() => document.getElementById('batch-id').textContent === '3'", timeout=WAIT_MS
    )
    page.wait_for_function(
        "() => document.getElementById('batches-chart').dataset.points === '4'", timeout=WAIT_MS
    )
    assert page.locator("#partitions .badge-rewound").count() == 1, "t/0 starts at 30 again"
    write_batch(4, 70, 40, run_id="run-2")
    page.wait_for_function(
        "() => document.getElementById('batch-id').textContent === '4'", timeout=WAIT_MS
    )
    assert chart_points(page, "batches-chart") == 5
    assert page.locator("#partitions .badge-rewound").count() == 0, "batch 4 moved on"
    assert page.script_errors == []


DASHBOARD = "orders_enriched"
DASHBOARD_ID = "5c0f9a52-7d1e-4b8a-9f36-2e4d7a1b8c90"
FAILED_ID = "0b7e4d19-3a62-4f85-b1c7-9d2e8a5f6c34"
STALL_BATCH = 20
LATE_KEY = "order-{}"


def read(partition, batch_id):
    """Records partition `partition` read in batch `batch_id` of orders_enriched: some 30 a
    second, give or take; none from t/2 after STALL_BATCH."""
    if partition == 2 and batch_id > STALL_BATCH:
        return 0
    return 540 + 20 * partition + (batch_id * 37 + partition * 11) % 13 * 9


def dashboard_batch(i):
    """Batch `i` of orders_enriched, 20 s apart over the last 15 minutes, four partitions of
    topic t: t/2 stops after STALL_BATCH while records pile up behind it; t/1 now and then
    and t/3 in every one of the last batches get late records."""
    at = NOW - 900_000 + i * 20_000
    ends = tuple(sum(read(p, b) for b in range(i + 1)) for p in range(4))
    starts = None if i == 0 else tuple(end - read(p, i) for p, end in enumerate(ends))
    backlog = (40, 25, 6_000 * max(i - STALL_BATCH, 0), 35)
    latests = tuple(end + waiting for end, waiting in zip(ends, backlog, strict=True))
    late = {1: 3 if i >= 30 and i % 4 == 1 else 0, 3: 12 if i >= 36 else 0}
    watermark_ms = None if i == 0 else at - 31_500
    event_times = {}
    for p in range(4):
        if not read(p, i):
            continue
        samples = [(LATE_KEY.format(9_000 + i * 7 + n), at - 95_000, ends[p] - n) for n in (1, 2)]
        event_times[p] = (
            read(p, i),
            at - 28_000,
            at - 1_500 - 700 * p,
            late.get(p, 0),
            samples if late.get(p) else [],
        )
    rows = sum(figures[0] for figures in event_times.values())
    return batch_event(
        DASHBOARD_ID,
        i,
        at,
        name=DASHBOARD,
        watermark_ms=watermark_ms,
        starts=starts,
        ends=ends,
        latests=latests,
        rows=rows,
        rate=rows / 20,
        duration_ms=1_250 + i * 7 % 23 * 40,
        dropped=sum(late.values()),
        event_times=event_times,
        late_watermark_ms=watermark_ms,
    )


def write_dashboard(engine):
    """orders_enriched as the README shows it, and payments_dedup, which failed 4 minutes
    ago. The built-in rules, evaluated a minute apart as the server does, leave five alerts
    live, four of them orders_enriched's: t/2 stalled, late records on t/3 (t/1's few are a
    trickle), the offset lag the stall causes, and the watermark skew, pending."""
    started = QueryStarted(
        DASHBOARD_ID, "run-1", DASHBOARD, NOW - 905_000, "ProcessingTime", 20_000
    )
    write_event(engine, started)
    write_events(engine, [dashboard_batch(i) for i in range(42)])
    write_events(
        engine,
        [
            QueryStarted(FAILED_ID, "run-9f1c", "payments_dedup", NOW - 600_000),
            batch_event(FAILED_ID, 0, NOW - 300_000, name="payments_dedup", run_id="run-9f1c"),
            QueryTerminated(
                FAILED_ID,
                "run-9f1c",
                NOW - 240_000,
                "org.apache.spark.sql.streaming.StreamingQueryException: [STREAM_FAILED] "
                f"Query [id = {FAILED_ID}, runId = 9f1c] terminated with exception: Job "
                "aborted due to stage failure: Task 3 in stage 41.0 failed 4 times\n\tat x",
                "STREAM_FAILED",
            ),
        ],
    )
    with so.Session(engine) as session:
        evaluate(session, RuleSet(), NOW - 61_000)
    timers = TimerSnapshot(
        DASHBOARD_ID, "run-1", NOW - 8_000, NOW - 51_500, 1_284, NOW - 43_000, 60_000, 212
    )
    write_events(engine, [*(dashboard_batch(i) for i in range(42, 45)), timers])
    with so.Session(engine) as session:
        evaluate(session, RuleSet(), NOW - 1_000)


def open_dashboard(tab, url):
    """The query page of orders_enriched, once its charts and its alerts are in."""
    tab.goto(f"{url}/queries/{DASHBOARD}")
    tab.wait_for_selector("#connection.connection-live", timeout=WAIT_MS)
    tab.wait_for_function(
        "() => Number(document.getElementById('event-time-chart').dataset.points) > 0",
        timeout=WAIT_MS,
    )
    tab.wait_for_selector("#live-alerts tbody tr.alert >> nth=3", state="attached", timeout=WAIT_MS)


def box(tab, selector):
    return tab.locator(selector).bounding_box()


def test_the_query_page_shows_its_cards_and_charts_first_and_its_alerts_as_a_strip(
    engine, serve, screen
):
    """Four alerts take one line above the cards: their counts and the most urgent; the
    table, with its actions, opens with the strip's button (from the keyboard too), the alert
    another causes marked so, after its cause."""
    write_dashboard(engine)
    open_dashboard(screen, serve(CLOCK=lambda: NOW))
    assert screen.locator("#live-alerts tbody tr.alert").count() == 4
    for selector in (".cards", "#event-time-chart"):
        assert box(screen, selector)["y"] + box(screen, selector)["height"] <= SCREEN["height"], (
            f"{selector} is not on the first screen"
        )

    strip = screen.locator("#alert-strip")
    assert strip.is_visible() and box(screen, "#alert-strip")["height"] < 60, "one line"
    # The firing ones by severity, the pending one apart, as the overview counts them.
    counted = strip.locator(".severity").all_text_contents()
    assert counted == ["1 critical", "2 warning", "1 pending"]
    table = screen.locator("#live-alerts")
    first = table.locator("tr.alert").first  # the table lists the most urgent first
    assert first.locator(".severity").text_content() == "critical"
    assert text_of(screen, "#alert-strip-top") == first.locator("td.message").text_content()
    assert text_of(screen, "#alert-strip-rule") == f"({text_of(first, 'td.rule')}, firing)"
    toggle = strip.get_by_role("button", name="Alert table")
    assert table.is_hidden() and toggle.get_attribute("aria-expanded") == "false"

    toggle.focus()
    screen.keyboard.press("Enter")
    expect(table).to_be_visible()
    assert toggle.get_attribute("aria-expanded") == "true"
    assert screen.locator("#token-form").is_visible()
    assert table.locator("tr.alert").first.get_by_role("button", name="Acknowledge").is_visible()
    states = table.locator("td.state").all_text_contents()
    assert states == ["firing", "firing", "firing, caused by partition_stalled", "pending"]
    toggle.click()
    expect(table).to_be_hidden()
    assert toggle.get_attribute("aria-expanded") == "false"


def test_the_readme_screenshot_shows_a_query_with_a_stalled_partition_and_alerts(
    engine, serve, screen
):
    """docs/dashboard.png, taken afresh on each run: orders_enriched's page on a 1,400 × 900
    screen."""
    write_dashboard(engine)
    open_dashboard(screen, serve(CLOCK=lambda: NOW))
    expect(screen.locator("#status")).to_have_text("stalled")
    expect(screen.locator("#partitions tbody tr.partition-row")).to_have_count(4)
    expect(screen.locator("#partitions .badge-stalled")).to_have_count(1)
    screen.wait_for_function(
        "() => ['skew-chart', 'batches-chart'].every("
        "(id) => Number(document.getElementById(id).dataset.points) > 0)",
        timeout=WAIT_MS,
    )
    SCREENSHOT.parent.mkdir(exist_ok=True)
    screen.screenshot(path=str(SCREENSHOT))


# The words (runs of letters and digits) of the matched cells that the browser laid out over
# more than one line.
BROKEN_WORDS = """(selector) => {
    const broken = [];
    let words = 0;
    for (const cell of document.querySelectorAll(selector)) {
        const texts = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let node = texts.nextNode(); node; node = texts.nextNode()) {
            for (const word of node.data.matchAll(/[\\p{L}\\p{N}]+/gu)) {
                const range = document.createRange();
                range.setStart(node, word.index);
                range.setEnd(node, word.index + word[0].length);
                const lines = new Set(
                    [...range.getClientRects()].filter((r) => r.width > 0).map((r) => r.bottom),
                );
                words += 1;
                if (lines.size > 1) broken.push(word[0]);
            }
        }
    }
    return { words, broken };
}"""


@pytest.mark.parametrize("where", ["alerts", "query"])
def test_alert_messages_break_only_between_words_at_1400_pixels(engine, serve, screen, where):
    write_dashboard(engine)
    url = serve(CLOCK=lambda: NOW)
    if where == "query":
        open_dashboard(screen, url)
        screen.get_by_role("button", name="Alert table").click()
        rows = 4
    else:
        screen.goto(f"{url}/alerts")
        rows = 5
    messages = screen.locator("#live-alerts td.message")
    expect(messages).to_have_count(rows, timeout=WAIT_MS)
    expect(messages.first).to_be_visible()
    found = screen.evaluate(BROKEN_WORDS, "#live-alerts td.message")
    assert found["words"] > 5 * rows and found["broken"] == []
    assert not scrolls_sideways(screen), "the page scrolls sideways"
    for action in ("Acknowledge", "Silence…"):
        buttons = screen.locator("#live-alerts").get_by_role("button", name=action, exact=True)
        expect(buttons).to_have_count(rows)
        assert all(button.evaluate(INSIDE) for button in buttons.all()), f"{action} is cut off"


# Whether an element is laid out within the width of the viewport.
INSIDE = """(node) => {
    const box = node.getBoundingClientRect();
    return box.width > 0 && box.left >= 0 && box.right <= window.innerWidth;
}"""


def scrolls_sideways(tab):
    return tab.evaluate("document.documentElement.scrollWidth > window.innerWidth")


def all_inside(tab, selector):
    """Whether every element `selector` matches (at least one) is within the viewport's width."""
    found = tab.locator(selector)
    return found.count() > 0 and all(node.evaluate(INSIDE) for node in found.all())


@pytest.mark.parametrize("size", ["phone", "screen"])
def test_the_overview_and_the_query_page_fit_a_phone_and_a_1400_pixel_screen(
    engine, serve, request, size
):
    """Every query's status, alerts and last batch in sight, a card per query on the phone;
    the query's name broken only between words and its charts as wide as the screen."""
    tab = request.getfixturevalue(size)
    write_dashboard(engine)
    url = serve(CLOCK=lambda: NOW)
    tab.goto(url)
    expect(tab.locator("#queries tbody tr")).to_have_count(2, timeout=WAIT_MS)
    # A badge per severity of the firing alerts, and one for the pending ones.
    expect(tab.locator("#queries .firing .severity")).to_have_count(4, timeout=WAIT_MS)
    for selector in ("#queries td .badge", "#queries .firing .severity", "#queries td.last"):
        assert all_inside(tab, selector), f"{selector} is out of sight"
    assert not scrolls_sideways(tab)

    open_dashboard(tab, url)
    assert not scrolls_sideways(tab)
    assert tab.evaluate(BROKEN_WORDS, "#query-name") == {"words": 2, "broken": []}
    # The three charts and the two histograms of the diagnosis.
    expect(tab.locator(".charts .uplot")).to_have_count(5)
    assert all_inside(tab, ".charts .uplot")


def write_silent_and_new(engine):
    """orders, silent for 37 minutes since its last batch (the silence threshold is 5), and
    fresh, started a minute ago, with no batch yet."""
    last_ms = NOW - 37 * 60_000
    write_events(
        engine,
        [
            *(batch_event("q", i, last_ms - (4 - i) * 10_000, name="orders") for i in range(5)),
            QueryStarted("new", "run-1", "fresh", NOW - 60_000),
        ],
    )


def test_a_silent_query_shows_when_it_was_last_heard_and_a_new_one_that_it_waits(
    engine, serve, page
):
    write_silent_and_new(engine)
    url = serve(CLOCK=lambda: NOW, OVERVIEW_REFRESH_S=0.5)
    page.goto(url)
    fresh = page.locator("#queries tbody tr", has_text="fresh")
    expect(fresh.locator("td.last")).to_have_text("waiting for the first batch", timeout=WAIT_MS)

    page.goto(f"{url}/queries/orders")
    expect(page.locator("#freshness")).to_contain_text(
        re.compile(r"^Last heard 37 min( \d+ s)? ago"), timeout=WAIT_MS
    )
    expect(page.locator("#cards")).to_have_class(re.compile(r"\bstale\b"))
    # The time axes run on to now, past the last batch 37 minutes ago, once the charts are in.
    page.wait_for_function(
        "(now) => ['event-time-chart', 'skew-chart', 'batches-chart'].every("
        "(id) => Number(document.getElementById(id).dataset.end) >= now)",
        arg=NOW,
        timeout=WAIT_MS,
    )

    page.goto(f"{url}/queries/fresh")
    expect(page.locator("#freshness")).to_contain_text("Waiting for the first batch")
    expect(page.locator("#cards")).not_to_have_class(re.compile(r"\bstale\b"))


def test_a_query_running_one_long_batch_says_so_and_is_not_stale(engine, serve, page):
    """orders stored batch 4 eight minutes ago, and its driver has said since that batch 5
    runs (a slow sink): the page says how long it has run, its cards are not greyed."""
    last_ms = NOW - 8 * 60_000
    write_events(
        engine,
        [
            *(batch_event("q", i, last_ms - (4 - i) * 10_000, name="orders") for i in range(5)),
            BatchRunning("q", "run-1", NOW - 2_000, 5, last_ms + 60_000),
        ],
    )
    url = serve(CLOCK=lambda: NOW)
    page.goto(f"{url}/queries/orders")
    expect(page.locator("#freshness")).to_contain_text(
        re.compile(r"^Running batch 5 for 7 min: the figures are those of batch 4"),
        timeout=WAIT_MS,
    )
    expect(page.locator("#status")).not_to_have_text("stalled")
    expect(page.locator("#cards")).not_to_have_class(re.compile(r"\bstale\b"))

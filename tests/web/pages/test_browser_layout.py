"""Every page laid out at a phone's, a laptop's and a wall screen's width, in a real headless
Chromium (Debian's), over a store like the demo's (five queries of 16 to 64 partitions: a
skewed backfill, an idle and a stalled partition, a late burst, a watermark two hours ahead)
beside a fleet of six 64-partition queries named as production jobs are, with wide figures.
Each page must fit its width, keep every word of its tables whole and draw nothing over
anything else; wide tables scroll in their own box with their first column in sight.
Full-page screenshots in build/artifacts/ (layout-<page>-<width>.png)."""

import shutil
import time
from dataclasses import dataclass

import pytest
import sqlalchemy.orm as so
from playwright.sync_api import expect

from monitor.alerts.evaluate import evaluate
from monitor.alerts.rulefile import RuleSet
from monitor.store.schema.engine import create_engine
from monitor.store.write.writes import write_events
from tests.support.layout import assert_layout_holds, first_column_stays, save_screenshot
from tests.support.progress import batch_event
from tests.support.serving import serving
from web import create_app

pytestmark = pytest.mark.e2e

WAIT_MS = 20_000
NOW = (time.time_ns() // 1_000_000) // 1_000 * 1_000
# Each width, and the height of its screen.
WIDTHS = {390: 844, 1400: 900, 1920: 1080}
PHONE = 390
STEP_MS = 20_000
BATCHES = 30
HALF = BATCHES // 2
DELAY_MS = 10_000
HOUR_MS = 3_600_000


@dataclass(frozen=True)
class Shape:
    """A query's partitions and what happens to them over its last BATCHES batches: some stop
    reading halfway while records pile up (stalled), some have nothing new from halfway
    (idle), some get late records in the last few batches; the partitions' event times are
    `spread_ms` apart from the first to the last; `future` is the batch in which partition 0
    reads a record two hours ahead of the clock. `scale` multiplies every count."""

    query_id: str
    name: str
    partitions: int
    topic: str = "telemetry"
    stalled: tuple[int, ...] = ()
    idle: tuple[int, ...] = ()
    late: tuple[int, ...] = ()
    spread_ms: int = 20_000
    future: int | None = None
    scale: int = 1
    key: str = "scooter-{}"


DEMO = (
    Shape("skewed", "scooters_skewed_backfill", 64, late=tuple(range(48, 64)), spread_ms=960_000),
    Shape("idle", "scooters_idle_partition", 16, idle=(3,)),
    Shape("stalled", "scooters_stalled_partition", 32, stalled=(2,)),
    Shape("burst", "scooters_late_burst", 16, late=(2, 5)),
    Shape("future", "scooters_future_timestamp", 24, future=BATCHES - 10),
)
FLEET_NAMES = (
    "com.example.payments.settlement_events_enriched_v2.dedup_by_txn_id",
    "com.example.risk.card_authorizations_scored_v3.window_5m_by_merchant",
    "com.example.logistics.parcel_scan_events_v4.sessionize_by_parcel_id",
    "com.example.ads.impression_click_join_v7.stream_stream_join_30m_wm",
    "com.example.telemetry.device_heartbeats_normalized.idle_detection",
    "com.example.ledger.account_balance_changes_v1.aggregate_per_minute",
)
FLEET = tuple(
    Shape(
        f"fleet-{i}",
        name,
        64,
        topic=name.rsplit(".", 1)[0],
        stalled=(7 + i,),
        late=tuple(range(40 + i, 64, 3)),
        spread_ms=7_200_000,
        future=BATCHES - 10 if i == 3 else None,
        scale=25_000,
        key="txn_{}_7f3a9c2e1b4d4e8f9a6b2c5d8e1f3a7b",
    )
    for i, name in enumerate(FLEET_NAMES)
)


def at(i):
    """The time of batch `i`: the last one 5 s ago."""
    return NOW - 5_000 - (BATCHES - 1 - i) * STEP_MS


def read(shape, p, i):
    """Records partition `p` read in batch `i`: none from halfway on where it stalled or
    went idle."""
    if i > HALF and p in shape.stalled + shape.idle:
        return 0
    return shape.scale * (200 + (p * 37 + i * 11) % 50)


def waiting(shape, p, i):
    """Records waiting in partition `p` after batch `i`: a stalled one's pile up."""
    if p in shape.idle and i > HALF:
        return 0
    if p in shape.stalled and i > HALF:
        return shape.scale * 500 * (i - HALF)
    return shape.scale * (40 + p)


def future_ms(shape):
    return at(shape.future) + 2 * HOUR_MS


def watermark(shape, i):
    """Spark's watermark for batch `i`: the largest event time read before it, less the
    delay; two hours ahead once the future-dated record was read."""
    if i == 0:
        return None
    if shape.future is not None and i > shape.future:
        return future_ms(shape) - DELAY_MS
    return at(i - 1) - 1_500 - DELAY_MS


def figures(shape, p, i, end):
    """What the instrumented operator measured of partition `p` in batch `i`."""
    records = read(shape, p, i)
    top = at(i) - 1_500 - p * shape.spread_ms // shape.partitions
    future = shape.future is not None and i > shape.future
    late = records if future else shape.scale * 25 if p in shape.late and i >= BATCHES - 8 else 0
    samples = [(shape.key.format(9_000 + i * 7 + n), at(i) - 95_000, end - n) for n in (1, 2)]
    more = {
        "max_record": [shape.key.format(p), top, end],
        "late_buckets": {"13": late} if late else {},
        "slack_buckets": {"14": records - late} if records > late else {},
    }
    if shape.future == i and p == 0:
        record = [shape.key.format(17), future_ms(shape), end]
        more |= {
            "max_ms": record[1],
            "max_record": record,
            "future": 1,
            "future_lead_ms": 2 * HOUR_MS,
            "future_samples": [record],
        }
    return (records, at(i) - 28_000, more.get("max_ms", top), late, samples if late else [], more)


def batch(shape, i):
    """Batch `i` of the query `shape` describes, through the helper every test uses."""
    ends = [
        shape.scale * 1_000_000 * (p + 1) + sum(read(shape, p, b) for b in range(i + 1))
        for p in range(shape.partitions)
    ]
    event_times = {p: figures(shape, p, i, end) for p, end in enumerate(ends) if read(shape, p, i)}
    rows = sum(f[0] for f in event_times.values())
    return batch_event(
        shape.query_id,
        i,
        at(i),
        name=shape.name,
        topic=shape.topic,
        watermark_ms=watermark(shape, i),
        starts=None if i == 0 else [e - read(shape, p, i) for p, e in enumerate(ends)],
        ends=ends,
        latests=[e + waiting(shape, p, i) for p, e in enumerate(ends)],
        rows=rows,
        rate=rows / (STEP_MS / 1_000),
        duration_ms=1_250 + i * 7 % 23 * 40,
        dropped=sum(f[3] for f in event_times.values()),
        event_times=event_times,
        delay_ms=DELAY_MS,
        late_watermark_ms=watermark(shape, i),
    )


def write_store(engine):
    """The demo's queries and the fleet, and the built-in rules evaluated as the server does
    (a minute apart, after an earlier look): firing, pending and ended alerts."""
    for shape in DEMO + FLEET:
        write_events(engine, [batch(shape, i) for i in range(BATCHES)])
    with so.Session(engine) as session:
        for ago in (400_000, 61_000, 1_000):
            evaluate(session, RuleSet(), NOW - ago)


@pytest.fixture(scope="module")
def url(sqlite_template, tmp_path_factory):
    """The store written once and served, as `wmon serve` does, for every width."""
    path = tmp_path_factory.mktemp("layout") / "wmon.db"
    shutil.copyfile(sqlite_template, path)
    engine = create_engine(f"sqlite:///{path}")
    write_store(engine)
    engine.dispose()
    app = create_app({"DATABASE_URL": f"sqlite:///{path}", "CLOCK": lambda: NOW})
    with serving(app) as served:
        yield served


@pytest.fixture(params=list(WIDTHS))
def width(request):
    """A phone's, a laptop's and a wall screen's width, in turn."""
    return request.param


@pytest.fixture
def tab(chromium, width):
    """A fresh page of `width`; its script errors fail the test."""
    context = chromium.new_context(viewport={"width": width, "height": WIDTHS[width]})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(error))
    yield page
    context.close()
    assert not errors, f"script errors on the page: {errors}"


def charts_drawn(tab, *figures):
    tab.wait_for_function(
        "(ids) => ids.every((id) => Number(document.getElementById(id).dataset.points) > 0)",
        arg=list(figures),
        timeout=WAIT_MS,
    )


NEXT_FRAMES = "() => new Promise((done) => requestAnimationFrame(() => setTimeout(done)))"


def settle(tab, name):
    """Once the page is drawn: its screenshot saved, and its layout measured."""
    tab.evaluate(NEXT_FRAMES)  # uPlot fits its box on the next frame
    save_screenshot(tab, f"layout-{name}-{tab.viewport_size['width']}")
    assert_layout_holds(tab)


def test_the_overview(url, tab):
    tab.goto(url)
    expect(tab.locator("#queries tbody tr")).to_have_count(len(DEMO + FLEET), timeout=WAIT_MS)
    expect(tab.locator("#queries .firing .severity").first).to_be_visible(timeout=WAIT_MS)
    settle(tab, "overview")


@pytest.mark.parametrize("shape", [DEMO[0], FLEET[3]], ids=["skewed", "fleet-future"])
def test_a_query_page_with_its_diagnosis(url, tab, width, shape):
    tab.goto(f"{url}/queries/{shape.query_id}")
    rows = tab.locator("#partitions tbody tr.partition-row")
    expect(rows).to_have_count(shape.partitions, timeout=WAIT_MS)
    charts_drawn(tab, "event-time-chart", "skew-chart", "batches-chart")
    expect(tab.locator("#advisor tbody tr")).to_have_count(shape.partitions + 1, timeout=WAIT_MS)
    expect(tab.locator("#alert-strip")).to_be_visible()
    settle(tab, f"query-{shape.query_id}")
    # The late samples have a row of their own under their partition's, across the table.
    samples = tab.locator("#partitions tbody tr.samples-row")
    expect(samples.first).to_be_visible()
    columns = tab.locator("#partitions thead th").count()
    assert {cell.get_attribute("colspan") for cell in samples.locator("td").all()} == {str(columns)}
    assert max(row.bounding_box()["height"] for row in rows.all()) < 140, "over five lines"
    if width == PHONE:
        assert first_column_stays(tab, "#partitions"), "the partition column scrolls away"
        assert first_column_stays(tab, "#advisor"), "the advisor's first column scrolls away"


def test_a_history_page(url, tab):
    shape = FLEET[0]
    tab.goto(f"{url}/queries/{shape.query_id}/history?range=hour")
    charts_drawn(tab, "event-time-chart", "age-chart", "lag-chart", "late-chart")
    expect(tab.locator("#advisor tbody tr")).to_have_count(shape.partitions + 1, timeout=WAIT_MS)
    settle(tab, "history")


def test_the_alerts_page(url, tab, width):
    tab.goto(f"{url}/alerts")
    expect(tab.locator("#live-alerts tbody tr.alert").first).to_be_visible(timeout=WAIT_MS)
    expect(tab.locator("#alert-history tbody tr.alert").first).to_be_attached(timeout=WAIT_MS)
    settle(tab, "alerts")
    if width == PHONE:
        assert first_column_stays(tab, "#live-alerts"), "the severity column scrolls away"

"""The diagnosis on the query page, in a real headless Chromium (Debian's) driven by Playwright:
a query whose watermark a future-dated record dragged two hours ahead. The banner names the
record, the advisor card has the delays worked out in test_diagnosis_api, the histograms are
drawn, and a key with HTML in it shows as text. Screenshots in build/artifacts/."""

import pytest
import sqlalchemy.orm as so
from playwright.sync_api import expect

from monitor.store.read.drop_causes import lateness
from monitor.store.tiers.prune import Cutoffs, prune
from tests.support.diagnosis_scenario import NAME, QUERY, at, write_telemetry

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]

WAIT_MS = 20_000
HOSTILE_KEY = "s-17<img src=x onerror=alert(1)>"

# How many pixels of a figure's canvas have the colour of its bars.
BAR_PIXELS = """([figure, colour]) => {
    const canvas = document.querySelector(`#${figure} canvas`);
    const { data } = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height);
    let pixels = 0;
    for (let i = 0; i < data.length; i += 4) {
        if (data[i] === colour[0] && data[i + 1] === colour[1] && data[i + 2] === colour[2]) {
            pixels += 1;
        }
    }
    return pixels;
}"""


def cells(row):
    return [cell.inner_text() for cell in row.locator("td").all()]


def test_the_query_page_names_the_future_dated_record_that_set_the_watermark(engine, serve, page):
    write_telemetry(engine, key=HOSTILE_KEY)
    page.goto(f"{serve(CLOCK=lambda: at(6))}/queries/{NAME}")
    banner = page.locator("#future-banner-text")
    expect(banner).to_have_text(
        "The watermark is 2 h ahead of the clock because of telemetry/2 offset 8812, "
        f"key {HOSTILE_KEY}",
        timeout=WAIT_MS,
    )
    driver = page.locator("#watermark-driver")
    assert driver.text_content() == f"set by telemetry/2: {HOSTILE_KEY} #8812"
    assert driver.get_attribute("title").startswith(f"{HOSTILE_KEY} @ ")

    # The last 15 minutes: batches 0-5. telemetry/0 set batches 1-3's watermarks, /2 4 and 5's.
    expect(page.locator("#driver-shares")).to_have_text(
        "telemetry/0 drove the watermark in 60% of these batches (3 of 5); telemetry/2 in 40% (2)."
    )
    rows = page.locator("#advisor tbody tr")
    expect(rows).to_have_count(4)
    # Every share needs the records 2 h late, dropped by the watermark the record set: no
    # delay (2 h 19 min would do) is the fix.
    expect(page.locator("#advisor-no-delay")).to_have_text(
        "No delay keeps these records: a future-dated record drove the watermark;"
        " fix the producer's clock."
    )
    keeps = "no delay keeps these"
    whole = cells(rows.nth(0))
    assert whole[:2] == ["(query)", "5 batches"]
    assert whole[2].startswith("2, up to 2 h ahead\n")
    assert whole[3:] == ["393", "31", "10 s", keeps, keeps, keeps]
    assert [cells(rows.nth(i))[:2] for i in (1, 2, 3)] == [
        ["telemetry/0", "60% (3)"],
        ["telemetry/1", "0% (0)"],
        ["telemetry/2", "40% (2)"],
    ]
    assert HOSTILE_KEY in cells(rows.nth(3))[2]

    # Late: buckets 11 (1 record) and 23 (30); on time: 15, 20 and 23.
    page.locator("#diagnosis").scroll_into_view_if_needed()
    expect(page.locator("#late-histogram")).to_have_attribute("data-bars", "2")
    expect(page.locator("#slack-histogram")).to_have_attribute("data-bars", "3")
    assert page.evaluate(BAR_PIXELS, ["late-histogram", [255, 107, 107]]) > 500
    assert page.evaluate(BAR_PIXELS, ["slack-histogram", [61, 220, 151]]) > 500

    page.locator("#histogram-partition").select_option("telemetry/0")
    expect(page.locator("#late-histogram")).to_have_attribute("data-bars", "1")

    assert page.locator("img").count() == 0, "an <img> was made from a record's key"
    assert page.dialogs == []


def test_a_watermark_ahead_of_the_clock_reads_as_ahead(engine, serve, page):
    write_telemetry(engine)
    page.goto(f"{serve(CLOCK=lambda: at(6))}/queries/{NAME}")
    # W is 2 h 0 min 20 s past batch 3, the clock 30 s past it: 1 h 59 min 50 s ahead.
    expect(page.locator("#watermark-age")).to_have_text(
        "ahead of the clock by 1 h 59 min", timeout=WAIT_MS
    )
    # telemetry/2's time lag, the tenth column: batch 5's time less the record's, 2 h 0 min
    # 10 s ahead.
    row = page.locator("#partitions tbody tr").nth(2)
    expect(row.locator("td").nth(9)).to_have_text("ahead of the clock by 2 h")
    formatted = page.evaluate(
        """async () => {
            const { age, behind } = await import("/static/js/format.js");
            return [age(-4_300), age(4_300), behind(-4_300), behind(4_300)];
        }"""
    )
    assert formatted == ["ahead of the clock by 4.3 s", "4.3 s", "4.3 s ahead", "4.3 s behind"]


def test_the_history_page_has_the_shares_and_histograms_of_its_range(engine, serve, page):
    write_telemetry(engine)
    # Batches 2-4: telemetry/0 set the watermarks of 2 and 3, telemetry/2 that of 4.
    page.goto(f"{serve(CLOCK=lambda: at(6))}/queries/{NAME}/history?from={at(2)}&to={at(5)}")
    expect(page.locator("#driver-shares")).to_have_text(
        "telemetry/0 drove the watermark in 67% of these batches (2 of 3); telemetry/2 in 33% (1).",
        timeout=WAIT_MS,
    )
    # 363 records, one 1-2 s late: 99% need no delay, 99.9% 12,048 ms.
    whole = cells(page.locator("#advisor tbody tr").first)
    assert whole[3:] == ["363", "1", "10 s", "0 ms\n−10 s", "12 s\n+2.0 s", "12 s\n+2.0 s"]
    expect(page.locator("#late-histogram")).to_have_attribute("data-bars", "1")
    expect(page.locator("#slack-histogram")).to_have_attribute("data-bars", "3")


def test_a_range_older_than_the_batches_kept_says_its_lateness_is_from_the_rollups(
    engine, serve, page
):
    write_telemetry(engine)
    with so.Session(engine) as session:
        [whole, *_] = lateness(session, QUERY)
    prune(engine, Cutoffs(at(3), 0, 0))
    page.goto(f"{serve(CLOCK=lambda: at(6))}/queries/{NAME}/history?from={at(0)}&to={at(7)}")
    expect(page.locator("#diagnosis-range")).to_contain_text(
        "the drivers and future-dated records start there; "
        "the lateness is read from the per-minute rollups)",
        timeout=WAIT_MS,
    )
    # All six batches' records, batch 0's to 2's too, from the minute that holds them.
    shown = cells(page.locator("#advisor tbody tr").first)
    assert shown[3:5] == [f"{whole.records:,}", f"{whole.late_records:,}"]

"""A page's layout measured in the browser: what runs past the viewport, words broken or
spilling out of their table cells, text and controls drawn over each other, and whether a
scrolling table keeps its first column in sight."""

from tests.support.pages import ARTIFACTS

# What the page holds that is seen: every text node's line boxes, and the boxes of the
# controls, badges, charts and legends, each cut to the scrolling boxes around it (a row of
# a legend scrolled out of its box is not drawn over what lies below).
_SEEN = """
const BOXES = "button, input, select, a.button, .badge, .severity, canvas, .u-legend";

function clipOf(node) {
    let clip = { left: -Infinity, top: -Infinity, right: Infinity, bottom: Infinity };
    for (let box = node; box; box = box.parentElement) {
        const style = getComputedStyle(box);
        if (style.overflowX === "visible" && style.overflowY === "visible") continue;
        const r = box.getBoundingClientRect();
        const left = r.left + box.clientLeft;
        const top = r.top + box.clientTop;
        clip = {
            left: Math.max(clip.left, left),
            top: Math.max(clip.top, top),
            right: Math.min(clip.right, left + box.clientWidth),
            bottom: Math.min(clip.bottom, top + box.clientHeight),
        };
    }
    return clip;
}

function cut(rect, clip) {
    const box = {
        left: Math.max(rect.left, clip.left),
        top: Math.max(rect.top, clip.top),
        right: Math.min(rect.right, clip.right),
        bottom: Math.min(rect.bottom, clip.bottom),
    };
    return box.right - box.left > 0.5 && box.bottom - box.top > 0.5 ? box : null;
}

function describe(node) {
    const text = (node.textContent || node.getAttribute("aria-label") || "").trim();
    const id = node.id ? `#${node.id}` : "";
    const name = typeof node.className === "string" ? node.className.split(" ")[0] : "";
    const cls = name ? `.${name}` : "";
    return `${node.tagName.toLowerCase()}${id}${cls} "${text.slice(0, 40)}"`;
}

function seen() {
    const items = [];
    const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = texts.nextNode(); node; node = texts.nextNode()) {
        if (!node.data.trim() || node.parentElement.closest("script, style")) continue;
        if (getComputedStyle(node.parentElement).visibility !== "visible") continue;
        const range = document.createRange();
        range.selectNodeContents(node);
        const clip = clipOf(node.parentElement);
        for (const rect of range.getClientRects()) {
            const box = cut(rect, clip);
            if (box) items.push({ owner: node.parentElement, box });
        }
    }
    for (const node of document.body.querySelectorAll(BOXES)) {
        if (!node.getClientRects().length) continue;
        if (getComputedStyle(node).visibility !== "visible") continue;
        const box = cut(node.getBoundingClientRect(), clipOf(node.parentElement));
        if (box) items.push({ owner: node, box });
    }
    return items;
}

function overlaps() {
    const items = seen().sort((a, b) => a.box.top - b.box.top);
    const found = [];
    for (let i = 0; i < items.length; i += 1) {
        const a = items[i];
        for (let j = i + 1; j < items.length && items[j].box.top < a.box.bottom - 1; j += 1) {
            const b = items[j];
            const wide = Math.min(a.box.right, b.box.right) - Math.max(a.box.left, b.box.left);
            const tall = Math.min(a.box.bottom, b.box.bottom) - Math.max(a.box.top, b.box.top);
            if (wide <= 1 || tall <= 1) continue;
            if (a.owner.contains(b.owner) || b.owner.contains(a.owner)) continue;
            found.push(`${describe(a.owner)} over ${describe(b.owner)}`);
        }
    }
    return found;
}
"""

# The words of the tables' cells laid out over more than one line (a word: what lies between
# white space and <wbr>, the places a line may break without breaking a word), and the cells
# whose content is wider than the cell.
_CELLS = """
const CELLS = "main td, main th";

function lines(range) {
    const rects = [...range.getClientRects()].filter((r) => r.width > 0);
    return new Set(rects.map((r) => Math.round(r.top))).size;
}

function cellsOf() {
    return [...document.querySelectorAll(CELLS)].filter(
        (cell) => !cell.closest(".u-legend") && cell.getClientRects().length,
    );
}

function brokenWords() {
    const broken = [];
    let words = 0;
    for (const cell of cellsOf()) {
        const texts = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let node = texts.nextNode(); node; node = texts.nextNode()) {
            for (const word of node.data.matchAll(/\\S+/g)) {
                const range = document.createRange();
                range.setStart(node, word.index);
                range.setEnd(node, word.index + word[0].length);
                words += 1;
                if (lines(range) > 1) broken.push(word[0]);
            }
        }
    }
    return { words, broken };
}

function spilling() {
    return cellsOf()
        .filter((cell) => cell.scrollWidth > cell.clientWidth + 1)
        .map((cell) => {
            const text = cell.textContent.trim().slice(0, 60);
            return `"${text}" (${cell.scrollWidth} px in ${cell.clientWidth})`;
        });
}
"""

MEASURE = f"""() => {{
    {_SEEN}
    {_CELLS}
    const words = brokenWords();
    return {{
        viewport: window.innerWidth,
        width: document.documentElement.scrollWidth,
        words: words.words,
        broken: words.broken,
        spilling: spilling(),
        overlaps: overlaps(),
    }};
}}"""

# A scrolling table's first column after its box is scrolled to the far end: where each of
# its cells is, against the box's left edge.
FIRST_COLUMN = """(table) => {
    const box = table.closest(".table-scroll");
    box.scrollLeft = box.scrollWidth;
    const edge = box.getBoundingClientRect().left + box.clientLeft;
    const cells = [...table.rows].map((row) => row.cells[0]).filter((cell) => cell.colSpan === 1);
    const offsets = cells.map((cell) => Math.round(cell.getBoundingClientRect().left - edge));
    const result = { scrolled: box.scrollLeft, offsets };
    box.scrollLeft = 0;
    return result;
}"""


def measure(tab):
    """The page's layout as measured: its width against the viewport's, the words in table
    cells and those broken, the cells spilling over, the things drawn over each other."""
    return tab.evaluate(MEASURE)


def assert_layout_holds(tab):
    """The page fits its viewport's width, no table cell breaks a word or is narrower than
    its content, and nothing is drawn over anything else."""
    found = measure(tab)
    assert found["width"] <= found["viewport"], f"the page is {found['width']} px wide"
    assert found["words"] > 0, "no word in a table cell: nothing was measured"
    assert found["broken"] == [], f"words broken over lines: {found['broken'][:10]}"
    assert found["spilling"] == [], f"cells narrower than their content: {found['spilling'][:10]}"
    assert found["overlaps"] == [], f"drawn over each other: {found['overlaps'][:10]}"


def first_column_stays(tab, selector):
    """Whether the table's box scrolls sideways and, scrolled to its end, the table's first
    column stays at the box's left edge."""
    found = tab.locator(selector).evaluate(FIRST_COLUMN)
    return found["scrolled"] > 0 and set(found["offsets"]) <= {0}


def save_screenshot(tab, name):
    """The whole page, as build/artifacts/`name`.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

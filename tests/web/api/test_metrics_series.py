"""The series of /metrics, as the table defines them, against docs/prometheus.md's list."""

import re

from tests.support.paths import ROOT
from web.api.metrics.exposition import sample_name
from web.api.metrics.scopes import PARTITION_LABELS
from web.api.metrics.series import SERIES

DOCS = ROOT / "docs" / "prometheus.md"


def documented():
    """{series: (type, its labels beyond the query's and the partition's)} from the tables
    of the docs' Series section; `{…}` stands for the labels of the row above."""
    text = DOCS.read_text()
    section = text.split("\n## Series\n", 1)[1].split("\n## ", 1)[0]
    found = {}
    labels = ()
    for row in section.splitlines():
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        if not row.startswith("| `wmon_"):
            continue
        braces = re.search(r"\{(.*?)\}", cells[0])
        if braces is None:
            labels = ()
        elif braces[1] != "…":
            labels = tuple(braces[1].split(","))
        for name in re.findall(r"`(wmon_\w+)", cells[0]):
            assert name not in found, f"{name} is listed twice"
            found[name] = (cells[1], labels)
    return found


def test_the_docs_list_exactly_the_series_of_the_table():
    names = [sample_name(series.name, series.type) for series in SERIES]
    assert len(set(names)) == len(names)
    defined = {
        sample_name(series.name, series.type): (
            series.type,
            tuple(label for label in series.labels if label not in PARTITION_LABELS),
        )
        for series in SERIES
    }
    assert documented() == defined

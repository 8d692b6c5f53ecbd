"""Prometheus' text format (0.0.4), written byte for byte as prometheus_client's
`generate_latest` writes it, and faster: the labels of a series are written once a scrape, where
prometheus_client checks and escapes each label of each sample (a partition's labels are in a
dozen families)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from prometheus_client.utils import floatToGoString

GAUGE = "gauge"
COUNTER = "counter"


@dataclass
class Family:
    """One metric family of a scrape: a gauge or a counter, its label names, and its samples
    as label values (in the order of the names) and a value, in the order they were added."""

    name: str
    documentation: str
    type: str
    labels: tuple[str, ...]
    samples: list[tuple[tuple[str, ...], float]] = field(default_factory=list)


def sample_name(name: str, type: str) -> str:
    """The name a family's samples are written with: a counter's end with `_total`."""
    return f"{name}_total" if type == COUNTER else name


def exposition(families: Iterable[Family]) -> bytes:
    """The families in the text format (label names sorted, as prometheus_client has them)."""
    written: dict[tuple[tuple[str, ...], tuple[str, ...]], str] = {}
    lines: list[str] = []
    for family in families:
        name = sample_name(family.name, family.type)
        documentation = family.documentation.replace("\\", r"\\").replace("\n", r"\n")
        lines += [f"# HELP {name} {documentation}", f"# TYPE {name} {family.type}"]
        names = family.labels
        for labels, value in family.samples:
            pairs = written.get((names, labels))
            if pairs is None:
                pairs = written[names, labels] = _label_pairs(names, labels)
            lines.append(f"{name}{pairs} {floatToGoString(value)}")
    return "".join(f"{line}\n" for line in lines).encode()


def _label_pairs(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    """`{name="value",...}` in the order of the names, values quoted; "" with no labels."""
    if not names:
        return ""
    quoted = (v.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"") for v in values)
    pairs = sorted(zip(names, quoted, strict=True))
    return "{" + ",".join(f'{name}="{value}"' for name, value in pairs) + "}"

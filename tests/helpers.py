"""Helpers shared by tests: fixture files and synthetic progress documents."""

import copy
import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> Any:
    """A JSON document from tests/fixtures/ (a fresh copy each call)."""
    return json.loads((FIXTURES / name).read_text())


def progress_doc(name: str = "progress_kafka.json", **changes: Any) -> dict[str, Any]:
    """The progress document of a fixture, with some top-level fields changed."""
    doc = copy.deepcopy(fixture(name)["progress"])
    doc.update(changes)
    return doc

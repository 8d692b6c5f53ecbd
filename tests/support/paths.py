"""Where the repository and the canned listener events (tests/fixtures/) are."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"

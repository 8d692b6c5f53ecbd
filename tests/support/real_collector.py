"""A real collector for tests: the dashboard app over a store, served as `wmon serve` does."""

from contextlib import AbstractContextManager

from monitor.health.predicates import Timeouts
from tests.support.serving import served

INGEST_TOKEN = "test-ingest-token"
DEFAULT_TIMEOUTS = Timeouts()


def serving_collector(
    database_url: str, timeouts: Timeouts = DEFAULT_TIMEOUTS, port: int = 0
) -> AbstractContextManager[str]:
    """The collector's base URL while the block runs (on `port`, by default a free one); it
    takes INGEST_TOKEN."""
    config = {"DATABASE_URL": database_url, "INGEST_TOKEN": INGEST_TOKEN, "TIMEOUTS": timeouts}
    return served(config, port)

"""The alert tests' fixtures: a local receiver of notifications."""

import pytest

from tests.support.receivers import LocalReceiver


@pytest.fixture
def receiver():
    server = LocalReceiver()
    yield server
    server.close()

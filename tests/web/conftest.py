"""The dashboard app over a migrated store (SQLite and PostgreSQL), for every web test."""

import pytest

from web import create_app, db, retention


@pytest.fixture
def app_config():
    """What a test module sets in its app's configuration besides the store (override it)."""
    return {"TESTING": True}


@pytest.fixture
def app(database_url, app_config):
    """The app over the test's store; its background tasks are stopped afterwards."""
    app = create_app({"DATABASE_URL": database_url} | app_config)
    yield app
    retention.pruner(app).stop()
    db.dispose(app)


@pytest.fixture
def client(app):
    """A test client of the app."""
    return app.test_client()

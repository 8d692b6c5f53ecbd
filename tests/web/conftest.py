"""The dashboard app over a migrated store (SQLite and PostgreSQL), for every web test; for
the browser tests, Debian's Chromium, the dashboard served on a free port and pages; for the
live tests, the app served and Socket.IO clients on it."""

from contextlib import ExitStack

import pytest

import web
from tests.support.pages import CHROMIUM, CHROMIUM_ARGS, PHONE, SCREEN, WALL, open_page
from tests.support.push_clients import Browser, end_all
from tests.support.serving import serving
from web import create_app
from web.sockets import socketio


@pytest.fixture
def app_config():
    """What a test module sets in its app's configuration besides the store (override it)."""
    return {"TESTING": True}


@pytest.fixture
def app(database_url, app_config):
    """The app over the test's store; its background tasks are stopped afterwards."""
    app = create_app({"DATABASE_URL": database_url} | app_config)
    yield app
    web.stop(app)


@pytest.fixture
def client(app):
    """A test client of the app."""
    return app.test_client()


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def serve(database_url):
    """Serve the store on a free port, as `wmon serve` does, in a thread; the URL."""
    with ExitStack() as running:

        def start(**config):
            app = create_app({"DATABASE_URL": database_url, "POLL_INTERVAL_S": 0.2} | config)
            return running.enter_context(serving(app))

        yield start


@pytest.fixture
def page(chromium, request):
    """A page of a wall screen's size, 1,600 × 1,000."""
    yield from open_page(chromium, request, WALL)


@pytest.fixture
def screen(chromium, request):
    """A page of the README's screenshot's size, 1,400 × 900."""
    yield from open_page(chromium, request, SCREEN)


@pytest.fixture
def phone(chromium, request):
    """A page of a phone's size, 390 × 844."""
    yield from open_page(chromium, request, PHONE)


@pytest.fixture
def server(app):
    """The app served on a free port by Werkzeug's threaded server, as `wmon serve` does."""
    with serving(app) as url:
        yield url


@pytest.fixture
def browsers(server):
    """A function that connects one more Socket.IO client to `server`; all closed afterwards."""
    opened = []

    def open_browser():
        opened.append(Browser(server))
        return opened[-1]

    yield open_browser
    end_all([browser.client for browser in opened], socketio.server)

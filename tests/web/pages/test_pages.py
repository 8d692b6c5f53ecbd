"""The pages and the vendor route through the Flask test client, on real SQLite and PostgreSQL
stores; and static checks of the front end's modules."""

import re

import pytest

from monitor.events import QueryTerminated
from monitor.store.write.writes import write_events
from tests.support.network import closed_port
from tests.support.paths import ROOT
from tests.support.progress import batch_event
from web import create_app, db
from web.pages import vendor

T0 = 1_795_316_400_000
STATIC_JS = ROOT / "web" / "static" / "js"
HOSTILE = "<img src=x onerror=alert(1)>"
JAVASCRIPT = ("text/javascript", "application/javascript")  # by Python's version and mime.types


def page(response, status=200):
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "text/html"
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    return response.get_data(as_text=True)


def write_orders(engine, name="orders"):
    write_events(engine, [batch_event("orders-id", 0, T0, name=name, ends=(10, 20))])


def test_the_overview_page_loads_its_module(client):
    html = page(client.get("/"))
    assert '<script type="module" src="/static/js/overview.js">' in html
    assert 'href="/vendor/uPlot.min.css"' in html
    assert 'id="queries"' in html


@pytest.mark.parametrize("ref", ["orders-id", "orders"], ids=["by id", "by name"])
def test_the_query_page_of_a_known_query(engine, client, ref):
    write_orders(engine)
    html = page(client.get(f"/queries/{ref}"))
    assert 'data-query="orders-id"' in html
    assert '<span class="query-name" id="query-name">orders</span>' in html
    assert '<script type="module" src="/static/js/query.js">' in html
    assert 'href="/queries/orders-id/history"' in html


def test_the_history_page_of_a_known_query(engine, client):
    write_orders(engine)
    html = page(client.get("/queries/orders/history"))
    assert 'data-query="orders-id"' in html and 'id="csv"' in html
    assert '<script type="module" src="/static/js/history.js">' in html


@pytest.mark.parametrize("path", ["/queries/nosuchquery", "/queries/nosuchquery/history"])
def test_an_unknown_query_gets_a_404_page(client, path):
    html = page(client.get(path), 404)
    assert "no query with id or name &#39;nosuchquery&#39;" in html


def test_names_from_jobs_are_escaped_in_the_pages(engine, client):
    write_orders(engine, name=HOSTILE)
    for path in ("/queries/orders-id", "/queries/orders-id/history"):
        html = page(client.get(path))
        assert HOSTILE not in html
        assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_an_unreadable_store_gets_a_503_page():
    app = create_app({"DATABASE_URL": f"postgresql://postgres@127.0.0.1:{closed_port()}/wmon"})
    html = page(app.test_client().get("/queries/orders"), 503)
    assert "cannot use the store" in html
    db.dispose(app)


def test_a_failed_query_page_still_loads(engine, client):
    write_orders(engine)
    write_events(engine, [QueryTerminated("orders-id", "run-1", T0 + 5, "<b>boom</b>", "X")])
    assert "<b>boom</b>" not in page(client.get("/queries/orders"))


@pytest.mark.parametrize(
    ("name", "mimetypes", "marker"),
    [
        ("uPlot.esm.js", JAVASCRIPT, "export { uPlot as default }"),
        ("uPlot.min.css", ("text/css",), ".uplot"),
        ("socket.io.esm.min.js", JAVASCRIPT, "export{"),
    ],
)
def test_the_vendor_route_serves_the_allowed_libraries(tmp_path, name, mimetypes, marker):
    app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'none.db'}"})
    response = app.test_client().get(f"/vendor/{name}")
    assert response.status_code == 200 and response.mimetype in mimetypes
    assert marker in response.get_data(as_text=True)


@pytest.mark.parametrize(
    "path",
    ["package.json", "uplot", "uPlot.iife.js", "..%2Fpackage.json", "%2E%2E/package.json", ""],
)
def test_the_vendor_route_serves_nothing_else(tmp_path, path):
    app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'none.db'}"})
    assert app.test_client().get(f"/vendor/{path}").status_code == 404


def test_without_node_modules_the_vendor_route_says_to_run_make_setup(tmp_path):
    config = {"DATABASE_URL": f"sqlite:///{tmp_path / 'none.db'}", "NODE_MODULES": tmp_path}
    response = create_app(config).test_client().get("/vendor/uPlot.esm.js")
    assert response.status_code == 503
    assert "run `make setup`" in response.get_data(as_text=True)


def test_the_static_modules_and_styles_are_served(tmp_path):
    client = create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'none.db'}"}).test_client()
    for module in sorted(STATIC_JS.glob("*.js")):
        response = client.get(f"/static/js/{module.name}")
        assert response.status_code == 200 and response.mimetype in JAVASCRIPT
    assert client.get("/static/css/dashboard.css").status_code == 200


IMPORT = re.compile(r'^import .* from "([^"]+)";$', re.MULTILINE)


def test_every_import_of_the_modules_resolves():
    for module in STATIC_JS.glob("*.js"):
        for target in IMPORT.findall(module.read_text()):
            if target.startswith("/vendor/"):
                assert target.removeprefix("/vendor/") in vendor.FILES, (module.name, target)
            else:
                assert (STATIC_JS / target).is_file(), (module.name, target)


def test_the_modules_never_parse_data_as_html():
    for module in STATIC_JS.glob("*.js"):
        text = module.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in text, (module.name, sink)

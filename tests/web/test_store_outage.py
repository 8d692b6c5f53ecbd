"""A store that disappears under a running dashboard: every route answers 503 with the reason,
nothing reports success that was not stored, no store is created, and it recovers by itself."""

import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

import web
from monitor.collect.spark_events import STARTED, named
from monitor.store.schema.engine import create_engine
from monitor.store.schema.migrate import upgrade
from monitor.store.write.writes import write_event
from tests.support.databases import create_database
from tests.support.network import closed_port
from tests.support.progress import batch_event, fixture
from tests.support.waiting import wait_until
from web import create_app

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NOW = 1_700_000_000_000
SILENCE = {"minutes": 30, "rule": "partition_stalled", "comment": "maintenance"}
BODIES = {
    ("POST", "/api/silences"): SILENCE,
    ("POST", "/api/ingest"): named(STARTED, fixture("started.json")),
}


def _app(url: str):
    return create_app(
        {"TESTING": True, "DATABASE_URL": url, "API_TOKEN": TOKEN, "INGEST_TOKEN": TOKEN}
    )


def _close(app) -> None:
    web.stop(app)


def _store(url: str) -> None:
    engine = create_engine(url)
    upgrade(engine)
    write_event(engine, batch_event("q0", 0, NOW, name="orders"))
    engine.dispose()


def _files(path: Path) -> list[Path]:
    return [path.with_name(path.name + suffix) for suffix in ("", "-wal", "-shm")]


def _stored_comments(path: Path) -> list[str]:
    with sqlite3.connect(path) as connection:
        return [row[0] for row in connection.execute("SELECT comment FROM silences")]


def _store_routes(app) -> list[tuple[str, str]]:
    """(method, path) of every route that reads or writes the store, ids filled in."""
    routes = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint in ("static", "vendor.library"):
            continue
        path = rule.rule.replace("<ref>", "q0").replace("<id:alert_id>", "1")
        path = path.replace("<id:silence_id>", "1")
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            routes.append((method, path))
    return routes


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Path:
    path = tmp_path / "wmon.db"
    _store(f"sqlite:///{path}")
    return path


def test_every_route_answers_503_with_the_reason_while_the_store_is_away(sqlite_store, tmp_path):
    app = _app(f"sqlite:///{sqlite_store}")
    client = app.test_client()
    assert client.get("/api/queries").status_code == 200
    away = tmp_path / "away"
    away.mkdir()
    for file in _files(sqlite_store):
        if file.exists():
            file.rename(away / file.name)
    routes = _store_routes(app)
    assert len(routes) >= 12, routes
    for method, path in routes:
        body = BODIES.get((method, path))
        response = client.open(path, method=method, headers=AUTH, json=body)
        assert response.status_code == 503, (method, path, response.status_code)
        assert response.headers.get("Retry-After") == "5", (method, path)
        text = response.get_data(as_text=True)
        assert f"no store at {sqlite_store}" in text, (method, path, text)
        if path.startswith("/api/"):
            assert response.is_json, (method, path)
    assert not sqlite_store.exists(), "the dashboard created a store it was not asked to"
    for file in away.iterdir():
        file.rename(sqlite_store.parent / file.name)
    assert client.get("/api/queries").status_code == 200
    _close(app)


def test_a_write_after_the_store_was_moved_away_is_not_a_success(sqlite_store, tmp_path):
    app = _app(f"sqlite:///{sqlite_store}")
    client = app.test_client()
    assert client.post("/api/silences", headers=AUTH, json=SILENCE).status_code == 201
    moved = tmp_path / "moved.db"
    for file in _files(sqlite_store):
        if file.exists():
            file.rename(moved.with_name(moved.name + file.name.removeprefix("wmon.db")))
    response = client.post("/api/silences", headers=AUTH, json=SILENCE | {"comment": "lost"})
    assert response.status_code == 503
    assert "lost" not in _stored_comments(moved)
    _close(app)


def test_a_store_deleted_and_restored_recovers_without_a_restart(sqlite_store, tmp_path):
    app = _app(f"sqlite:///{sqlite_store}")
    client = app.test_client()
    assert client.post("/api/silences", headers=AUTH, json=SILENCE).status_code == 201
    backup = tmp_path / "backup.db"
    with sqlite3.connect(sqlite_store) as source, sqlite3.connect(backup) as target:
        source.backup(target)
    for file in _files(sqlite_store):
        file.unlink(missing_ok=True)
    assert client.get("/api/silences").status_code == 503
    assert client.post("/api/silences", headers=AUTH, json=SILENCE).status_code == 503
    assert client.get("/").status_code == 503
    assert not sqlite_store.exists()
    shutil.copy(backup, sqlite_store)
    silences = client.get("/api/silences")
    assert silences.status_code == 200
    assert [s["comment"] for s in silences.get_json()["silences"]] == ["maintenance"]
    created = client.post("/api/silences", headers=AUTH, json=SILENCE | {"comment": "after"})
    assert created.status_code == 201
    assert _stored_comments(sqlite_store) == ["maintenance", "after"]
    _close(app)


def test_a_replaced_store_file_is_read_afresh(sqlite_store, tmp_path):
    app = _app(f"sqlite:///{sqlite_store}")
    client = app.test_client()
    assert [q["name"] for q in client.get("/api/queries").get_json()["queries"]] == ["orders"]
    other = tmp_path / "other.db"
    _store(f"sqlite:///{other}")
    engine = create_engine(f"sqlite:///{other}")
    write_event(engine, batch_event("q1", 0, NOW, name="payments"))
    engine.dispose()
    for file in _files(sqlite_store):
        file.unlink(missing_ok=True)
    for file in _files(other):
        if file.exists():
            file.rename(
                sqlite_store.with_name(sqlite_store.name + file.name.removeprefix("other.db"))
            )
    names = {q["name"] for q in client.get("/api/queries").get_json()["queries"]}
    assert names == {"orders", "payments"}
    _close(app)


# PostgreSQL: a server of the test's own on a free port, so that it can be stopped and started.

PG_BIN = sorted(Path("/usr/lib/postgresql").glob("*/bin"))


def _as_postgres(*command: str) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else list(command)


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(command)} failed: {done.stderr or done.stdout}"


def _pg_ctl(data: Path, port: int, *action: str) -> None:
    options = f"-p {port} -k {data.parent} -c listen_addresses=127.0.0.1"
    log = str(data.parent / "server.log")
    pg_ctl = (str(PG_BIN[-1] / "pg_ctl"), "-D", str(data), "-l", log, "-o", options, "-w")
    _run(_as_postgres(*pg_ctl, *action))


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[tuple[str, Path, int]]:
    """A PostgreSQL server started for this module: its URL, data folder and port."""
    assert PG_BIN, "PostgreSQL's server programs are required (make setup installs them)"
    # Outside pytest's folders, which the postgres user may not enter.
    folder = Path(tempfile.mkdtemp(prefix="wmon-postgres-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    data, port = folder / "data", closed_port()
    _run(_as_postgres(str(PG_BIN[-1] / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"))
    _pg_ctl(data, port, "start")
    yield f"postgresql://postgres@127.0.0.1:{port}/postgres", data, port
    _pg_ctl(data, port, "-m", "immediate", "stop")
    shutil.rmtree(folder)


def test_a_postgresql_restart_is_503_while_down_then_recovers(own_postgres):
    url, data, port = own_postgres
    _store(url)
    app = _app(url)
    client = app.test_client()
    assert client.post("/api/silences", headers=AUTH, json=SILENCE).status_code == 201
    _pg_ctl(data, port, "-m", "fast", "stop")
    try:
        for method, path in (("GET", "/api/queries"), ("POST", "/api/silences"), ("GET", "/")):
            response = client.open(path, method=method, headers=AUTH, json=SILENCE)
            assert response.status_code == 503, (method, path)
            assert "cannot use the store" in response.get_data(as_text=True)
    finally:
        _pg_ctl(data, port, "start")
    wait_until(lambda: client.get("/api/queries").status_code == 200, 30, "the store back")
    silences = client.get("/api/silences").get_json()["silences"]
    assert [s["comment"] for s in silences] == ["maintenance"]
    assert client.post("/api/silences", headers=AUTH, json=SILENCE).status_code == 201
    _close(app)


def test_a_read_only_store_answers_writes_with_503_and_reads_still_work(own_postgres):
    url = create_database(own_postgres[0], "wmon_read_only")
    _store(url)
    name = sa.make_url(url).database
    admin = sa.create_engine(own_postgres[0], isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(
            sa.text(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
        )
    admin.dispose()
    app = _app(url)
    client = app.test_client()
    assert client.get("/api/queries").status_code == 200
    response = client.post("/api/silences", headers=AUTH, json=SILENCE)
    assert response.status_code == 503 and response.is_json
    assert "read-only transaction" in response.get_json()["error"]
    assert client.get("/api/silences").get_json()["silences"] == []
    _close(app)

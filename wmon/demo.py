"""`wmon generate` and `wmon demo`: scooter telemetry into a partitioned log, and the scenarios
played into monitored streaming queries with the dashboard."""

from __future__ import annotations

import argparse
import os
import socket
import threading
from pathlib import Path
from typing import Any

from wmon.options import CliError


def generate(args: argparse.Namespace) -> None:
    """Write deterministic scooter telemetry into a partitioned log, plainly or as a scenario."""
    from streaming.generator import generate as generate_telemetry
    from streaming.log import PartitionedLog
    from streaming.scenarios import play

    common = {
        "topic": args.topic,
        "partitions": args.partitions,
        "scooters": args.scooters,
        "records": args.records,
        "rate": args.rate,
        "start_ms": args.start_ms,
        "seed": args.seed,
        "max_disorder_ms": args.max_disorder_ms,
    }
    log = PartitionedLog(args.path)
    if args.scenario is None:
        written = generate_telemetry(log, **common).partitions
        roles: dict[int, str] = {}
        options: dict[str, str] = {}
    else:
        scenario = play(args.scenario, log, **common)
        written, roles, options = scenario.partitions, scenario.roles, scenario.options
    print(f"wrote {sum(p.records for p in written.values())} records to {args.path / args.topic}")
    for partition, summary in sorted(written.items()):
        role = f" ({roles[partition]})" if partition in roles else ""
        print(f"  partition {partition}: {summary.records} records{role}")
    for name, value in options.items():
        print(f"  read it with .option({name!r}, {value!r})")


def demo(args: argparse.Namespace) -> None:
    """Play the scenarios into the monitored scooter pipeline and serve the dashboard."""
    from streaming.demo import DemoError, DemoOptions, run_demo
    from wmon.submit import listener_jar

    jar = listener_jar()

    try:
        run_demo(
            DemoOptions(
                workdir=args.workdir,
                seconds=args.seconds,
                scenarios=tuple(args.scenarios),
                partitions=args.partitions,
                rate=args.rate,
                round_seconds=args.round_seconds,
                trigger_seconds=args.trigger_seconds,
                idle_timeout=args.idle_timeout,
                stall_timeout=args.stall_timeout,
                host=args.host,
                port=args.port,
                database_url=demo_store(args.database_url, args.workdir),
                jar=jar if jar.is_file() else None,
            ),
            DemoDashboard.serve,
        )
    except DemoError as error:
        raise CliError(str(error)) from error


def demo_store(database_url: str | None, workdir: Path) -> str:
    """The demo's store: --database-url, else $WMON_DATABASE_URL, else wmon.db in its workdir,
    beside its logs and checkpoints (not the default store, which the demo would fill with
    its queries)."""
    return (
        database_url
        or os.environ.get("WMON_DATABASE_URL")
        or f"sqlite:///{(workdir / 'wmon.db').resolve()}"
    )


class DemoDashboard:
    """The dashboard beside the demo: served from a background thread, evaluating alerts."""

    def __init__(self, app: Any, server: Any) -> None:
        self.app, self.server, self.port = app, server, server.port

    @classmethod
    def serve(cls, options: Any) -> DemoDashboard:
        """Serve the demo's store at the demo's address, with the demo's stall timeout."""
        from werkzeug.serving import make_server

        import web
        from web import create_app

        config: dict[str, Any] = {}
        if options.database_url:
            config["DATABASE_URL"] = options.database_url
        listener = _bound_socket(options.host, options.port)
        _create_store(options.database_url)
        app = create_app(config)
        web.start(app)
        server = make_server(
            options.host,
            options.port,
            app,
            threaded=True,
            request_handler=_quiet_requests(),
            fd=listener.fileno(),
        )
        threading.Thread(target=server.serve_forever, name="dashboard", daemon=True).start()
        return cls(app, server)

    def overview(self) -> dict[str, Any]:
        """The body of GET /api/queries."""
        body: dict[str, Any] = self.app.test_client().get("/api/queries").get_json()
        return body

    def stop(self) -> None:
        """Stop serving, and the background work."""
        import web

        self.server.shutdown()
        web.stop(self.app)


def _create_store(database_url: str | None) -> None:
    """Create or migrate the demo's store before the dashboard's background work looks at it:
    on a first run there is none yet, and the queries' monitor would make it only later."""
    from monitor.store.schema import migrate
    from wmon.runtime import open_store

    engine = open_store(database_url, must_exist=False)
    try:
        migrate.upgrade(engine)
    finally:
        engine.dispose()


def _quiet_requests() -> type:
    """Werkzeug's request handler without its line per request: a browser's polling would
    drown the demo's status lines (hundreds of lines in ten minutes). Errors are still logged."""
    from werkzeug.serving import WSGIRequestHandler

    class QuietRequests(WSGIRequestHandler):
        """Werkzeug's handler, silent about the requests it serves."""

        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            """Log nothing for a request served."""

    return QuietRequests


def _bound_socket(host: str, port: int) -> socket.socket:
    """A listening socket on the address: bound here, as Werkzeug exits the process when it
    cannot bind, rather than raising."""
    from streaming.demo import DemoError

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as error:
        listener.close()
        raise DemoError(
            f"cannot serve the dashboard on {host}:{port}: {error.strerror} "
            "(choose another with --port)"
        ) from error
    listener.listen(128)
    return listener

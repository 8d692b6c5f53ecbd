"""The front-end libraries, served from web/node_modules (installed by `make setup`, npm ci).

Only the files on the allow-list are served: nothing else under node_modules is reachable.
The folder may be set with the app's NODE_MODULES setting.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, abort, current_app, send_file

bp = Blueprint("vendor", __name__, url_prefix="/vendor")

NODE_MODULES = Path(__file__).resolve().parents[1] / "node_modules"
FILES = {
    "uPlot.esm.js": "uplot/dist/uPlot.esm.js",
    "uPlot.min.css": "uplot/dist/uPlot.min.css",
    "socket.io.esm.min.js": "socket.io-client/dist/socket.io.esm.min.js",
}
MISSING = "wmon: the dashboard's front-end libraries are not installed: run `make setup`.\n"


@bp.get("/<name>")
def library(name: str) -> Response | tuple[str, int, dict[str, str]]:
    """One allowed library file; 404 for any other name, 503 when npm ci has not run."""
    if name not in FILES:
        abort(404)
    path = Path(current_app.config.get("NODE_MODULES", NODE_MODULES)) / FILES[name]
    if not path.is_file():
        return MISSING, 503, {"Content-Type": "text/plain; charset=utf-8"}
    return send_file(path, max_age=3600)

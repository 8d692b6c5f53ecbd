"""The pages; until the dashboard's front end arrives, a placeholder that points to the API."""

from __future__ import annotations

from flask import Blueprint

bp = Blueprint("pages", __name__)

PLACEHOLDER = (
    "wmon: the dashboard pages are coming. The JSON API is at /api/queries, "
    "live updates on Socket.IO (see the README).\n"
)


@bp.get("/")
def index() -> tuple[str, int, dict[str, str]]:
    """A plain-text note that the dashboard is coming."""
    return PLACEHOLDER, 200, {"Content-Type": "text/plain; charset=utf-8"}

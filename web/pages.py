"""The dashboard's pages: plain templates that the ES modules in static/js fill from the API."""

from __future__ import annotations

import sqlalchemy.exc as sa_exc
from flask import Blueprint, Response, render_template

from monitor.store.engine import StoreError, error_reason
from monitor.store.models import Query
from monitor.store.reads import QueryNotFound, find_query
from web import db

bp = Blueprint("pages", __name__)

# Scripts only from this server and never inline: even a name that slipped into the page as
# HTML could not run anything.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


@bp.after_request
def secure(response: Response) -> Response:
    """Every page gets the content security policy."""
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    return response


@bp.errorhandler(QueryNotFound)
def query_not_found(error: QueryNotFound) -> tuple[str, int]:
    """An unknown query id or name: a page saying so, 404."""
    return render_template("error.html", message=str(error.args[0])), 404


@bp.errorhandler(StoreError)
@bp.errorhandler(sa_exc.DatabaseError)
def store_unavailable(error: Exception) -> tuple[str, int]:
    """The store cannot be read: a page saying why, 503."""
    reason = str(error) if isinstance(error, StoreError) else error_reason(error)
    return render_template("error.html", message=f"cannot use the store: {reason}"), 503


def _query(ref: str) -> Query:
    return find_query(db.session(), ref)


@bp.get("/")
def overview() -> str:
    """Every query with its status and figures, problems first, updated live."""
    return render_template("overview.html")


@bp.get("/queries/<ref>")
def query(ref: str) -> str:
    """One query: partitions, watermarks, skew, batches and timers, updated live."""
    return render_template("query.html", query=_query(ref))


@bp.get("/queries/<ref>/history")
def history(ref: str) -> str:
    """One query over a chosen time range, downsampled, with a CSV export."""
    return render_template("history.html", query=_query(ref))


@bp.get("/alerts")
def alerts() -> str:
    """Pending and firing alerts with their actions, the silences in force and the alerts that
    ended, updated live; a warning when a changed rules file cannot be used."""
    return render_template("alerts.html")

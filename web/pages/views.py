"""The dashboard's pages: plain templates that the ES modules in static/js fill from the API.

Each page first looks at the store, so a store that cannot be used is a 503 page saying why
(see :mod:`web.guards.errors`) rather than an empty page that waits for data.
"""

from __future__ import annotations

from flask import Blueprint, render_template

from monitor.store.read.queries import find_query
from monitor.store.schema.models import Query
from web import db

bp = Blueprint("pages", __name__)


def _query(ref: str) -> Query:
    return find_query(db.session(), ref)


@bp.get("/")
def overview() -> str:
    """Every query with its status and figures, problems first, updated live."""
    db.check()
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
    db.check()
    return render_template("alerts.html")

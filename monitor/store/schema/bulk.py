"""Insert many rows of one table at once, inside the caller's transaction: with `COPY` on
PostgreSQL, with one prepared statement executed for every row on SQLite.

The rows go to the driver as they are, past SQLAlchemy's per-row type processing, which took
most of the time of a large insert; JSON columns are serialized here, as SQLAlchemy would.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa


def _json(value: Any) -> str:
    """A JSON cell's text, as json.dumps writes it; the common empty values without a call."""
    if value is None:
        return "null"
    if not value and isinstance(value, (list, dict)):
        return "[]" if isinstance(value, list) else "{}"
    return json.dumps(value)


def insert_rows(connection: sa.Connection, table: sa.Table, rows: Sequence[dict[str, Any]]) -> None:
    """Insert `rows`, column dicts that all have the same columns, into `table`."""
    if not rows:
        return
    columns = list(rows[0])
    values = [tuple(map(row.__getitem__, columns)) for row in rows]
    for index, name in enumerate(columns):
        if isinstance(table.c[name].type, sa.JSON):
            values = [(*v[:index], _json(v[index]), *v[index + 1 :]) for v in values]
    names = ", ".join(f'"{name}"' for name in columns)
    driver = connection.connection.driver_connection
    if driver is None:
        raise sa.exc.InvalidRequestError("insert_rows needs an open connection")
    if connection.dialect.name == "postgresql":
        statement = f'COPY "{table.name}" ({names}) FROM STDIN'
        with driver.cursor() as cursor, cursor.copy(statement) as copy:
            for row in values:
                copy.write_row(row)
        return
    marks = ", ".join("?" for _ in columns)
    cursor = driver.cursor()
    try:
        cursor.executemany(f'INSERT INTO "{table.name}" ({names}) VALUES ({marks})', values)
    finally:
        cursor.close()

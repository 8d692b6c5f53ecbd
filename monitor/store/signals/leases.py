"""Leases in the store, so that of several processes exactly one does a job: evaluates the
alert rules or watches the store for the dashboard's live push.

The holder renews it on every pass; another process takes it over only once it has expired
(a holder that died). The lease's row also keeps when a holder last finished the job, through
hand-overs, for the monitor's own health. Each step is one short transaction, the same on
SQLite and PostgreSQL.
"""

from __future__ import annotations

import os
import socket
import uuid

import sqlalchemy as sa
import sqlalchemy.exc as sa_exc
import sqlalchemy.orm as so

from monitor.store.schema.models import Lease


def new_holder() -> str:
    """A holder's name, unique to the asker: `host:pid:random`, so that a lease's row says
    which process holds it."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def acquire(engine: sa.Engine, name: str, holder: str, now_ms: int, ttl_ms: int) -> bool:
    """Take or renew the lease `name` for `holder` until now + ttl; False if another holds it."""
    with engine.begin() as connection:
        renewed = connection.execute(
            sa.update(Lease)
            .where(
                Lease.name == name,
                sa.or_(Lease.holder == holder, Lease.expires_at_ms <= now_ms),
            )
            .values(holder=holder, expires_at_ms=now_ms + ttl_ms)
        )
        if renewed.rowcount:
            return True
    try:
        with engine.begin() as connection:
            connection.execute(
                sa.insert(Lease).values(name=name, holder=holder, expires_at_ms=now_ms + ttl_ms)
            )
    except sa_exc.IntegrityError:
        return False  # it exists and someone else holds it, or took it first just now
    return True


def done(engine: sa.Engine, name: str, holder: str, now_ms: int) -> None:
    """Record that `holder` finished the job at `now_ms`, if it holds the lease."""
    with engine.begin() as connection:
        connection.execute(
            sa.update(Lease)
            .where(Lease.name == name, Lease.holder == holder)
            .values(done_at_ms=now_ms)
        )


def release(engine: sa.Engine, name: str, holder: str) -> None:
    """Give the lease up, if `holder` has it, so that another process may take it at once."""
    with engine.begin() as connection:
        connection.execute(
            sa.update(Lease)
            .where(Lease.name == name, Lease.holder == holder)
            .values(expires_at_ms=0)
        )


def job_done_at(session: so.Session, lease: str) -> int | None:
    """When a holder of the lease `lease` last finished its job; None if none has."""
    return session.scalar(sa.select(Lease.done_at_ms).where(Lease.name == lease))


def job_held(session: so.Session, lease: str, now_ms: int) -> bool:
    """Whether a holder holds the lease `lease` at `now_ms`: a process is doing its job."""
    expires = session.scalar(sa.select(Lease.expires_at_ms).where(Lease.name == lease))
    return expires is not None and expires > now_ms

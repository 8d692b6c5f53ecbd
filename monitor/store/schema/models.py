"""Typed SQLAlchemy models of the store; the schema itself changes only through migrations/."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
import sqlalchemy.orm as so

# Times are epoch milliseconds: exact, the same on SQLite and PostgreSQL, cheap to bucket.
Millis = sa.BigInteger
# SQLite only auto-increments an INTEGER PRIMARY KEY; history tables need 64 bits elsewhere.
RowId = sa.BigInteger().with_variant(sa.Integer, "sqlite")
# Names and partitions as jobs give them, of any length the write path lets in (events.MAX_NAME).
# SQLite never enforced the 255 these columns were made with, so its tables keep that type.
JobText = sa.Text().with_variant(sa.String(255), "sqlite")


class Base(so.DeclarativeBase):
    """Declarative base of every table."""

    metadata = sa.MetaData(
        naming_convention={
            "ix": "ix_%(table_name)s_%(column_0_N_name)s",
            "uq": "uq_%(table_name)s_%(column_0_N_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )


class Query(Base):
    """A streaming query, by its id that is stable across restarts; the latest state of it."""

    __tablename__ = "queries"

    id: so.Mapped[str] = so.mapped_column(sa.String(36), primary_key=True)
    name: so.Mapped[str | None] = so.mapped_column(JobText, index=True)
    run_id: so.Mapped[str] = so.mapped_column(sa.String(36))
    status: so.Mapped[str] = so.mapped_column(sa.String(16))
    started_at_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    updated_at_ms: so.Mapped[int] = so.mapped_column(Millis)
    last_batch_id: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    terminated_at_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    exception: so.Mapped[str | None] = so.mapped_column(sa.Text)
    error_class: so.Mapped[str | None] = so.mapped_column(JobText)
    # How far the time its job last claimed was ahead of when the event was stored (0 when
    # it was not; None before any was stored with this kept): a driver's clock running ahead.
    clock_ahead_ms: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    # How far behind when its event arrived the time its job last claimed was, for events
    # that arrive as they happen (a listener, the collector; None for events read from a log):
    # a driver's clock running behind, or events that waited on the way.
    clock_behind_ms: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    # The batch in flight, as the driver last said, and since when: None once it is stored,
    # or when no driver tells (the JVM listener and event logs do not).
    running_batch_id: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    running_since_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    # Since when the query's batches, and its per-minute rollups, are all still stored: the
    # cutoff of the last prune that deleted some (None: nothing of it was ever pruned). Reads
    # of older ranges use a coarser tier, and rolling minutes up again starts no earlier.
    batches_kept_from_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    minutes_kept_from_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    # The query a reset of its Declarative Pipeline flow replaced: the flow's query before the
    # full refresh that gave it a new checkpoint, and so a new id (None: not a reset).
    replaces_id: so.Mapped[str | None] = so.mapped_column(sa.String(36), index=True)


class Run(Base):
    """One start of a query: from started to idle to terminated."""

    __tablename__ = "runs"

    run_id: so.Mapped[str] = so.mapped_column(sa.String(36), primary_key=True)
    query_id: so.Mapped[str] = so.mapped_column(sa.ForeignKey("queries.id"), index=True)
    name: so.Mapped[str | None] = so.mapped_column(JobText)
    started_at_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    last_idle_at_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    terminated_at_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    exception: so.Mapped[str | None] = so.mapped_column(sa.Text)
    error_class: so.Mapped[str | None] = so.mapped_column(JobText)
    # Where the run stands in its query's lineage (store.lineage): when it began (its start,
    # or else its earliest batch), when the store first heard of it, and the first and last
    # batch ids stored from it (None when none is, or every one was superseded).
    began_at_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    first_stored_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    first_batch_id: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    last_batch_id: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    # Its trigger, where the way in read it from the running query (Spark's events do not
    # carry it): its kind as Spark names it (ProcessingTime, AvailableNow, OneTime, Continuous, …)
    # and, for a periodic one, its interval (0: each batch as soon as the last ends).
    trigger: so.Mapped[str | None] = so.mapped_column(sa.String(32))
    trigger_interval_ms: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    # The Spark application whose event log `wmon ingest` read the run from (None otherwise):
    # when that application ends, a run still running ends with it.
    app_id: so.Mapped[str | None] = so.mapped_column(sa.String(255), index=True)


class Batch(Base):
    """One micro-batch of a query: watermark, event times, rows, rates and durations."""

    __tablename__ = "batches"
    __table_args__ = (
        sa.UniqueConstraint("query_id", "batch_id"),
        sa.Index(None, "query_id", "batch_time_ms"),
    )

    id: so.Mapped[int] = so.mapped_column(RowId, primary_key=True)
    query_id: so.Mapped[str] = so.mapped_column(sa.ForeignKey("queries.id"))
    batch_id: so.Mapped[int] = so.mapped_column(sa.BigInteger)
    run_id: so.Mapped[str] = so.mapped_column(sa.String(36))
    batch_time_ms: so.Mapped[int] = so.mapped_column(Millis)
    watermark_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    event_time_min_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    event_time_max_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    event_time_avg_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    num_input_rows: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    input_rows_per_second: so.Mapped[float | None] = so.mapped_column(sa.Float)
    processed_rows_per_second: so.Mapped[float | None] = so.mapped_column(sa.Float)
    trigger_duration_ms: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    durations_ms: so.Mapped[dict[str, int]] = so.mapped_column(sa.JSON)
    watermark_advanced_at_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    watermark_stalled: so.Mapped[bool] = so.mapped_column(sa.Boolean, server_default=sa.false())
    watermark_rewound: so.Mapped[bool] = so.mapped_column(sa.Boolean, server_default=sa.false())
    watermark_skew_ms: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    flink_watermark_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    # When the write path stored it (None for batches stored before this was recorded).
    stored_at_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    # Who set this batch's watermark: the partition, and its record ([key, event ms, offset])
    # with the largest event time read before the batch; None where that is not measured.
    watermark_driver_partition: so.Mapped[str | None] = so.mapped_column(JobText)
    watermark_driver_record: so.Mapped[list[Any] | None] = so.mapped_column(sa.JSON)
    # Whether PostgreSQL's expiry kept this row past its day's partition, as its query's newest
    # batch (store.day_partitions); never set on SQLite, whose prune deletes the rows around it.
    kept: so.Mapped[bool] = so.mapped_column(sa.Boolean, server_default=sa.false())

    @property
    def watermark_state(self) -> str:
        """'stalled', 'rewound' or 'ok', as derived when the batch was stored."""
        if self.watermark_stalled:
            return "stalled"
        return "rewound" if self.watermark_rewound else "ok"


class StateOperator(Base):
    """One stateful operator in one batch, with its timer counts for that batch."""

    __tablename__ = "state_operators"
    __table_args__ = (sa.UniqueConstraint("query_id", "batch_id", "operator_index"),)

    id: so.Mapped[int] = so.mapped_column(RowId, primary_key=True)
    query_id: so.Mapped[str] = so.mapped_column(sa.ForeignKey("queries.id"))
    batch_id: so.Mapped[int] = so.mapped_column(sa.BigInteger)
    batch_time_ms: so.Mapped[int] = so.mapped_column(Millis)
    operator_index: so.Mapped[int] = so.mapped_column(sa.Integer)
    operator_name: so.Mapped[str | None] = so.mapped_column(JobText)
    num_rows_total: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    num_rows_updated: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    num_rows_removed: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    num_rows_dropped_by_watermark: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    memory_used_bytes: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    num_registered_timers: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    num_deleted_timers: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    num_expired_timers: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    custom_metrics: so.Mapped[dict[str, Any]] = so.mapped_column(sa.JSON)
    # Whether PostgreSQL's expiry kept this row past its day's partition, as its query's newest
    # batch (store.day_partitions); never set on SQLite, whose prune deletes the rows around it.
    kept: so.Mapped[bool] = so.mapped_column(sa.Boolean, server_default=sa.false())


class Source(Base):
    """One source in one batch: its figures (its partitions' offsets are in `batch_offsets`)."""

    __tablename__ = "sources"
    __table_args__ = (sa.UniqueConstraint("query_id", "batch_id", "source_index"),)

    id: so.Mapped[int] = so.mapped_column(RowId, primary_key=True)
    query_id: so.Mapped[str] = so.mapped_column(sa.ForeignKey("queries.id"))
    batch_id: so.Mapped[int] = so.mapped_column(sa.BigInteger)
    batch_time_ms: so.Mapped[int] = so.mapped_column(Millis)
    source_index: so.Mapped[int] = so.mapped_column(sa.Integer)
    description: so.Mapped[str] = so.mapped_column(sa.Text)
    kind: so.Mapped[str] = so.mapped_column(sa.String(32))
    num_input_rows: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    input_rows_per_second: so.Mapped[float | None] = so.mapped_column(sa.Float)
    processed_rows_per_second: so.Mapped[float | None] = so.mapped_column(sa.Float)
    # Whether PostgreSQL's expiry kept this row past its day's partition, as its query's newest
    # batch (store.day_partitions); never set on SQLite, whose prune deletes the rows around it.
    kept: so.Mapped[bool] = so.mapped_column(sa.Boolean, server_default=sa.false())


class BatchOffsets(Base):
    """Every source partition of one batch, packed into one row (store.batch_offsets): their
    offsets, arrival and advance times and flags; with their summed offset lag and whether
    any was rewound, for reads across batches."""

    __tablename__ = "batch_offsets"

    query_id: so.Mapped[str] = so.mapped_column(sa.ForeignKey("queries.id"), primary_key=True)
    batch_id: so.Mapped[int] = so.mapped_column(sa.BigInteger, primary_key=True)
    batch_time_ms: so.Mapped[int] = so.mapped_column(Millis)
    partitions: so.Mapped[bytes] = so.mapped_column(sa.LargeBinary)
    offset_lag: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    rewound: so.Mapped[bool] = so.mapped_column(sa.Boolean)
    # Whether PostgreSQL's expiry kept this row past its day's partition, as its query's newest
    # batch (store.day_partitions); never set on SQLite, whose prune deletes the rows around it.
    kept: so.Mapped[bool] = so.mapped_column(sa.Boolean, server_default=sa.false())


class BatchEventTimes(Base):
    """Every measured partition of one batch, as the instrumented operator measured it, packed
    into one row (store.batch_event_times), with the partitions' late and future-dated
    records summed, for reads across batches.

    Every partition seen so far is in every batch (zero records when it had none), with
    running figures (totals so far, the max event time), so that any range is read from its
    first and last batches.
    """

    __tablename__ = "batch_event_times"
    __table_args__ = (
        # Batches with future-dated records, by time: few, and all that future_dated reads.
        sa.Index(
            "ix_batch_event_times_future",
            "query_id",
            "batch_time_ms",
            sqlite_where=sa.text("future_records > 0"),
            postgresql_where=sa.text("future_records > 0"),
        ),
    )

    query_id: so.Mapped[str] = so.mapped_column(sa.ForeignKey("queries.id"), primary_key=True)
    batch_id: so.Mapped[int] = so.mapped_column(sa.BigInteger, primary_key=True)
    batch_time_ms: so.Mapped[int] = so.mapped_column(Millis)
    partitions: so.Mapped[bytes] = so.mapped_column(sa.LargeBinary)
    late_records: so.Mapped[int] = so.mapped_column(sa.BigInteger)
    future_records: so.Mapped[int] = so.mapped_column(sa.BigInteger)
    # Whether PostgreSQL's expiry kept this row past its day's partition, as its query's newest
    # batch (store.day_partitions); never set on SQLite, whose prune deletes the rows around it.
    kept: so.Mapped[bool] = so.mapped_column(sa.Boolean, server_default=sa.false())


class PartitionMinute(Base):
    """Every source partition of a query over one minute, packed (store.packing) into one row:
    what the minute's batches showed of each (store.minutes.PARTITION_FOLDS), so that a range
    of hours is read from a row a minute and still shows the largest lag and any stall."""

    __tablename__ = "partition_minutes"

    query_id: so.Mapped[str] = so.mapped_column(sa.String(36), primary_key=True)
    minute_ms: so.Mapped[int] = so.mapped_column(Millis, primary_key=True)
    figures: so.Mapped[bytes] = so.mapped_column(sa.LargeBinary)
    # The measured partitions' lateness histograms, summed (store.packing); None when none was.
    histograms: so.Mapped[bytes | None] = so.mapped_column(sa.LargeBinary)


class PartitionHour(Base):
    """Every source partition of a query over one hour, packed: its minutes folded, for ranges
    of days."""

    __tablename__ = "partition_hours"

    query_id: so.Mapped[str] = so.mapped_column(sa.String(36), primary_key=True)
    hour_ms: so.Mapped[int] = so.mapped_column(Millis, primary_key=True)
    figures: so.Mapped[bytes] = so.mapped_column(sa.LargeBinary)
    histograms: so.Mapped[bytes | None] = so.mapped_column(sa.LargeBinary)


class QueryRollupFigures:
    """What a rollup row holds of one query over its span (a minute, an hour): what the span's
    batches showed, summed, maxed or counted (store.minutes writes them). An average over the
    span is a sum over the count of the batches that had the figure."""

    batches: so.Mapped[int] = so.mapped_column(sa.Integer)
    first_batch_id: so.Mapped[int] = so.mapped_column(sa.BigInteger)
    last_batch_id: so.Mapped[int] = so.mapped_column(sa.BigInteger)
    # The query's watermark: its lowest and highest, Flink's highest, and the largest age
    # (batch time − watermark).
    watermark_min_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    watermark_max_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    flink_watermark_max_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    watermark_age_max_ms: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    skew_sum_ms: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    skew_batches: so.Mapped[int] = so.mapped_column(sa.Integer)
    skew_max_ms: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    duration_sum_ms: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    duration_batches: so.Mapped[int] = so.mapped_column(sa.Integer)
    duration_max_ms: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    input_rows: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    input_rate_sum: so.Mapped[float | None] = so.mapped_column(sa.Float)
    input_rate_batches: so.Mapped[int] = so.mapped_column(sa.Integer)
    processed_rate_sum: so.Mapped[float | None] = so.mapped_column(sa.Float)
    processed_rate_batches: so.Mapped[int] = so.mapped_column(sa.Integer)
    # How many of the span's batches found the watermark stalled or rewound.
    stalled_batches: so.Mapped[int] = so.mapped_column(sa.Integer)
    rewound_batches: so.Mapped[int] = so.mapped_column(sa.Integer)
    # The state operators: rows dropped by the watermark (summed), and the largest total of
    # rows and of memory any batch of the span held across them.
    rows_dropped_by_watermark: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    state_rows_max: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    state_memory_max_bytes: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)


class QueryMinute(QueryRollupFigures, Base):
    """One query over one minute: its batches' query-wide figures, for ranges of hours."""

    __tablename__ = "query_minutes"

    query_id: so.Mapped[str] = so.mapped_column(sa.String(36), primary_key=True)
    minute_ms: so.Mapped[int] = so.mapped_column(Millis, primary_key=True)


class QueryHour(QueryRollupFigures, Base):
    """One query over one hour: its minutes folded, for ranges of days."""

    __tablename__ = "query_hours"

    query_id: so.Mapped[str] = so.mapped_column(sa.String(36), primary_key=True)
    hour_ms: so.Mapped[int] = so.mapped_column(Millis, primary_key=True)


class TimerSnapshotRow(Base):
    """A query's pending timers at one moment, as the state reader found them."""

    __tablename__ = "timer_snapshots"
    __table_args__ = (sa.Index(None, "query_id", "taken_at_ms"),)

    id: so.Mapped[int] = so.mapped_column(RowId, primary_key=True)
    query_id: so.Mapped[str] = so.mapped_column(sa.ForeignKey("queries.id"))
    taken_at_ms: so.Mapped[int] = so.mapped_column(Millis)
    watermark_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    pending: so.Mapped[int] = so.mapped_column(sa.BigInteger)
    next_expiry_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    due_within_ms: so.Mapped[int] = so.mapped_column(sa.BigInteger)
    due: so.Mapped[int] = so.mapped_column(sa.BigInteger)


# The states of an alert that is live: its condition holds, and it may fire or has fired.
LIVE_ALERT_STATES = ("pending", "firing")


class AlertRow(Base):
    """One alert: a rule's condition on one query, from pending to resolved.

    At most one alert per rule and query is live (pending or firing), whatever partitions it
    covers; resolved and cancelled ones stay as history, and the next time the condition holds
    a new alert starts. On PostgreSQL its pages are kept half full (migration 0016), as each
    evaluation rewrites every live alert.
    """

    __tablename__ = "alerts"
    __table_args__ = (
        sa.Index(
            "uq_alerts_live",
            "rule",
            "query_id",
            unique=True,
            sqlite_where=sa.text("state IN ('pending', 'firing')"),
            postgresql_where=sa.text("state IN ('pending', 'firing')"),
        ),
        sa.Index(None, "query_id", "active_since_ms"),
        sa.Index(None, "state"),
    )

    id: so.Mapped[int] = so.mapped_column(RowId, primary_key=True)
    rule: so.Mapped[str] = so.mapped_column(sa.String(64))
    query_id: so.Mapped[str] = so.mapped_column(sa.ForeignKey("queries.id"))
    # The partitions the alert is about, as its rule last found them; [] for the query itself.
    partitions: so.Mapped[list[str]] = so.mapped_column(sa.JSON)
    severity: so.Mapped[str] = so.mapped_column(sa.String(16))
    state: so.Mapped[str] = so.mapped_column(sa.String(16))
    active_since_ms: so.Mapped[int] = so.mapped_column(Millis)
    # The last time its rule found the condition (a firing alert stays `keep_firing_for`).
    held_at_ms: so.Mapped[int] = so.mapped_column(Millis)
    fired_at_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    resolved_at_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    value: so.Mapped[float | None] = so.mapped_column(sa.Float)
    message: so.Mapped[str] = so.mapped_column(sa.Text)
    # The rule whose alert on the same query explains this one: told only once that is gone.
    caused_by: so.Mapped[str | None] = so.mapped_column(sa.String(64))
    acknowledged_at_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    acknowledged_by: so.Mapped[str | None] = so.mapped_column(sa.String(255))


class AlertEvent(Base):
    """One transition of an alert (pending, firing, resolved, cancelled, acknowledged)."""

    __tablename__ = "alert_events"
    __table_args__ = (sa.Index(None, "alert_id", "at_ms"), sa.Index(None, "at_ms"))

    id: so.Mapped[int] = so.mapped_column(RowId, primary_key=True)
    alert_id: so.Mapped[int] = so.mapped_column(sa.ForeignKey("alerts.id"))
    transition: so.Mapped[str] = so.mapped_column(sa.String(16))
    at_ms: so.Mapped[int] = so.mapped_column(Millis)
    value: so.Mapped[float | None] = so.mapped_column(sa.Float)
    message: so.Mapped[str] = so.mapped_column(sa.Text)


class Silence(Base):
    """Alerts matching a rule, query and partition (None: any; an alert matches a partition when
    it covers that partition alone) are not notified until `until`."""

    __tablename__ = "silences"
    __table_args__ = (sa.Index(None, "until_ms"),)

    id: so.Mapped[int] = so.mapped_column(RowId, primary_key=True)
    rule: so.Mapped[str | None] = so.mapped_column(sa.String(64))
    query_id: so.Mapped[str | None] = so.mapped_column(sa.String(36))
    partition: so.Mapped[str | None] = so.mapped_column(JobText)
    created_at_ms: so.Mapped[int] = so.mapped_column(Millis)
    until_ms: so.Mapped[int] = so.mapped_column(Millis)
    created_by: so.Mapped[str | None] = so.mapped_column(sa.String(255))
    comment: so.Mapped[str | None] = so.mapped_column(sa.Text)


class Lease(Base):
    """Who does a job that exactly one process may do (alert evaluation), until when."""

    __tablename__ = "leases"

    name: so.Mapped[str] = so.mapped_column(sa.String(64), primary_key=True)
    holder: so.Mapped[str] = so.mapped_column(sa.String(255))
    expires_at_ms: so.Mapped[int] = so.mapped_column(Millis)
    # When a holder last finished the job (None until one has).
    done_at_ms: so.Mapped[int | None] = so.mapped_column(Millis)


class Delivery(Base):
    """One notification of one alert transition to one receiver, until it is delivered.

    Written with the transition, in the same transaction: a notification is never lost, and
    the notifier retries it with backoff until the receiver takes it.
    """

    __tablename__ = "deliveries"
    __table_args__ = (
        sa.UniqueConstraint("alert_event_id", "receiver"),
        sa.Index(None, "receiver", "delivered_at_ms"),
    )

    id: so.Mapped[int] = so.mapped_column(RowId, primary_key=True)
    alert_event_id: so.Mapped[int] = so.mapped_column(sa.ForeignKey("alert_events.id"))
    receiver: so.Mapped[str] = so.mapped_column(sa.String(64))
    created_at_ms: so.Mapped[int] = so.mapped_column(Millis)
    attempts: so.Mapped[int] = so.mapped_column(sa.Integer, server_default=sa.text("0"))
    next_attempt_at_ms: so.Mapped[int] = so.mapped_column(Millis)
    delivered_at_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    # Set when the notifier gave up (too many attempts); the attempts say why.
    abandoned_at_ms: so.Mapped[int | None] = so.mapped_column(Millis)


class DeliveryAttempt(Base):
    """One try at a delivery: when, how long, and what the receiver answered."""

    __tablename__ = "delivery_attempts"
    __table_args__ = (sa.Index(None, "delivery_id", "at_ms"),)

    id: so.Mapped[int] = so.mapped_column(RowId, primary_key=True)
    delivery_id: so.Mapped[int] = so.mapped_column(sa.ForeignKey("deliveries.id"))
    at_ms: so.Mapped[int] = so.mapped_column(Millis)
    duration_ms: so.Mapped[int] = so.mapped_column(sa.Integer)
    ok: so.Mapped[bool] = so.mapped_column(sa.Boolean)
    status_code: so.Mapped[int | None] = so.mapped_column(sa.Integer)
    error: so.Mapped[str | None] = so.mapped_column(sa.Text)


class LogPosition(Base):
    """How far `wmon ingest` has read one event log file; written in the same transaction as
    the events read from it, so a restart resumes exactly where the store says."""

    __tablename__ = "log_positions"

    # Stable across the file's rename when its application ends (`x.inprogress` to `x`).
    key: so.Mapped[str] = so.mapped_column(sa.String(1024), primary_key=True)
    url: so.Mapped[str] = so.mapped_column(sa.Text)
    app_id: so.Mapped[str] = so.mapped_column(sa.String(255), index=True)
    # Decompressed bytes and whole lines read so far.
    bytes_read: so.Mapped[int] = so.mapped_column(sa.BigInteger)
    lines_read: so.Mapped[int] = so.mapped_column(sa.BigInteger)
    # The log's own clock there: the latest time its events had shown.
    clock_ms: so.Mapped[int | None] = so.mapped_column(Millis)
    # What was read of the file, known by its content: the stored (compressed) bytes read and
    # a digest of their two ends (ingest.fingerprint); none where stored before there were any.
    fingerprint_bytes: so.Mapped[int | None] = so.mapped_column(sa.BigInteger)
    fingerprint: so.Mapped[str | None] = so.mapped_column(sa.String(64))


class Sender(Base):
    """A JVM listener or an attached driver posting to the collector, and what it lost."""

    __tablename__ = "senders"

    id: so.Mapped[str] = so.mapped_column(sa.String(255), primary_key=True)
    first_seen_ms: so.Mapped[int] = so.mapped_column(Millis)
    last_seen_ms: so.Mapped[int] = so.mapped_column(Millis)
    events: so.Mapped[int] = so.mapped_column(sa.BigInteger)
    # The latest count of events it dropped (its queue full), as it reported it.
    dropped: so.Mapped[int] = so.mapped_column(sa.BigInteger)
    # Events from it the collector refused as invalid (set aside in rejected_events).
    rejected: so.Mapped[int] = so.mapped_column(sa.BigInteger, server_default=sa.text("0"))


class RejectedEvent(Base):
    """An event the write path refused as invalid, set aside with why, for an operator to
    list and, once what refused it is mended, to replay (`wmon rejected`)."""

    __tablename__ = "rejected_events"
    __table_args__ = (sa.Index(None, "received_at_ms"),)

    id: so.Mapped[int] = so.mapped_column(RowId, primary_key=True)
    received_at_ms: so.Mapped[int] = so.mapped_column(Millis)
    # Who sent it to the collector (Wmon-Sender), or the event log it was read from.
    origin: so.Mapped[str | None] = so.mapped_column(sa.Text)
    error: so.Mapped[str] = so.mapped_column(sa.Text)
    # The event as it came, in Spark's JSON form (its text made storable).
    document: so.Mapped[str] = so.mapped_column(sa.Text)

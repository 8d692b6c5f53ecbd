"""History tables: queries, runs, batches, state operators, sources, partitions.

Revision ID: 0001
Revises:
Create Date: 2026-11-22 02:50:48.941488
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "queries",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("started_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("last_batch_id", sa.BigInteger(), nullable=True),
        sa.Column("terminated_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("exception", sa.Text(), nullable=True),
        sa.Column("error_class", sa.String(length=255), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_queries")),
    )
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_queries_name"), ["name"], unique=False)

    op.create_table(
        "batches",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("query_id", sa.String(length=36), nullable=False),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("batch_time_ms", sa.BigInteger(), nullable=False),
        sa.Column("watermark_ms", sa.BigInteger(), nullable=True),
        sa.Column("event_time_min_ms", sa.BigInteger(), nullable=True),
        sa.Column("event_time_max_ms", sa.BigInteger(), nullable=True),
        sa.Column("event_time_avg_ms", sa.BigInteger(), nullable=True),
        sa.Column("num_input_rows", sa.BigInteger(), nullable=True),
        sa.Column("input_rows_per_second", sa.Float(), nullable=True),
        sa.Column("processed_rows_per_second", sa.Float(), nullable=True),
        sa.Column("trigger_duration_ms", sa.BigInteger(), nullable=True),
        sa.Column("durations_ms", sa.JSON(), nullable=False),
        sa.Column("observed_metrics", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["query_id"], ["queries.id"], name=op.f("fk_batches_query_id_queries")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_batches")),
        sa.UniqueConstraint("query_id", "batch_id", name=op.f("uq_batches_query_id_batch_id")),
    )
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_batches_query_id_batch_time_ms"),
            ["query_id", "batch_time_ms"],
            unique=False,
        )

    op.create_table(
        "partitions",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("query_id", sa.String(length=36), nullable=False),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.Column("batch_time_ms", sa.BigInteger(), nullable=False),
        sa.Column("source_index", sa.Integer(), nullable=False),
        sa.Column("partition", sa.String(length=255), nullable=False),
        sa.Column("topic", sa.String(length=255), nullable=True),
        sa.Column("start_offset", sa.BigInteger(), nullable=True),
        sa.Column("end_offset", sa.BigInteger(), nullable=True),
        sa.Column("latest_offset", sa.BigInteger(), nullable=True),
        sa.Column("offset_lag", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["query_id"], ["queries.id"], name=op.f("fk_partitions_query_id_queries")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_partitions")),
        sa.UniqueConstraint(
            "query_id",
            "batch_id",
            "source_index",
            "partition",
            name=op.f("uq_partitions_query_id_batch_id_source_index_partition"),
        ),
    )
    with op.batch_alter_table("partitions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_partitions_query_id_batch_time_ms"),
            ["query_id", "batch_time_ms"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_partitions_query_id_partition_batch_time_ms"),
            ["query_id", "partition", "batch_time_ms"],
            unique=False,
        )

    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("query_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("started_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("last_idle_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("terminated_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("exception", sa.Text(), nullable=True),
        sa.Column("error_class", sa.String(length=255), nullable=True),
        sa.ForeignKeyConstraint(
            ["query_id"], ["queries.id"], name=op.f("fk_runs_query_id_queries")
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_runs")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_runs_query_id"), ["query_id"], unique=False)

    op.create_table(
        "sources",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("query_id", sa.String(length=36), nullable=False),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.Column("source_index", sa.Integer(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("start_offset", sa.Text(), nullable=True),
        sa.Column("end_offset", sa.Text(), nullable=True),
        sa.Column("latest_offset", sa.Text(), nullable=True),
        sa.Column("num_input_rows", sa.BigInteger(), nullable=True),
        sa.Column("input_rows_per_second", sa.Float(), nullable=True),
        sa.Column("processed_rows_per_second", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["query_id"], ["queries.id"], name=op.f("fk_sources_query_id_queries")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sources")),
        sa.UniqueConstraint(
            "query_id",
            "batch_id",
            "source_index",
            name=op.f("uq_sources_query_id_batch_id_source_index"),
        ),
    )
    op.create_table(
        "state_operators",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("query_id", sa.String(length=36), nullable=False),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.Column("operator_index", sa.Integer(), nullable=False),
        sa.Column("operator_name", sa.String(length=255), nullable=True),
        sa.Column("num_rows_total", sa.BigInteger(), nullable=True),
        sa.Column("num_rows_updated", sa.BigInteger(), nullable=True),
        sa.Column("num_rows_removed", sa.BigInteger(), nullable=True),
        sa.Column("num_rows_dropped_by_watermark", sa.BigInteger(), nullable=True),
        sa.Column("memory_used_bytes", sa.BigInteger(), nullable=True),
        sa.Column("num_registered_timers", sa.BigInteger(), nullable=True),
        sa.Column("num_deleted_timers", sa.BigInteger(), nullable=True),
        sa.Column("num_expired_timers", sa.BigInteger(), nullable=True),
        sa.Column("custom_metrics", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["query_id"], ["queries.id"], name=op.f("fk_state_operators_query_id_queries")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_state_operators")),
        sa.UniqueConstraint(
            "query_id",
            "batch_id",
            "operator_index",
            name=op.f("uq_state_operators_query_id_batch_id_operator_index"),
        ),
    )


def downgrade() -> None:
    op.drop_table("state_operators")
    op.drop_table("sources")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_query_id"))

    op.drop_table("runs")
    with op.batch_alter_table("partitions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_partitions_query_id_partition_batch_time_ms"))
        batch_op.drop_index(batch_op.f("ix_partitions_query_id_batch_time_ms"))

    op.drop_table("partitions")
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_batches_query_id_batch_time_ms"))

    op.drop_table("batches")
    with op.batch_alter_table("queries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_queries_name"))

    op.drop_table("queries")

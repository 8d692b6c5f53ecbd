"""No index of the partitions' rows by partition and time: they are read a batch at a time.

Every read of `partitions` and `partition_event_times` goes by query and batch id (their unique
constraints) or by the partial index of future-dated rows; the `(query_id, partition,
batch_time_ms)` indexes cost 150 and 116 bytes a row on PostgreSQL (a 64-partition batch:
17 KB), and with table statistics SQLite's planner chose them to its cost (`python -m benchmarks
--storage`; docs/benchmarks.md#storage).

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27 21:00:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEXES = {
    "partitions": "ix_partitions_query_id_partition_batch_time_ms",
    "partition_event_times": "ix_partition_event_times_query_id_partition_batch_time_ms",
}


def upgrade() -> None:
    for table, index in INDEXES.items():
        op.drop_index(index, table_name=table)


def downgrade() -> None:
    for table, index in INDEXES.items():
        op.create_index(index, table, ["query_id", "partition", "batch_time_ms"])

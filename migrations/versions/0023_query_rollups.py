"""Per-minute and per-hour rollups of every query, filled from the batches the store holds.

`query_minutes` keeps, per query and minute, what the minute's batches showed query-wide: how
many (and the first and last batch id), the watermark's range, Flink's highest and the largest
age, sums, counts and maxima of skew and durations, input rows, the sums of the input and
processing rates with how many batches had them, stalled and rewound batches, rows dropped by
the watermark, and the most state rows and memory a batch held. `query_hours` holds the same an
hour a row. The History page's query charts read them for ranges of hours and days (the write
path keeps both as batches arrive, store.minutes); the batches already stored are rolled up
here in two statements.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-28 03:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# A sum that saturates at 64 bits, None over no values, as the write path folds.
SATURATED_SUM = {
    "sqlite": "CASE WHEN count({0}) = 0 THEN NULL ELSE "
    "CAST(min(max(total({0}), -9.2e18), 9.2e18) AS INTEGER) END",
    "postgresql": "LEAST(GREATEST(sum({0}), -9223372036854775808), 9223372036854775807)",
}
COLUMNS = """
    batches, first_batch_id, last_batch_id, watermark_min_ms, watermark_max_ms,
    flink_watermark_max_ms, watermark_age_max_ms, skew_sum_ms, skew_batches, skew_max_ms,
    duration_sum_ms, duration_batches, duration_max_ms, input_rows, input_rate_sum,
    input_rate_batches, processed_rate_sum, processed_rate_batches, stalled_batches,
    rewound_batches, rows_dropped_by_watermark, state_rows_max, state_memory_max_bytes
"""
# Each batch with its state operators' totals, grouped by minute.
ROLL_UP = f"""
    INSERT INTO query_minutes (query_id, minute_ms, {COLUMNS})
    SELECT b.query_id, b.batch_time_ms - b.batch_time_ms % 60000, count(*), min(b.batch_id),
        max(b.batch_id), min(b.watermark_ms), max(b.watermark_ms), max(b.flink_watermark_ms),
        max(b.batch_time_ms - b.watermark_ms), {{skew}}, count(b.watermark_skew_ms),
        max(b.watermark_skew_ms), {{duration}}, count(b.trigger_duration_ms),
        max(b.trigger_duration_ms), {{input_rows}}, sum(b.input_rows_per_second),
        count(b.input_rows_per_second), sum(b.processed_rows_per_second),
        count(b.processed_rows_per_second),
        sum(CASE WHEN b.watermark_stalled THEN 1 ELSE 0 END),
        sum(CASE WHEN b.watermark_rewound THEN 1 ELSE 0 END), {{dropped}}, max(o.state_rows),
        max(o.state_memory)
    FROM batches AS b
    LEFT JOIN (
        SELECT query_id, batch_id, {{operator_dropped}} AS dropped,
            {{operator_rows}} AS state_rows, {{operator_memory}} AS state_memory
        FROM state_operators GROUP BY query_id, batch_id
    ) AS o ON o.query_id = b.query_id AND o.batch_id = b.batch_id
    GROUP BY b.query_id, b.batch_time_ms - b.batch_time_ms % 60000
"""
SUMMED = {
    "skew": "b.watermark_skew_ms",
    "duration": "b.trigger_duration_ms",
    "input_rows": "b.num_input_rows",
    "dropped": "o.dropped",
    "operator_dropped": "num_rows_dropped_by_watermark",
    "operator_rows": "num_rows_total",
    "operator_memory": "memory_used_bytes",
}
FOLD_UP = f"""
    INSERT INTO query_hours (query_id, hour_ms, {COLUMNS})
    SELECT query_id, minute_ms - minute_ms % 3600000, sum(batches), min(first_batch_id),
        max(last_batch_id), min(watermark_min_ms), max(watermark_max_ms),
        max(flink_watermark_max_ms), max(watermark_age_max_ms), {{skew_sum_ms}},
        sum(skew_batches), max(skew_max_ms), {{duration_sum_ms}}, sum(duration_batches),
        max(duration_max_ms), {{input_rows}}, sum(input_rate_sum), sum(input_rate_batches),
        sum(processed_rate_sum), sum(processed_rate_batches), sum(stalled_batches),
        sum(rewound_batches), {{rows_dropped_by_watermark}}, max(state_rows_max),
        max(state_memory_max_bytes)
    FROM query_minutes
    GROUP BY query_id, minute_ms - minute_ms % 3600000
"""
FOLDED = ("skew_sum_ms", "duration_sum_ms", "input_rows", "rows_dropped_by_watermark")


def _columns() -> list[sa.Column[object]]:
    whole, count, rate = sa.BigInteger, sa.Integer, sa.Float
    return [
        sa.Column("batches", count(), nullable=False),
        sa.Column("first_batch_id", whole(), nullable=False),
        sa.Column("last_batch_id", whole(), nullable=False),
        sa.Column("watermark_min_ms", whole(), nullable=True),
        sa.Column("watermark_max_ms", whole(), nullable=True),
        sa.Column("flink_watermark_max_ms", whole(), nullable=True),
        sa.Column("watermark_age_max_ms", whole(), nullable=True),
        sa.Column("skew_sum_ms", whole(), nullable=True),
        sa.Column("skew_batches", count(), nullable=False),
        sa.Column("skew_max_ms", whole(), nullable=True),
        sa.Column("duration_sum_ms", whole(), nullable=True),
        sa.Column("duration_batches", count(), nullable=False),
        sa.Column("duration_max_ms", whole(), nullable=True),
        sa.Column("input_rows", whole(), nullable=True),
        sa.Column("input_rate_sum", rate(), nullable=True),
        sa.Column("input_rate_batches", count(), nullable=False),
        sa.Column("processed_rate_sum", rate(), nullable=True),
        sa.Column("processed_rate_batches", count(), nullable=False),
        sa.Column("stalled_batches", count(), nullable=False),
        sa.Column("rewound_batches", count(), nullable=False),
        sa.Column("rows_dropped_by_watermark", whole(), nullable=True),
        sa.Column("state_rows_max", whole(), nullable=True),
        sa.Column("state_memory_max_bytes", whole(), nullable=True),
    ]


def upgrade() -> None:
    for table, start in (("query_minutes", "minute_ms"), ("query_hours", "hour_ms")):
        op.create_table(
            table,
            sa.Column("query_id", sa.String(36), nullable=False),
            sa.Column(start, sa.BigInteger(), nullable=False),
            *_columns(),
            sa.PrimaryKeyConstraint("query_id", start, name=op.f(f"pk_{table}")),
        )
    connection = op.get_bind()
    summed = SATURATED_SUM[connection.dialect.name]
    connection.execute(
        sa.text(ROLL_UP.format(**{name: summed.format(sql) for name, sql in SUMMED.items()}))
    )
    connection.execute(sa.text(FOLD_UP.format(**{name: summed.format(name) for name in FOLDED})))


def downgrade() -> None:
    op.drop_table("query_hours")
    op.drop_table("query_minutes")

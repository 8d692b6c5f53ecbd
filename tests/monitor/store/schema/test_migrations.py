import dataclasses
import json

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from monitor.store.schema import migrate
from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import Base
from monitor.store.tiers.day_partitions import comparison_options, day_of, partition_name
from monitor.store.write.writes import write_events
from tests.support.group_events import T0, A, B, events, progress
from tests.support.stores import stored_rows


def test_there_is_exactly_one_head():
    assert len(ScriptDirectory.from_config(migrate.alembic_config()).get_heads()) == 1


def test_upgrade_an_empty_store_to_head_twice(empty_database_url):
    engine = create_engine(empty_database_url)
    assert migrate.current_revision(engine) is None and not migrate.is_current(engine)
    migrate.upgrade(engine)
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision()
    tables = set(sa.inspect(engine).get_table_names())
    assert {"queries", "runs", "batches", "state_operators", "sources", "batch_offsets"} <= tables
    engine.dispose()


def test_migrations_match_the_models(engine):
    with engine.connect() as connection:
        options = comparison_options(connection.dialect.name)
        context = MigrationContext.configure(connection, opts=options)
        differences = compare_metadata(context, Base.metadata)
    assert differences == []


def test_history_queries_have_their_indexes_and_no_more(engine):
    inspector = sa.inspect(engine)

    def indexes(table):
        return {tuple(i["column_names"]) for i in inspector.get_indexes(table)}

    def unique(table):
        return {tuple(u["column_names"]) for u in inspector.get_unique_constraints(table)}

    # On PostgreSQL, keys hold what the tables are partitioned by (store.day_partitions).
    by_day = ["kept", "batch_time_ms"] if engine.dialect.name == "postgresql" else []
    assert ("query_id", "batch_time_ms") in indexes("batches")
    # A batch's partitions are one row, read by its primary key alone.
    key = inspector.get_pk_constraint("batch_offsets")["constrained_columns"]
    assert key == ["query_id", "batch_id", *by_day]
    assert not indexes("batch_offsets") and not unique("batch_offsets")
    # So are its measured partitions; the batches with future-dated records are also found
    # by time.
    key = inspector.get_pk_constraint("batch_event_times")["constrained_columns"]
    assert key == ["query_id", "batch_id", *by_day]
    assert indexes("batch_event_times") == {("query_id", "batch_time_ms")}, "future-dated only"


def test_sqlite_store_runs_in_wal_mode(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'nested' / 'wmon.db'}")
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    engine.dispose()


def _to(engine, revision, command_name="upgrade"):
    with engine.begin() as connection:
        getattr(command, command_name)(migrate.alembic_config(connection), revision)


def store_at(database_url, revision):
    """A store migrated up to `revision`, holding query 'q' (run 'r')."""
    engine = create_engine(database_url)
    _to(engine, revision)
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "INSERT INTO queries (id, run_id, status, updated_at_ms) "
                "VALUES ('q', 'r', 'active', 1000)"
            )
        )
    return engine


def test_alerts_become_one_per_query_and_rule_and_live_partition_ones_end_told(
    empty_database_url,
):
    """Upgrading to 0017: a live alert about one partition is resolved (a pending one
    cancelled) with an event saying why, its resolved notification queued to whoever heard it
    fire; history keeps its partition as a list of one; the query's own alert lives on."""
    engine = store_at(empty_database_url, "0016")
    with engine.begin() as connection:
        for row_id, partition, state, rule in [
            (1, "t/1", "firing", "partition_stalled"),
            (2, "t/2", "pending", "partition_idle"),
            (3, "t/3", "resolved", "late_records"),
            (4, "", "firing", "no_progress"),
        ]:
            connection.execute(
                sa.text(
                    "INSERT INTO alerts (id, rule, query_id, partition, severity, state,"
                    " active_since_ms, fired_at_ms, message) VALUES (:id, :rule, 'q', :p,"
                    " 'critical', :state, 100, 200, 'm')"
                ),
                {"id": row_id, "rule": rule, "p": partition, "state": state},
            )
        connection.execute(
            sa.text(
                "INSERT INTO alert_events (id, alert_id, transition, at_ms, message)"
                " VALUES (10, 1, 'firing', 200, 'm')"
            )
        )
        connection.execute(
            sa.text(
                "INSERT INTO deliveries (alert_event_id, receiver, created_at_ms, attempts,"
                " next_attempt_at_ms, delivered_at_ms) VALUES (10, 'ops', 200, 1, 200, 210)"
            )
        )
    migrate.upgrade(engine)
    with engine.connect() as connection:
        alerts = connection.execute(
            sa.text("SELECT id, state, partitions, held_at_ms FROM alerts ORDER BY id")
        ).all()
        events = connection.execute(
            sa.text(
                "SELECT alert_id, transition, message FROM alert_events"
                " WHERE transition <> 'firing' ORDER BY alert_id"
            )
        ).all()
        queued = connection.execute(
            sa.text(
                "SELECT d.receiver, e.transition FROM deliveries d"
                " JOIN alert_events e ON e.id = d.alert_event_id WHERE d.delivered_at_ms IS NULL"
            )
        ).all()
    assert [
        (row_id, state, json.loads(p) if isinstance(p, str) else p, held > 0)
        for row_id, state, p, held in alerts
    ] == [
        (1, "resolved", ["t/1"], True),
        (2, "cancelled", ["t/2"], True),
        (3, "resolved", ["t/3"], True),
        (4, "firing", [], True),
    ]
    assert [(alert_id, transition) for alert_id, transition, _ in events] == [
        (1, "resolved"),
        (2, "cancelled"),
    ]
    assert all("one alert per query and rule" in message for _, _, message in events)
    assert queued == [("ops", "resolved")]
    _to(engine, "0016", "downgrade")
    with engine.connect() as connection:
        kept = connection.execute(sa.text("SELECT id, partition FROM alerts ORDER BY id")).all()
    assert [tuple(row) for row in kept] == [(1, "t/1"), (2, "t/2"), (3, "t/3"), (4, "")]
    engine.dispose()


def test_the_raw_observed_metrics_and_offsets_go_and_their_batches_stay(empty_database_url):
    """Upgrading to 0019: the batches and sources keep every other figure."""
    engine = store_at(empty_database_url, "0018")
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "INSERT INTO batches (id, query_id, batch_id, run_id, batch_time_ms,"
                " num_input_rows, durations_ms, observed_metrics)"
                " VALUES (1, 'q', 7, 'r', 1000, 40, '{}', :observed)"
            ),
            {"observed": json.dumps({"wmon": {"tasks": ["{}"]}})},
        )
        connection.execute(
            sa.text(
                "INSERT INTO sources (id, query_id, batch_id, source_index, description, kind,"
                " start_offset, end_offset, num_input_rows)"
                " VALUES (1, 'q', 7, 0, 'KafkaV2[Subscribe[t]]', 'kafka', :start, :end, 40)"
            ),
            {"start": '{"t":{"0":1}}', "end": '{"t":{"0":41}}'},
        )
    migrate.upgrade(engine)
    with engine.connect() as connection:
        batches = connection.execute(
            sa.text("SELECT query_id, batch_id, num_input_rows FROM batches")
        ).all()
        sources = connection.execute(
            sa.text("SELECT batch_id, description, kind, num_input_rows FROM sources")
        ).all()
    inspector = sa.inspect(engine)
    assert "observed_metrics" not in {c["name"] for c in inspector.get_columns("batches")}
    assert not {"start_offset", "end_offset", "latest_offset"} & {
        c["name"] for c in inspector.get_columns("sources")
    }
    assert [tuple(row) for row in batches] == [("q", 7, 40)]
    assert [tuple(row) for row in sources] == [(7, "KafkaV2[Subscribe[t]]", "kafka", 40)]
    engine.dispose()


def test_migrations_0021_and_0022_roll_up_the_batches_a_store_holds_as_the_write_path_does(
    engine,
):
    write_events(engine, events())
    tables = ("partition_minutes", "partition_hours")
    written = {query: stored_rows(engine, query, NEWER, tables) for query in (A, B)}
    assert len(written[A]["partition_minutes"]) > 20 and written[A]["partition_hours"]
    _to(engine, "0020", "downgrade")
    _to(engine, "head")
    for query in (A, B):
        assert stored_rows(engine, query, NEWER, tables) == written[query]


# What the partitions' rollups hold since migration 0025, which it leaves empty.
NEWER = ("delay_max_ms", "late_buckets", "slack_buckets")


def test_migration_0025_packs_the_partitions_rollups_and_its_downgrade_unpacks_them(engine):
    write_events(engine, events())
    tables = ("partition_minutes", "partition_hours")
    written = {query: stored_rows(engine, query, NEWER, tables) for query in (A, B)}
    assert any(row["late_buckets"] for row in stored_rows(engine, A, (), tables)[tables[0]])
    _to(engine, "0024", "downgrade")
    with engine.connect() as connection:
        for table, start in (("partition_minutes", "minute_ms"), ("partition_hours", "hour_ms")):
            rows = connection.execute(
                sa.text(f"SELECT * FROM {table} WHERE query_id = :q ORDER BY {start}, partition"),
                {"q": A},
            ).mappings()
            unpacked = [{k: v for k, v in row.items() if k != "query_id"} for row in rows]
            assert unpacked == sorted(
                ({k: v for k, v in row.items() if k != "query_id"} for row in written[A][table]),
                key=lambda row: (row[start], row["partition"]),
            )
    _to(engine, "head")
    for query in (A, B):
        assert stored_rows(engine, query, NEWER, tables) == written[query]


def test_migration_0026_packs_the_batches_partitions_and_its_downgrade_unpacks_them(engine):
    write_events(engine, events())
    written = {query: stored_rows(engine, query, tables=("batch_offsets",)) for query in (A, B)}
    assert any(row["stalled"] for row in written[A]["batch_offsets"])
    assert any(row["offset_lag"] for row in written[A]["batch_offsets"])
    _to(engine, "0025", "downgrade")
    flags = ("idle", "stalled", "rewound")
    with engine.connect() as connection:
        rows = connection.execute(
            sa.text("SELECT * FROM partitions WHERE query_id = :q ORDER BY id"), {"q": A}
        ).mappings()
        unpacked = [
            {k: bool(v) if k in flags else v for k, v in row.items() if k != "id"} for row in rows
        ]

    def in_order(rows):
        return sorted(
            rows, key=lambda row: (row["batch_id"], row["source_index"], row["partition"])
        )

    assert unpacked == in_order(unpacked), "in batch and source order"
    assert in_order(unpacked) == in_order(written[A]["batch_offsets"])
    _to(engine, "head")
    for query in (A, B):
        assert stored_rows(engine, query, tables=("batch_offsets",)) == written[query]


def test_migration_0027_packs_the_batches_event_times_and_its_downgrade_unpacks_them(engine):
    write_events(engine, events())
    tables = ("batch_event_times",)
    written = {query: stored_rows(engine, query, tables=tables) for query in (A, B)}
    measured = written[A]["batch_event_times"]
    assert any(row["late_samples"] for row in measured)
    assert any(row["late_buckets_total"] for row in measured)
    _to(engine, "0026", "downgrade")
    columns = sa.inspect(engine).get_columns("partition_event_times")
    json_columns = {column["name"] for column in columns if isinstance(column["type"], sa.JSON)}
    assert "late_samples" in json_columns
    with engine.connect() as connection:
        rows = connection.execute(
            sa.text("SELECT * FROM partition_event_times WHERE query_id = :q ORDER BY id"),
            {"q": A},
        ).mappings()
        # SQLite gives JSON columns' text.
        unpacked = [
            {
                k: json.loads(v) if isinstance(v, str) and k in json_columns else v
                for k, v in row.items()
            }
            for row in rows
        ]
    unpacked = [{k: v for k, v in row.items() if k != "id"} for row in unpacked]
    in_order = sorted(unpacked, key=lambda row: (row["batch_id"], row["partition"]))
    assert unpacked == in_order, "in batch and partition order"
    wrote = sorted(measured, key=lambda row: (row["batch_id"], row["partition"]))
    assert [{**row, "records_total": None} for row in unpacked] == [
        {**row, "records_total": None} for row in wrote
    ]
    # The records read so far are summed again from the batches stored, as they were written.
    _to(engine, "head")
    for query in (A, B):
        assert stored_rows(engine, query, tables=tables) == written[query]


def test_migration_0028_keeps_every_batch_row_and_on_postgresql_puts_each_in_its_day(engine):
    write_events(engine, events())
    tables = ("batches", "state_operators", "sources", "batch_offsets", "batch_event_times")
    written = {query: stored_rows(engine, query, tables=tables) for query in (A, B)}
    assert all(written[A][table] for table in tables)
    _to(engine, "0027", "downgrade")
    assert "batch_time_ms" not in {c["name"] for c in sa.inspect(engine).get_columns("sources")}
    _to(engine, "head")
    for query in (A, B):
        assert stored_rows(engine, query, tables=tables) == written[query]
    if engine.dialect.name != "postgresql":
        return
    with engine.connect() as connection:
        for table in tables:
            placed = connection.execute(
                sa.text(f"SELECT tableoid::regclass::text, batch_time_ms FROM {table}")
            ).all()
            assert placed and all(
                partition == partition_name(table, day_of(time_ms)) for partition, time_ms in placed
            ), table


def test_migration_0023_rolls_up_the_queries_batches_as_the_write_path_does(engine):
    write_events(engine, events())
    tables = ("query_minutes", "query_hours")
    written = {query: _rates_rounded(stored_rows(engine, query, tables=tables)) for query in (A, B)}
    assert len(written[A]["query_minutes"]) > 5 and written[A]["query_hours"]
    assert any(row["state_rows_max"] for row in written[A]["query_minutes"])
    _to(engine, "0022", "downgrade")
    _to(engine, "0023")
    for query in (A, B):
        assert _rates_rounded(stored_rows(engine, query, tables=tables)) == written[query]


def _rates_rounded(stored):
    """Stored rows with their sums of rates rounded: SQL adds them up in its own order."""
    return {
        table: [
            {name: round(v, 6) if isinstance(v, float) else v for name, v in row.items()}
            for row in rows
        ]
        for table, rows in stored.items()
    }


def first_batches(query_id, against_1970):
    """A query's batches 0 to 5, 20 s apart; no watermark yet in batches 0 and 1, so batches 1
    and 2 are judged against Spark's 1970 placeholder: their records' slack measured against it
    (bucket 41), as the operators measured it before 2026-11-27, or none, as now."""
    written = []
    for batch_id in range(6):
        batch = progress(query_id, f"{query_id}-run", batch_id, T0 + batch_id * 20_000)
        if batch_id < 2:
            batch = dataclasses.replace(batch, watermark_ms=None)
        if batch_id in (1, 2):
            judged = [
                dataclasses.replace(
                    times,
                    late_watermark_ms=0,
                    late_buckets={},
                    slack_buckets={"41": times.records} if against_1970 else {},
                )
                for times in batch.event_times
            ]
            batch = dataclasses.replace(batch, event_times=tuple(judged))
        written.append(batch)
    return written


def against_1970(rows, table):
    """Whether any of a query's rows of `table` counts slack in bucket 41 (35 to 70 years)."""
    slack = ("slack_buckets", "slack_buckets_total")
    return any("41" in (row.get(name) or {}) for row in rows[table] for name in slack)


def test_migration_0033_takes_the_records_judged_against_1970_out_of_the_histograms(engine):
    write_events(engine, first_batches("old", against_1970=True))
    write_events(engine, first_batches("new", against_1970=False))
    cleaned = ("batch_event_times", "partition_minutes", "partition_hours")
    old = stored_rows(engine, "old")
    assert all(against_1970(old, table) for table in cleaned)
    new = stored_rows(engine, "new")
    _to(engine, "0033-1", "downgrade")
    _to(engine, "head")

    # What the write path stores now, but for which query it is.
    assert stored_rows(engine, "old", ("query_id",), cleaned) == stored_rows(
        engine, "new", ("query_id",), cleaned
    )
    assert not any(against_1970(stored_rows(engine, "old"), table) for table in cleaned)
    assert stored_rows(engine, "new") == new
    kept = {
        table: rows for table, rows in stored_rows(engine, "old").items() if table not in cleaned
    }
    assert kept == {table: rows for table, rows in old.items() if table not in cleaned}

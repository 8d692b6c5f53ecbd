import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from monitor.store import migrate
from monitor.store.engine import create_engine
from monitor.store.models import Base


def test_there_is_exactly_one_head():
    assert len(ScriptDirectory.from_config(migrate.alembic_config()).get_heads()) == 1


def test_upgrade_an_empty_store_to_head_twice(empty_database_url):
    engine = create_engine(empty_database_url)
    assert migrate.current_revision(engine) is None and not migrate.is_current(engine)
    migrate.upgrade(engine)
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision()
    tables = set(sa.inspect(engine).get_table_names())
    assert {"queries", "runs", "batches", "state_operators", "sources", "partitions"} <= tables
    engine.dispose()


def test_migrations_match_the_models(engine):
    with engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert differences == []


def test_history_queries_have_their_indexes(engine):
    inspector = sa.inspect(engine)
    batch_indexes = {tuple(i["column_names"]) for i in inspector.get_indexes("batches")}
    partition_indexes = {tuple(i["column_names"]) for i in inspector.get_indexes("partitions")}
    assert ("query_id", "batch_time_ms") in batch_indexes
    assert ("query_id", "partition", "batch_time_ms") in partition_indexes
    assert ("query_id", "batch_time_ms") in partition_indexes


def test_sqlite_store_runs_in_wal_mode(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'nested' / 'wmon.db'}")
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    engine.dispose()

"""The PostgreSQL store that a test worker's tests use in turn reads as the migrated template
again after each test, whatever the test left in it."""

import sqlalchemy as sa

from monitor.store.schema.engine import create_engine
from monitor.store.schema.models import Batch
from tests.support.databases import ReusedDatabase, describe
from tests.support.retention import NEW, OLD, write_batch
from tests.support.stores import POSTGRES_SERVER


def test_a_store_is_restored_to_the_template_or_made_again(postgres_template):
    store = ReusedDatabase(POSTGRES_SERVER, postgres_template, "wmon_reused")
    try:
        template, first = describe(store.url), store.url
        engine = create_engine(store.url)
        # Rows, the day partitions of the batches' days, and a session left open.
        write_batch(engine, "q", 0, OLD)
        write_batch(engine, "q", 1, NEW)
        left_open = engine.connect()
        left_open.execute(sa.text("SELECT 1"))
        assert describe(store.url) != template

        store.restore()
        assert (store.url, describe(store.url)) == (first, template)
        left_open.invalidate()
        engine.dispose()
        engine = create_engine(store.url)
        write_batch(engine, "q", 0, NEW)
        with engine.connect() as connection:
            assert connection.scalar(sa.select(Batch.id)) == 1
        with engine.begin() as connection:
            connection.execute(sa.text("ALTER TABLE queries ADD COLUMN added integer"))
        engine.dispose()

        store.restore()
        assert store.url != first and describe(store.url) == template
    finally:
        store.drop()

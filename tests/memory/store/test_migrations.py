"""Migrations build, on every backend, exactly the tables the code reads and writes (store/schema.py)."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from strata_memory.store import schema
from strata_memory.store.database import MIGRATIONS, Database


def test_the_migrated_database_matches_the_schema_module(store_url: str) -> None:
    database = Database(store_url)
    try:
        database.migrate()
        with database.reading() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            differences = compare_metadata(context, schema.metadata)
    finally:
        database.close()
    assert differences == []


def test_migrating_twice_leaves_the_store_at_the_newest_revision(store_url: str) -> None:
    database = Database(store_url)
    try:
        database.migrate()
        database.migrate()
        with database.reading() as conn:
            current = MigrationContext.configure(conn).get_current_heads()
    finally:
        database.close()
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert current == tuple(ScriptDirectory.from_config(config).get_heads())

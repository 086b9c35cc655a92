"""The store suite runs on each backend: a SQLite file, a PostgreSQL schema (tests/store_backends.py)."""

from collections.abc import Iterator

import pytest

from strata_memory.store.database import Database
from tests.store_backends import postgres_schema, store_url

__all__ = ["db", "postgres_schema", "store_url"]


@pytest.fixture
def db(store_url: str) -> Iterator[Database]:
    """A migrated store on the backend under test; a module seeds it by overriding ``db(db)``."""
    database = Database(store_url)
    database.migrate()
    yield database
    database.close()

"""The store suite runs on each backend: a SQLite file, a PostgreSQL schema (tests/store_backends.py)."""

from tests.store_backends import postgres_schema, store_url

__all__ = ["postgres_schema", "store_url"]

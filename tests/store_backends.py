"""The store backends a suite runs against: a SQLite file, and PostgreSQL when one is configured.

``STRATA_TEST_POSTGRES_URL`` (``.ci/run`` sets it) names a PostgreSQL database, e.g.
``postgresql+psycopg://postgres@127.0.0.1:5432/test``. Each test module gets its own fresh schema in
it (created and migrated once, dropped at the end) and each test starts from empty tables. When the
variable is unset or the server unreachable the PostgreSQL variants are skipped with a message naming
the variable, except under ``CI=true``, where they fail: CI must run them.

A suite opts in by importing ``store_url`` (and ``postgres_schema``, which it uses) into its conftest.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import OperationalError

from strata_memory.store import schema
from strata_memory.store.database import Database

POSTGRES_URL_ENV = "STRATA_TEST_POSTGRES_URL"
BACKENDS = ("sqlite", "postgresql")


def postgres_server_url() -> URL:
    """The configured server's URL, or a skip (a failure under CI) saying why there is none."""
    raw = os.environ.get(POSTGRES_URL_ENV, "")
    in_ci = os.environ.get("CI", "").lower() == "true"
    if not raw:
        reason = f"{POSTGRES_URL_ENV} is not set: the PostgreSQL variant is not run"
        if in_ci:
            pytest.fail(f"{reason} (CI=true requires it)")
        pytest.skip(reason)
    url = make_url(raw)
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except OperationalError as unreachable:
        reason = f"{POSTGRES_URL_ENV}={url.render_as_string(hide_password=True)} is unreachable"
        if in_ci:
            pytest.fail(f"{reason} (CI=true requires it): {unreachable.orig}")
        pytest.skip(reason)
    finally:
        engine.dispose()
    return url


def schema_url(server: URL, schema: str) -> str:
    """The server's URL with every connection's ``search_path`` set to ``schema`` alone."""
    return server.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(
        hide_password=False
    )


def fresh_schema_name(hint: str) -> str:
    """A new schema name (a valid identifier under PostgreSQL's 63 bytes) that says where it is from."""
    tail = re.sub(r"[^a-z0-9]+", "_", hint.lower())[-40:].strip("_")
    return f"t_{tail}_{uuid.uuid4().hex[:8]}"


def create_schema(server: URL, schema: str) -> str:
    """Create ``schema``, migrate it to the newest revision, and return its URL."""
    admin = create_engine(server)
    try:
        with admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    finally:
        admin.dispose()
    url = schema_url(server, schema)
    database = Database(url)
    try:
        database.migrate()
    finally:
        database.close()
    return url


def drop_schema(server: URL, schema: str) -> None:
    admin = create_engine(server)
    try:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    finally:
        admin.dispose()


def empty_tables(url: str) -> None:
    """Delete every row of the store (the schema and its migration stamp stay).

    ``DELETE`` children before parents is several times faster than ``TRUNCATE`` on tables this small.
    """
    engine = create_engine(url)
    known = [table.name for table in reversed(schema.metadata.sorted_tables)]
    try:
        with engine.begin() as connection:
            present = set(
                connection.execute(
                    text(
                        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                        "AND tablename <> 'alembic_version'"
                    )
                ).scalars()
            )
            others = sorted(present.difference(known))  # tables a newer migration added
            for name in [*others, *(name for name in known if name in present)]:
                connection.execute(text(f'DELETE FROM "{name}"'))
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def postgres_schema(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, migrated schema for this test module (dropped afterwards): its URL."""
    server = postgres_server_url()
    schema = fresh_schema_name(request.module.__name__)
    url = create_schema(server, schema)
    yield url
    drop_schema(server, schema)


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The store URL of one test: a new SQLite file, or this module's PostgreSQL schema, emptied."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/memory.sqlite3"
    url: str = request.getfixturevalue("postgres_schema")
    empty_tables(url)
    return url

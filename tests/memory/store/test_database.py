"""The store's probe (store/database.py, ``Database.probe``) on PostgreSQL: each probe answers on a new
connection of its own and leaves none open, so a pooled link that froze can neither answer for the
store nor be kept alive by the probe. (On SQLite the probe reads the file through the reader.)"""

from __future__ import annotations

import uuid

from sqlalchemy import create_engine, text

from strata_memory.store.database import Database


def _open_connections(server_url: str, application: str) -> int:
    engine = create_engine(server_url)
    try:
        with engine.connect() as connection:
            query = text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :name")
            return int(connection.execute(query, {"name": application}).scalar_one())
    finally:
        engine.dispose()


def test_a_probe_answers_on_a_connection_of_its_own_and_leaves_none_open(postgres_schema: str) -> None:
    application = f"strata-probe-{uuid.uuid4().hex[:8]}"  # this test's connections only
    database = Database(f"{postgres_schema}&application_name={application}")
    try:
        database.probe()
        database.probe()
        assert _open_connections(postgres_schema, application) == 0
        with database.reading() as conn:
            conn.execute(text("SELECT 1"))
        assert _open_connections(postgres_schema, application) == 1  # the reader's pool keeps its link
        database.probe()
        assert _open_connections(postgres_schema, application) == 1
    finally:
        database.close()

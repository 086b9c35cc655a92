"""Alembic environment: migrations run on the connection that ``Database.migrate`` hands over."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from strata_memory.store.schema import metadata

connection = context.config.attributes.get("connection")
if not isinstance(connection, Connection):
    raise TypeError("run migrations through strata_memory.store.database.Database.migrate()")
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()

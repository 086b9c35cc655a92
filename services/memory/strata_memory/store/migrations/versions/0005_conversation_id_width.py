"""Conversation ids hold what the API accepts (a label: up to 200 characters), on every backend.

The columns were VARCHAR(128): SQLite never enforces a length, PostgreSQL does, so a 129-200 character
conversation id was stored by one and refused by the other.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_COLUMNS = (("conversations", "id"), ("system_prompts", "conversation_id"), ("messages", "conversation_id"))


def upgrade() -> None:
    _resize(old=128, new=200)


def downgrade() -> None:
    _resize(old=200, new=128)


def _resize(*, old: int, new: int) -> None:
    for table, column in _COLUMNS:
        with op.batch_alter_table(table) as batch:
            batch.alter_column(
                column, type_=sa.String(new), existing_type=sa.String(old), existing_nullable=False
            )

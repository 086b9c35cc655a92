"""Archival memory (archives, agent links, passages, passage tags) and the indexing outbox.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_ID = sa.String(64)


def upgrade() -> None:
    op.create_table(
        "archives",
        sa.Column("id", _ID, primary_key=True),
        sa.Column("tenant_id", sa.String(128), nullable=False, index=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("created_us", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "archive_agents",
        sa.Column("archive_id", _ID, sa.ForeignKey("archives.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("agent_id", _ID, sa.ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("is_default", sa.Boolean, nullable=False),
        sa.Column("created_us", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "passages",
        sa.Column("id", _ID, primary_key=True),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("archive_id", _ID, sa.ForeignKey("archives.id", ondelete="CASCADE"), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column("metadata", sa.JSON, nullable=False),
        sa.Column("created_us", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_passages_archive", "passages", ["archive_id", "created_us"])
    op.create_table(
        "passage_tags",
        sa.Column("passage_id", _ID, sa.ForeignKey("passages.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("tag", sa.Text, primary_key=True),
        sa.Column("archive_id", _ID, nullable=False, index=True),
    )
    op.create_table(
        "index_jobs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("document_id", _ID, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("next_attempt_us", sa.BigInteger, nullable=False),
        sa.Column("last_error", sa.Text, nullable=False),
        sa.Column("created_us", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    for table in ("index_jobs", "passage_tags", "passages", "archive_agents", "archives"):
        op.drop_table(table)

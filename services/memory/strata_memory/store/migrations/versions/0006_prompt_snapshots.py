"""Prompt snapshots: what every conversation's prompt is built from, stored once per recompile.

An edit of an ``on_edit`` agent used to rewrite each conversation's whole prompt (memory included).
Now it stores one snapshot (system text, rendered memory, counts, time) and points every
conversation's row at it; the prompt text is assembled on read. Rows written before keep their text
(``snapshot_id`` NULL).

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "prompt_snapshots",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("agent_id", sa.String(64), nullable=False),
        sa.Column("system", sa.Text, nullable=False),
        sa.Column("memory", sa.Text, nullable=False),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("message_count", sa.BigInteger, nullable=False),
        sa.Column("passage_count", sa.BigInteger, nullable=False),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column("compiled_us", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_prompt_snapshots_agent_id", "prompt_snapshots", ["agent_id"])
    with op.batch_alter_table("system_prompts") as table:
        table.add_column(sa.Column("snapshot_id", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("system_prompts") as table:
        table.drop_column("snapshot_id")
    op.drop_index("ix_prompt_snapshots_agent_id", "prompt_snapshots")
    op.drop_table("prompt_snapshots")

"""prompt_receipts: what each compiled system prompt was built from; prompts and messages name theirs.

A receipt (``domain/receipts.py``) lists the blocks a prompt rendered with their versions, its metadata
counts, render mode and compile time, under an id that is a digest of all but the time. Snapshots and
per-conversation prompts record the receipt of their text; a message may name the receipt of the
prompt its answer was generated under.

block_attachments: when each block was attached to and detached from each agent, so memory can be read
as it was at a past moment (with block_versions). Attachments made before this revision are backfilled
with attached_us = 0 ("since before history was kept").

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "prompt_receipts",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column(
            "agent_id",
            sa.String(64),
            sa.ForeignKey("agents.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("compiled_us", sa.BigInteger, nullable=False),
        sa.Column("render_mode", sa.String(32), nullable=False),
        sa.Column("blocks", sa.JSON, nullable=False),
        sa.Column("message_count", sa.BigInteger, nullable=False),
        sa.Column("passage_count", sa.BigInteger, nullable=False),
        sa.Column("file_count", sa.BigInteger, nullable=False),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column("system_sha256", sa.String(64), nullable=False),
    )
    op.create_table(
        "block_attachments",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("agent_id", sa.String(64), nullable=False),
        sa.Column("block_id", sa.String(64), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("attached_us", sa.BigInteger, nullable=False),
        sa.Column("detached_us", sa.BigInteger, nullable=True),
    )
    op.create_index("ix_block_attachments_agent", "block_attachments", ["agent_id", "attached_us"])
    op.create_index("ix_block_attachments_block", "block_attachments", ["block_id"])
    op.execute(
        "INSERT INTO block_attachments (agent_id, block_id, position, attached_us)"
        " SELECT agent_id, block_id, position, 0 FROM agent_blocks"
    )
    with op.batch_alter_table("prompt_snapshots") as table:
        table.add_column(sa.Column("receipt_id", sa.String(64), nullable=True))
    with op.batch_alter_table("system_prompts") as table:
        table.add_column(sa.Column("receipt_id", sa.String(64), nullable=True))
    with op.batch_alter_table("messages") as table:
        table.add_column(sa.Column("prompt_receipt_id", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("messages") as table:
        table.drop_column("prompt_receipt_id")
    with op.batch_alter_table("system_prompts") as table:
        table.drop_column("receipt_id")
    with op.batch_alter_table("prompt_snapshots") as table:
        table.drop_column("receipt_id")
    op.drop_table("prompt_receipts")
    op.drop_index("ix_block_attachments_block", table_name="block_attachments")
    op.drop_index("ix_block_attachments_agent", table_name="block_attachments")
    op.drop_table("block_attachments")

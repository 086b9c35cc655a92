"""An index on agent_blocks.block_id: the agents holding a block, without scanning every attachment.

The table's primary key starts with agent_id, so "which agents hold this block" (asked by every edit
of a block, and by deletes) scanned the whole table: every attachment of every tenant.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_agent_blocks_block_id", "agent_blocks", ["block_id"])


def downgrade() -> None:
    op.drop_index("ix_agent_blocks_block_id", table_name="agent_blocks")

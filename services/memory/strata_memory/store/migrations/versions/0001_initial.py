"""Initial schema: agents, blocks, attachments, history, conversations, prompts, files, messages.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_ID = sa.String(64)
_TENANT = sa.String(128)
_US = sa.BigInteger


def upgrade() -> None:
    op.create_table(
        "agents",
        sa.Column("id", _ID, primary_key=True),
        sa.Column("tenant_id", _TENANT, nullable=False, index=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("system", sa.Text, nullable=False),
        sa.Column("render_mode", sa.String(32), nullable=False),
        sa.Column("recompile_policy", sa.String(32), nullable=False),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("tool_result_style", sa.String(32), nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("next_sequence", sa.BigInteger, nullable=False),
        sa.Column("created_us", _US, nullable=False),
        sa.Column("updated_us", _US, nullable=False),
    )
    op.create_table(
        "blocks",
        sa.Column("id", _ID, primary_key=True),
        sa.Column("tenant_id", _TENANT, nullable=False, index=True),
        sa.Column("label", sa.Text, nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("char_limit", sa.Integer, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("read_only", sa.Boolean, nullable=False),
        sa.Column("metadata", sa.JSON, nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("created_us", _US, nullable=False),
        sa.Column("updated_us", _US, nullable=False),
    )
    op.create_table(
        "agent_blocks",
        sa.Column("agent_id", _ID, sa.ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("block_id", _ID, sa.ForeignKey("blocks.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("label", sa.Text, nullable=False),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.UniqueConstraint("agent_id", "label", name="uq_agent_blocks_label"),
    )
    op.create_table(
        "block_versions",
        sa.Column("block_id", _ID, sa.ForeignKey("blocks.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("version", sa.BigInteger, primary_key=True),
        sa.Column("label", sa.Text, nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("char_limit", sa.Integer, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("read_only", sa.Boolean, nullable=False),
        sa.Column("metadata", sa.JSON, nullable=False),
        sa.Column("source", sa.String(128), nullable=False),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("changed_us", _US, nullable=False),
    )
    op.create_table(
        "conversations",
        sa.Column("agent_id", _ID, sa.ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("created_us", _US, nullable=False),
    )
    op.create_table(
        "system_prompts",
        sa.Column("agent_id", _ID, primary_key=True),
        sa.Column("conversation_id", sa.String(128), primary_key=True),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("compiled_us", _US, nullable=False),
    )
    op.create_table(
        "files",
        sa.Column("id", _ID, primary_key=True),
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.Column("agent_id", _ID, sa.ForeignKey("agents.id", ondelete="CASCADE"), nullable=False),
        sa.Column("directory", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("char_limit", sa.Integer, nullable=False),
        sa.Column("is_open", sa.Boolean, nullable=False),
        sa.Column("created_us", _US, nullable=False),
        sa.Column("updated_us", _US, nullable=False),
        sa.UniqueConstraint("agent_id", "directory", "name", name="uq_files_name"),
    )
    op.create_table(
        "messages",
        sa.Column("id", _ID, primary_key=True),
        sa.Column("tenant_id", _TENANT, nullable=False),
        sa.Column("agent_id", _ID, sa.ForeignKey("agents.id", ondelete="CASCADE"), nullable=False),
        sa.Column("conversation_id", sa.String(128), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("tool_calls", sa.JSON, nullable=False),
        sa.Column("tool_call_id", sa.Text, nullable=False),
        sa.Column("sequence", sa.BigInteger, nullable=False),
        sa.Column("created_us", _US, nullable=False),
        sa.UniqueConstraint("agent_id", "sequence", name="uq_messages_sequence"),
    )
    op.create_index("ix_messages_conversation", "messages", ["agent_id", "conversation_id", "sequence"])


def downgrade() -> None:
    for table in ("messages", "files", "system_prompts", "conversations", "block_versions", "agent_blocks"):
        op.drop_table(table)
    op.drop_table("blocks")
    op.drop_table("agents")

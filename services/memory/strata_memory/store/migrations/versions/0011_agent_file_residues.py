"""agent_file_residues: what an Agent File import kept verbatim, per imported agent.

Letta's ``.af`` files hold more than Strata models (tool code, LLM and embedding settings, groups,
skills, MCP servers, message fields such as ``otid`` or ``tool_returns``). ImportAgentFile keeps those
parts here, keyed by the Strata ids they belong to, and ExportAgentFile writes them back.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent_file_residues",
        sa.Column(
            "agent_id", sa.String(64), sa.ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("import_id", sa.String(64), nullable=False, index=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("agent", sa.JSON, nullable=False),
        sa.Column("blocks", sa.JSON, nullable=False),
        sa.Column("messages", sa.JSON, nullable=False),
        sa.Column("document", sa.JSON, nullable=False),
        sa.Column("ids", sa.JSON, nullable=False),
        sa.Column("created_us", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("agent_file_residues")

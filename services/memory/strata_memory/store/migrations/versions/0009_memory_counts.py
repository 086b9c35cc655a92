"""Counts kept beside what they count: agents.message_count and archives.passage_count, filled from the
rows already stored, and an index on archive_agents.agent_id.

``<memory_metadata>`` reports an agent's messages and the passages of its archives. Counting the rows
at every compile (every tool edit of an ``on_edit`` agent, every prompt read) grows with the agent's
history (the figures: bench/perf/findings.md). The store keeps both counts in the transactions that add
or delete messages and passages (store/agents.py, store/archives.py), and a compile reads them. The
agent's archives were found by scanning archive_agents, whose primary key starts with archive_id:
every attachment of every tenant.

Every replica must run this revision's code once it is applied: an older one would add messages or
passages without counting them.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agents") as table:
        table.add_column(sa.Column("message_count", sa.BigInteger, nullable=False, server_default="0"))
    with op.batch_alter_table("archives") as table:
        table.add_column(sa.Column("passage_count", sa.BigInteger, nullable=False, server_default="0"))
    op.execute(
        "UPDATE agents SET message_count = "
        "(SELECT count(*) FROM messages WHERE messages.agent_id = agents.id)"
    )
    op.execute(
        "UPDATE archives SET passage_count = "
        "(SELECT count(*) FROM passages WHERE passages.archive_id = archives.id)"
    )
    op.create_index("ix_archive_agents_agent_id", "archive_agents", ["agent_id"])


def downgrade() -> None:
    op.drop_index("ix_archive_agents_agent_id", table_name="archive_agents")
    # Not batch mode: SQLite would rebuild the tables, and dropping the old ``agents`` with foreign keys
    # on deletes every row referencing it (ON DELETE CASCADE). SQLite drops a plain column since 3.35.
    op.execute("ALTER TABLE archives DROP COLUMN passage_count")
    op.execute("ALTER TABLE agents DROP COLUMN message_count")

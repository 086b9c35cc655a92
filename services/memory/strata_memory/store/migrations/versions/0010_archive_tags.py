"""archive_tags: each archive's distinct passage tags with how many of its passages carry each, filled
from passage_tags.

``<memory_metadata>`` lists the distinct tags of an agent's passages. Every compile read them from
passage_tags, one row per tag of every passage of the agent's archives, so its cost grew with the
archives as the counts did before 0009. The store now keeps archive_tags in the transactions that add
or delete passages (store/archives.py) and a compile reads it.

As with 0009, every replica must run this revision's code once it is applied.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "archive_tags",
        sa.Column(
            "archive_id", sa.String(64), sa.ForeignKey("archives.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("tag", sa.Text, primary_key=True),
        sa.Column("passages", sa.BigInteger, nullable=False),
    )
    op.execute(
        "INSERT INTO archive_tags (archive_id, tag, passages) "
        "SELECT archive_id, tag, count(*) FROM passage_tags "
        "WHERE archive_id IN (SELECT id FROM archives) GROUP BY archive_id, tag"
    )


def downgrade() -> None:
    op.drop_table("archive_tags")

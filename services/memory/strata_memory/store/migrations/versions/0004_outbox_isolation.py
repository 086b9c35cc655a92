"""Outbox isolation and leases: parked jobs leave the delivery loop (with their reason) until an
operator retries them, and a job is delivered by one worker at a time (a lease with an expiry).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("index_jobs") as table:
        table.add_column(sa.Column("parked_us", sa.BigInteger, nullable=True))
        table.add_column(sa.Column("lease_owner", sa.String(64), nullable=False, server_default=""))
        table.add_column(sa.Column("lease_until_us", sa.BigInteger, nullable=False, server_default="0"))
    op.create_index("ix_index_jobs_tenant_id", "index_jobs", ["tenant_id", "id"])
    op.create_index("ix_index_jobs_document", "index_jobs", ["tenant_id", "document_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_index_jobs_document", "index_jobs")
    op.drop_index("ix_index_jobs_tenant_id", "index_jobs")
    with op.batch_alter_table("index_jobs") as table:
        table.drop_column("lease_until_us")
        table.drop_column("lease_owner")
        table.drop_column("parked_us")

"""Idempotent writes: the writes sent with a request_id and what each stored (AIP-155).

The primary key (tenant, method, request_id) is what keeps two concurrent calls with one request_id
from both applying: the row is written in the same transaction as the data, so the second call finds
the first's row (store/write_requests.py). Rows are pruned after 24 hours.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "write_requests",
        sa.Column("tenant_id", sa.String(128), primary_key=True),
        sa.Column("method", sa.String(64), primary_key=True),
        sa.Column("request_id", sa.String(36), primary_key=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("resource_ids", sa.JSON, nullable=False),
        sa.Column("created_us", sa.BigInteger, nullable=False, index=True),
    )


def downgrade() -> None:
    op.drop_table("write_requests")

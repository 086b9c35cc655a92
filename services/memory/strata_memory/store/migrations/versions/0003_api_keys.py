"""Tenant API keys: the key id in clear (to find a key), only a SHA-256 of its secret.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("key_id", sa.String(32), primary_key=True),
        sa.Column("tenant_id", sa.String(128), nullable=False, index=True),
        sa.Column("secret_sha256", sa.String(64), nullable=False),
        sa.Column("display_name", sa.Text, nullable=False),
        sa.Column("created_us", sa.BigInteger, nullable=False),
        sa.Column("revoked_us", sa.BigInteger, nullable=True),
    )


def downgrade() -> None:
    op.drop_table("api_keys")

"""The server's admin token (one row; only its secret's SHA-256), for the admin API.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "admin_token",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("token_id", sa.String(32), nullable=False),
        sa.Column("secret_sha256", sa.String(64), nullable=False),
        sa.Column("created_us", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("admin_token")

"""Runners vouch; a person retires (issue 27, point 4): when Bees Cloud last heard each
runner and from which machine id; a machine id retired with its runner.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runners") as batch:
        batch.add_column(sa.Column("heard_us", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("machine_id", sa.String(200), nullable=True))
    with op.batch_alter_table("machines") as batch:
        batch.add_column(sa.Column("retired_us", sa.BigInteger, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("machines") as batch:
        batch.drop_column("retired_us")
    with op.batch_alter_table("runners") as batch:
        batch.drop_column("machine_id")
        batch.drop_column("heard_us")

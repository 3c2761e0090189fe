"""Shared-record rows keep the owner generation they were taken in (issue 23, point 4).

Rows stored before keep generation 0: any change of an item's current owner (generation 1
or more) wins over them, whatever the two computers' clocks say.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-08
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("record_items") as batch:
        batch.add_column(
            sa.Column("generation", sa.Integer, nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("record_items") as batch:
        batch.drop_column("generation")

"""Machines bound to the person whose token first used them; the item a schedule key produced.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "machines",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("machine_id", sa.String(200), nullable=False),
        sa.Column("person_id", sa.Integer, sa.ForeignKey("people.id"), nullable=False),
        sa.Column("first_seen_us", sa.BigInteger, nullable=False),
        sa.UniqueConstraint("team_id", "machine_id", name="uq_machines_team_machine"),
    )
    with op.batch_alter_table("schedule_keys") as batch:
        batch.add_column(sa.Column("item_id", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("schedule_keys") as batch:
        batch.drop_column("item_id")
    op.drop_table("machines")

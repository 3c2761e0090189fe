"""Schedule keys keep their wall-clock time and zone; claims that place it at another instant.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("schedule_keys") as batch:
        batch.add_column(sa.Column("local_time", sa.String(16), nullable=True))
        batch.add_column(sa.Column("zone", sa.String(64), nullable=True))
        batch.add_column(sa.Column("tz_version", sa.String(32), nullable=True))
        batch.create_unique_constraint(
            "uq_keys_person_wall", ["team_id", "person_id", "schedule_id", "local_time", "zone"]
        )
    op.create_table(
        "key_disagreements",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("key_id", sa.Integer, sa.ForeignKey("schedule_keys.id"), nullable=False),
        sa.Column("machine_id", sa.String(200), nullable=False),
        sa.Column("computer_name", sa.String(200), nullable=False),
        sa.Column("scheduled_us", sa.BigInteger, nullable=False),
        sa.Column("tz_version", sa.String(32), nullable=True),
        sa.Column("noticed_us", sa.BigInteger, nullable=False),
        sa.UniqueConstraint("key_id", "machine_id", "scheduled_us", name="uq_disagreements_claim"),
    )


def downgrade() -> None:
    op.drop_table("key_disagreements")
    with op.batch_alter_table("schedule_keys") as batch:
        batch.drop_constraint("uq_keys_person_wall", type_="unique")
        batch.drop_column("tz_version")
        batch.drop_column("zone")
        batch.drop_column("local_time")

"""Initial schema: teams, people, tokens, schedule keys, owners, shared record.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "teams",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("created_us", sa.BigInteger, nullable=False),
        sa.Column("record_seq", sa.BigInteger, nullable=False, server_default="0"),
    )
    op.create_table(
        "people",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("created_us", sa.BigInteger, nullable=False),
        sa.UniqueConstraint("team_id", "email", name="uq_people_team_email"),
    )
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("token_id", sa.String(32), nullable=False, unique=True),
        sa.Column("person_id", sa.Integer, sa.ForeignKey("people.id"), nullable=False),
        sa.Column("secret_sha256", sa.String(64), nullable=False),
        sa.Column("created_us", sa.BigInteger, nullable=False),
        sa.Column("revoked_us", sa.BigInteger, nullable=True),
    )
    op.create_table(
        "schedule_keys",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("person_id", sa.Integer, sa.ForeignKey("people.id"), nullable=False),
        sa.Column("schedule_id", sa.String(200), nullable=False),
        sa.Column("scheduled_us", sa.BigInteger, nullable=False),
        sa.Column("machine_id", sa.String(200), nullable=False),
        sa.Column("computer_name", sa.String(200), nullable=False),
        sa.Column("granted_us", sa.BigInteger, nullable=False),
        sa.UniqueConstraint(
            "team_id", "person_id", "schedule_id", "scheduled_us", name="uq_keys_person_time"
        ),
    )
    op.create_table(
        "owners",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("item_id", sa.String(200), nullable=False),
        sa.Column("epoch", sa.Integer, nullable=False),
        sa.Column("machine_id", sa.String(200), nullable=False),
        sa.Column("computer_name", sa.String(200), nullable=False),
        sa.Column("person_id", sa.Integer, sa.ForeignKey("people.id"), nullable=False),
        sa.Column("since_us", sa.BigInteger, nullable=False),
        sa.Column("released_us", sa.BigInteger, nullable=True),
        sa.Column("restart_stages", sa.Text, nullable=True),
        sa.Column("checkpoint_sha256", sa.String(64), nullable=True),
        sa.UniqueConstraint("team_id", "item_id", "epoch", name="uq_owners_item_epoch"),
    )
    op.create_index(
        "uq_owners_item_held",
        "owners",
        ["team_id", "item_id"],
        unique=True,
        sqlite_where=sa.text("released_us IS NULL"),
        postgresql_where=sa.text("released_us IS NULL"),
    )
    op.create_table(
        "record_items",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("item_id", sa.String(200), nullable=False),
        sa.Column("fields", sa.Text, nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("origin_us", sa.BigInteger, nullable=False),
        sa.Column("machine_id", sa.String(200), nullable=False),
        sa.Column("person_id", sa.Integer, sa.ForeignKey("people.id"), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.UniqueConstraint("team_id", "item_id", name="uq_record_item"),
    )
    op.create_index("ix_record_team_seq", "record_items", ["team_id", "seq"])


def downgrade() -> None:
    op.drop_table("record_items")
    op.drop_table("owners")
    op.drop_table("schedule_keys")
    op.drop_table("tokens")
    op.drop_table("people")
    op.drop_table("teams")

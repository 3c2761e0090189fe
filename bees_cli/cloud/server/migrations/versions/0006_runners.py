"""Runners and offers (issue 27): runner identities, items handed to a pool, why a runner
left an offer.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runners",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("pool", sa.String(200), nullable=False),
        sa.Column("token_id", sa.String(32), nullable=False, unique=True),
        sa.Column("created_us", sa.BigInteger, nullable=False),
        sa.Column("retired_us", sa.BigInteger, nullable=True),
        sa.UniqueConstraint("team_id", "name", name="uq_runners_team_name"),
    )
    op.create_table(
        "offers",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("item_id", sa.String(200), nullable=False),
        sa.Column("epoch", sa.Integer, nullable=False),
        sa.Column("pool", sa.String(200), nullable=False),
        sa.Column("secrets", sa.Text, nullable=False),
        sa.Column("offered_us", sa.BigInteger, nullable=False),
        sa.Column("offered_by", sa.Integer, sa.ForeignKey("people.id"), nullable=False),
        sa.Column("claimed_us", sa.BigInteger, nullable=True),
        sa.Column("claimed_machine", sa.String(200), nullable=True),
        sa.Column("claimed_by", sa.String(200), nullable=True),
        sa.UniqueConstraint("team_id", "item_id", "epoch", name="uq_offers_item_epoch"),
    )
    op.create_index("ix_offers_team_pool", "offers", ["team_id", "pool"])
    op.create_table(
        "offer_notes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("offer_id", sa.Integer, sa.ForeignKey("offers.id"), nullable=False),
        sa.Column("runner", sa.String(200), nullable=False),
        sa.Column("machine_id", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("noted_us", sa.BigInteger, nullable=False),
        sa.UniqueConstraint("offer_id", "runner", name="uq_offer_notes_runner"),
    )


def downgrade() -> None:
    op.drop_table("offer_notes")
    op.drop_index("ix_offers_team_pool", table_name="offers")
    op.drop_table("offers")
    op.drop_table("runners")

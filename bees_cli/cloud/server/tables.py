"""The Bees Cloud tables (SQLAlchemy Core); the Alembic migrations must build exactly these.

Times are integer microseconds since the Unix epoch, UTC (columns ending in ``_us``).
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

teams = sa.Table(
    "teams",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(200), nullable=False, unique=True),
    sa.Column("created_us", sa.BigInteger, nullable=False),
    sa.Column("record_seq", sa.BigInteger, nullable=False, server_default="0"),
)

people = sa.Table(
    "people",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
    sa.Column("email", sa.String(320), nullable=False),
    sa.Column("created_us", sa.BigInteger, nullable=False),
    sa.UniqueConstraint("team_id", "email", name="uq_people_team_email"),
)

tokens = sa.Table(
    "tokens",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("token_id", sa.String(32), nullable=False, unique=True),
    sa.Column("person_id", sa.Integer, sa.ForeignKey("people.id"), nullable=False),
    sa.Column("secret_sha256", sa.String(64), nullable=False),
    sa.Column("created_us", sa.BigInteger, nullable=False),
    sa.Column("revoked_us", sa.BigInteger, nullable=True),
)

keys = sa.Table(
    "schedule_keys",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
    sa.Column("person_id", sa.Integer, sa.ForeignKey("people.id"), nullable=False),
    sa.Column("schedule_id", sa.String(200), nullable=False),
    sa.Column("scheduled_us", sa.BigInteger, nullable=False),
    sa.Column("machine_id", sa.String(200), nullable=False),
    sa.Column("computer_name", sa.String(200), nullable=False),
    sa.Column("granted_us", sa.BigInteger, nullable=False),
    sa.Column("item_id", sa.String(200), nullable=True),
    sa.Column("local_time", sa.String(16), nullable=True),
    sa.Column("zone", sa.String(64), nullable=True),
    sa.Column("tz_version", sa.String(32), nullable=True),
    sa.UniqueConstraint(
        "team_id", "person_id", "schedule_id", "scheduled_us", name="uq_keys_person_time"
    ),
    # One key per wall-clock time too (NULLs, from claims without one, never collide).
    sa.UniqueConstraint(
        "team_id", "person_id", "schedule_id", "local_time", "zone", name="uq_keys_person_wall"
    ),
)

key_disagreements = sa.Table(
    "key_disagreements",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("key_id", sa.Integer, sa.ForeignKey("schedule_keys.id"), nullable=False),
    sa.Column("machine_id", sa.String(200), nullable=False),
    sa.Column("computer_name", sa.String(200), nullable=False),
    sa.Column("scheduled_us", sa.BigInteger, nullable=False),
    sa.Column("tz_version", sa.String(32), nullable=True),
    sa.Column("noticed_us", sa.BigInteger, nullable=False),
    sa.UniqueConstraint("key_id", "machine_id", "scheduled_us", name="uq_disagreements_claim"),
)

machines = sa.Table(
    "machines",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
    sa.Column("machine_id", sa.String(200), nullable=False),
    sa.Column("person_id", sa.Integer, sa.ForeignKey("people.id"), nullable=False),
    sa.Column("first_seen_us", sa.BigInteger, nullable=False),
    # Set when the runner that used it was retired: anything it sends is refused since.
    sa.Column("retired_us", sa.BigInteger, nullable=True),
    sa.UniqueConstraint("team_id", "machine_id", name="uq_machines_team_machine"),
)

owners = sa.Table(
    "owners",
    metadata,
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
    sa.Index(
        "uq_owners_item_held",
        "team_id",
        "item_id",
        unique=True,
        sqlite_where=sa.text("released_us IS NULL"),
        postgresql_where=sa.text("released_us IS NULL"),
    ),
)

record = sa.Table(
    "record_items",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
    sa.Column("item_id", sa.String(200), nullable=False),
    sa.Column("fields", sa.Text, nullable=False),
    sa.Column("digest", sa.String(64), nullable=False),
    sa.Column("origin_us", sa.BigInteger, nullable=False),
    sa.Column("machine_id", sa.String(200), nullable=False),
    sa.Column("person_id", sa.Integer, sa.ForeignKey("people.id"), nullable=False),
    sa.Column("seq", sa.BigInteger, nullable=False),
    # The owner generation (owners.epoch) the change was taken in; 0: the item was never
    # claimed, or the row predates generations (issue 23, point 4).
    sa.Column("generation", sa.Integer, nullable=False, server_default="0"),
    sa.UniqueConstraint("team_id", "item_id", name="uq_record_item"),
    sa.Index("ix_record_team_seq", "team_id", "seq"),
)

admin_token = sa.Table(
    "admin_token",
    metadata,
    # One row at most (id 1): the server's admin token, made at its first start; only the
    # SHA-256 of its secret is kept. Replicas starting together race on the id: one wins.
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("token_id", sa.String(32), nullable=False),
    sa.Column("secret_sha256", sa.String(64), nullable=False),
    sa.Column("created_us", sa.BigInteger, nullable=False),
)

runners = sa.Table(
    "runners",
    metadata,
    # A runner: a headless computer of the team that takes only work handed to its pool
    # (DESIGN.md, Runners). Its token is an ordinary row of ``tokens`` (only the secret's
    # SHA-256 is kept) whose person is the pool's runner identity (``people``).
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("pool", sa.String(200), nullable=False),
    sa.Column("token_id", sa.String(32), nullable=False, unique=True),
    sa.Column("created_us", sa.BigInteger, nullable=False),
    sa.Column("retired_us", sa.BigInteger, nullable=True),
    # When its sync last vouched for it (a heartbeat every 15 s), from which machine id.
    sa.Column("heard_us", sa.BigInteger, nullable=True),
    sa.Column("machine_id", sa.String(200), nullable=True),
    sa.UniqueConstraint("team_id", "name", name="uq_runners_team_name"),
)

offers = sa.Table(
    "offers",
    metadata,
    # An item handed to a pool: the release of owner generation ``epoch`` (0: never
    # claimed) offered to ``pool``. ``secrets`` holds names of environment variables only
    # (canonical JSON list), never values. Claimed with the owner claim that took the item.
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
    sa.Index("ix_offers_team_pool", "team_id", "pool"),
)

offer_notes = sa.Table(
    "offer_notes",
    metadata,
    # Why a runner left an offer (one row per offer and runner, the latest reason).
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("offer_id", sa.Integer, sa.ForeignKey("offers.id"), nullable=False),
    sa.Column("runner", sa.String(200), nullable=False),
    sa.Column("machine_id", sa.String(200), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("noted_us", sa.BigInteger, nullable=False),
    sa.UniqueConstraint("offer_id", "runner", name="uq_offer_notes_runner"),
)

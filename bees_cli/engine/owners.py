"""Moved to :mod:`bees_cli.schedules.owners` (issue 10); kept for callers not yet moved."""

from bees_cli.schedules.owners import (  # noqa: F401
    CLAIM_RETRY,
    UNREACHABLE_REASON,
    ClaimOutcome,
    claim_at_create,
    claim_owner,
    ready_to_start,
    show_claim,
    startable,
)

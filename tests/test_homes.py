"""One home per rule (issue 24, point 4): each rule is written in one place of bees_cli.

These read the source: a second copy of a rule's words or numbers is what they catch."""

from __future__ import annotations

from pathlib import Path

import bees_cli
from bees_cli import rules
from bees_cli.record import reasons

ROOT = Path(bees_cli.__file__).parent


def _holding(text: str) -> list[str]:
    """The modules of bees_cli (migrations apart) whose source holds ``text``."""
    return sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
                  if "migrations" not in p.parts and text in p.read_text())


def test_review_limit_words_live_in_rules_only() -> None:
    assert _holding("asked for changes {") == ["rules.py"]
    assert rules.review_limit_reason("Review") == "Review asked for changes 3 times"
    assert rules.review_limit_reason("Edit", 2) == "Edit asked for changes 2 times"


def test_stored_review_limit_words_read_back_as_their_code() -> None:
    reason = reasons.read_reason("Review asked for changes 3 times")
    assert reason.model_dump() == {"code": "review_limit", "stage": "Review", "count": 3}
    assert reason.words() == "Review asked for changes 3 times"


def test_no_copy_of_the_busy_limit() -> None:
    assert not hasattr(reasons, "BUSY_MINUTES")
    assert _holding("BUSY_LIMIT = ") == ["rules.py"]


def test_an_item_is_made_in_one_place() -> None:
    # bees item create, a schedule's fire and bees continue all make the item's row and
    # its engine input through engine.items.make_item
    assert _holding(".add_item(") == ["engine/items.py"]
    assert _holding("ItemInput(item_id=") == ["engine/items.py"]


def test_the_owner_claim_is_asked_in_one_place() -> None:
    # bees item create, bees run / a fire, and bees continue ask Bees Cloud for an item's
    # owner with the one request of cloud/client.py (owner_claim_of, ask_owner)
    assert _holding("OwnerClaim(item_id=") == ["cloud/client.py"]
    assert _holding("api.claim_owner(") == ["cloud/client.py", "schedules/owners.py"]

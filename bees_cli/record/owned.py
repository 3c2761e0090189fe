"""An item this computer does not hold that another computer runs: the refusal that names it."""

from __future__ import annotations

import json
import sqlite3

from bees_cli.errors import NotFound, Refused


class OwnedElsewhere(NotFound, Refused):
    """An item this computer does not hold that another computer runs (the team's row).

    A :class:`NotFound` (callers that look for "not here" still find it), and a
    :class:`Refused` like an owner claim elsewhere (exit 3): ``item 01JH… is owned by
    maya-desktop``.
    """

    exit_code = 3
    code = "owned_elsewhere"

    def __init__(self, item_id: str, computer: str, person: str) -> None:
        super().__init__(f"item {item_id} is owned by {computer} ({person}): it runs there, "
                         "not on this computer",
                         hint=f"act on it on {computer}; `bees item show {item_id}` shows "
                              "its team row")
        self.item_id, self.computer, self.person = item_id, computer, person


def refuse_team_item(db: sqlite3.Connection, wanted: str) -> None:
    """Raise :class:`OwnedElsewhere` when ``wanted`` (an id or a prefix of at least 6
    characters) names exactly one team item that another computer runs (not ``free``)."""
    rows = db.execute("SELECT item_id, fields, machine_id, person FROM team_items"
                      " WHERE item_id = ? OR (length(?) >= 6 AND item_id LIKE ?)"
                      " ORDER BY item_id", (wanted, wanted, wanted + "%")).fetchall()
    if len(rows) != 1:
        return
    fields = json.loads(rows[0]["fields"])
    if fields.get("status") in (None, "free"):
        return
    computer = str(fields.get("computer") or rows[0]["machine_id"][:8])
    raise OwnedElsewhere(rows[0]["item_id"], computer, str(rows[0]["person"]))

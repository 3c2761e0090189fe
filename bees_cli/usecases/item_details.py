"""``bees item show``'s result for an item of this computer: its typed row and parts."""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from bees_cli.record.views import ItemShow


class ItemDetails(ItemShow):
    """``bees item show``: the item (:class:`~bees_cli.record.views.ItemView`), its history as
    typed facts (oldest first), each stage's log files, the engine log, the journal of its
    add-on actions and every approval request (as stored), each model stage's use
    (:class:`~bees_cli.record.views.ModelUsage`), its pieces
    (:class:`~bees_cli.record.views.PieceView`), and ``since_human``, how long ago its
    status changed (``"2m ago"``).

    ``bees item show --json`` prints :meth:`to_json` read as its schema's model
    (``ItemShowOut.of``), which leaves out ``since_human``.
    """

    since_human: str

    @field_validator("item", mode="before")
    @classmethod
    def _row(cls, value: Any) -> Any:
        """Read the record row's JSON (``ItemRow.to_json``) as the item: its ``id`` is its
        ``item_id``, and ``status_text`` is display text (worded again from the status)."""
        if isinstance(value, dict):
            return {key: item for key, item in value.items() if key not in ("id", "status_text")}
        return value

"""Stand-ins for the engine gateway, for tests of what decides to start a run (no engine)."""

from __future__ import annotations

from bees_cli.engine.models import ItemInput


class TakesEveryStart:
    """A stand-in engine gateway: every run it is asked to start is started, and noted in
    :attr:`started` (item ids, in order)."""

    def __init__(self) -> None:
        self.started: list[str] = []

    async def start(self, item: ItemInput, queue: str) -> bool:
        self.started.append(item.item_id)
        return True

"""Facts of a rebuilt local state (issue 12, point 7): a row rebuilt from the engine, a lost run."""

from __future__ import annotations

from typing import Literal

from bees_cli.record.event_base import EventBase
from bees_cli.record.reasons import ReasonField


class Recovered(EventBase):
    """The local record had lost the item; ``bees run`` rebuilt its row from the engine's run
    (its status then, and how many approval requests and journal entries came back)."""

    kind: Literal["recovered"] = "recovered"
    status: str
    requests: int = 0
    journal: int = 0

    def render(self) -> str:
        came = f"; {self.requests} approval request(s), {self.journal} journal entries"
        return self.where() + (f"rebuilt from the engine ({self.status}): the local record "
                               "had lost it" + came)


class Lost(EventBase):
    """The engine no longer has the item's run (its database was replaced) while the record
    says it was under way (``was``: the status then); ``bees retry`` starts the stage again."""

    kind: Literal["lost"] = "lost"
    was: str
    reason: ReasonField

    def render(self) -> str:
        return self.where() + (f"lost: {self.reason.words()} (it was {self.was}); bees retry "
                               "starts it again")

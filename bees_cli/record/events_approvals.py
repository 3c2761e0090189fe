"""Facts of approvals and add-on actions: a request asked, decided or closed, an action run or
answered from the journal (:mod:`bees_cli.record.events` reads them with the others)."""

from __future__ import annotations

from typing import Any, Literal

from bees_cli.record.event_base import EventBase, approval_object


class ApprovalAsked(EventBase):
    """A held action, or the finish of a stage, waits for a person's approval."""

    kind: Literal["approval_asked"] = "approval_asked"
    request: int
    action: str | None = None
    action_kind: str | None = None
    summary: str | None = None
    digest: str | None = None

    def render(self) -> str:
        return self.where() + (f"waiting for approval (request {self.request}): "
                               f"{approval_object(self.action, self.summary)}")


class _Decision(EventBase):
    """A person's answer to an approval request."""

    request: int
    action: str | None = None
    action_kind: str | None = None
    summary: str | None = None
    digest: str | None = None
    input: Any = None
    who: str
    decided_at: str
    reason: str | None = None
    interrupted_at: str | None = None
    """When the held action was cut before its result was written (a person said whether
    it ran); None otherwise."""
    answer: str | None = None
    """That person's answer (``ran``, ``again``)."""
    edited_input: str | None = None
    """The input the person approved instead of ``input`` (JSON text; ``bees approve
    --input``), or None."""

    def _line(self, verb: str) -> str:
        why = f": {self.reason}" if self.reason else ""
        what = approval_object(self.action, self.summary)
        return self.where() + (f"request {self.request} {verb} by {self.who} at "
                               f"{self.decided_at}{why} — {what}")


class Approved(_Decision):
    """A person approved the request."""

    kind: Literal["approved"] = "approved"

    def render(self) -> str:
        return self._line("approved")


class Denied(_Decision):
    """A person denied the request (with a reason)."""

    kind: Literal["denied"] = "denied"

    def render(self) -> str:
        return self._line("denied")


class ApprovalCancelled(EventBase):
    """A waiting request was closed because the item was cancelled."""

    kind: Literal["approval_cancelled"] = "approval_cancelled"
    request: int
    action: str | None = None

    def render(self) -> str:
        return self.where() + f"request {self.request} closed: the item was cancelled"


class ApprovalRelinquished(EventBase):
    """A waiting request was closed because the item was relinquished."""

    kind: Literal["approval_relinquished"] = "approval_relinquished"
    request: int
    action: str | None = None

    def render(self) -> str:
        return self.where() + f"request {self.request} closed: the item was relinquished"


class Resumed(EventBase):
    """Every waiting request was answered; the stage runs again."""

    kind: Literal["resumed"] = "resumed"

    def render(self) -> str:
        return self.where() + "running again: every request answered"


class ActionRan(EventBase):
    """An add-on action ran (its journal entry: input digest and exit code)."""

    kind: Literal["action_ran"] = "action_ran"
    action: str
    action_kind: str | None = None
    digest: str
    attempt: int
    exit_code: int
    request: int | None = None

    def render(self) -> str:
        return self.where() + (f"ran {self.action} (attempt {self.attempt}), exit "
                               f"{self.exit_code}, input sha256 {self.digest[:12]}")


class ActionAnswered(EventBase):
    """An action already run with the same input was answered from the journal, not rerun."""

    kind: Literal["action_answered"] = "action_answered"
    action: str
    digest: str | None = None
    attempt: int
    exit_code: int
    ran_at: str
    person_said: bool = False
    """The journal holds a person's word that it ran (``bees approve --ran``), not its
    result: ``exit_code`` is the 0 the agent is answered with, not a recorded one."""

    def render(self) -> str:
        how = (" as a person said (bees approve --ran; no exit code or output recorded)"
               if self.person_said else f" exit {self.exit_code}")
        return self.where() + (f"{self.action} (attempt {self.attempt}) answered from the "
                               f"journal: it ran at {self.ran_at},{how}; not run again")

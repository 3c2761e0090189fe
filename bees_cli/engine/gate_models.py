"""The engine's models of an add-on action's gate: the journal's entries and queries, a
stage's ask and the run's answer, a held request and a person's decision on it.

Part of the engine's wire format (:mod:`bees_cli.engine.models`, which re-exports them): add
fields with defaults, never rename, so running items still replay.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from bees_cli.gate import Answer, Facts, Request


class JournalEntry(BaseModel):
    """One run of an add-on action in a stage (DESIGN.md, issue 4 point 6).

    ``digest`` is the SHA-256 (hex) of the action's input as canonical JSON; ``stdout`` is what
    the action printed (at most :data:`STDOUT_KEPT` characters); ``at`` is UTC ISO 8601.
    """

    stage: str
    round: int
    attempt: int
    action: str
    kind: str
    digest: str
    exit_code: int
    stdout: str = ""
    at: str
    request_id: int | None = None
    original_digest: str | None = None
    """When a person corrected the input before it ran (``bees approve --input``, issue 26,
    point 4): the digest of the agent's own input; ``digest`` is the one that ran."""
    edited_by: str | None = None
    """Who corrected the input (None: it ran as the agent gave it)."""
    input: str | None = None
    """The corrected input that ran (JSON text), kept with ``edited_by``."""
    person_said: bool = False
    """A person said it ran (``bees approve --ran``): no result was recorded, and
    ``exit_code`` 0 and the empty ``stdout`` are what the agent is answered with."""


STDOUT_KEPT = 65536
"""Characters of an action's stdout kept in the journal."""


class JournalQuery(BaseModel):
    """Input of ``bees.journal_lookup``: the successful run of ``action`` with input ``digest``
    in ``stage`` of the item, if the local record journaled one."""

    item_id: str
    stage: str
    action: str
    digest: str


class JournalFound(BaseModel):
    """Output of ``bees.journal_lookup``: the entry, or None."""

    entry: JournalEntry | None = None


class ActionAsk(BaseModel):
    """Input of the ``bees.action`` update: may ``agent`` run ``action`` (``ADDON.ACTION``) in
    ``stage`` with this input (``digest``: SHA-256 of its canonical JSON; ``summary``: one
    short line of it; ``input``: its JSON in the agent's order with every field, long
    texts shortened only past 64,000 characters,
    :func:`bees_cli.usecases.actions.kept_input`)?"""

    stage: str
    agent: str
    action: str
    digest: str
    summary: str
    input: str = ""
    attempt: int = 1
    at_once: bool = False
    """A held action returns at once (``decision`` ``held``) and the caller waits on the
    local record; False (callers before it): the update stays in flight until decided."""
    interrupted_at: str | None = None
    """The action's intent was written at this time (UTC) with no result after it: hold it
    for a person (it may already have run), whatever the stage's approval."""
    piece: str | None = None
    """The piece whose agent asks (issue 14), held under the stage's approval gate; None:
    the stage's agent."""


class ActionAnswer(BaseModel):
    """Answer of the ``bees.action`` update.

    ``decision``: ``run`` (run ``command`` now; ``request_id`` is the approval it ran under,
    if any), ``journal`` (it already ran in this stage: ``exit_code`` and ``stdout`` are the
    journaled result, ``at`` when it ran), ``denied`` (``reason`` says who denied and why)
    or ``held`` (``request_id`` waits for a person; asked with ``at_once``).
    """

    decision: str
    kind: str
    command: list[str] = Field(default_factory=list)
    request_id: int | None = None
    reason: str | None = None
    exit_code: int | None = None
    stdout: str = ""
    at: str | None = None
    input: str | None = None
    """With ``run`` under a request a person approved with a corrected input: that input
    (JSON text), to run instead of the asked one (issue 26, point 4)."""
    edited_by: str | None = None
    """Who corrected ``input``."""


class ApprovalRequest(BaseModel):
    """Something waiting for (or given) a person's approval on a stage with ``approval:
    required``: a held action (``action`` ``ADDON.ACTION``) or the stage's finish (``action``
    None, ``kind`` ``finish``).

    ``status`` is ``waiting``, ``approved``, ``denied`` or ``cancelled`` (with its item);
    ``who``, ``at`` and ``reason`` say who decided, when (UTC ISO 8601) and why (a denial's reason).
    """

    id: int
    item_id: str
    stage: str
    round: int
    action: str | None
    kind: str
    summary: str
    digest: str | None = None
    input: str = ""
    status: str = "waiting"
    asked_at: str
    who: str | None = None
    at: str | None = None
    reason: str | None = None
    interrupted_at: str | None = None
    """An action that may already have run: its intent (written at this time) has no result."""
    answer: Literal["ran", "again"] | None = None
    """A person's answer to an interrupted action: ``ran`` (record it as run) or ``again``."""
    edited_input: str | None = None
    """The input a person approved instead of ``input`` (JSON text; ``bees approve --input``,
    issue 26, point 4): what runs; ``who`` changed it. None: approved as asked."""

    @property
    def label(self) -> str:
        """Return what waits, as ``bees status`` shows it: ``mail.send {…}``, ``finish Send``,
        or ``mail.send may already have run (interrupted at TIME): …``."""
        if self.interrupted_at is not None:
            return (f"{self.action} may already have run (interrupted at "
                    f"{self.interrupted_at}): confirm it ran, or run it again")
        if self.action is None:
            return f"finish {self.stage}: {self.summary}"
        return f"{self.action} {self.summary}"


class DecideInput(BaseModel):
    """Input of the ``bees.decide`` update: approve (``approve``) or deny with ``reason`` the
    request ``request_id`` (every waiting request of the item when None); ``who`` and ``at``
    as in :class:`PersonInput`."""

    approve: bool
    request_id: int | None = None
    who: str
    at: str
    reason: str | None = None
    answer: Literal["ran", "again"] | None = None
    """For an interrupted action (it may already have run): ``ran`` records it as run,
    ``again`` runs it once more (``bees approve --ran`` / ``--again``)."""
    input: str | None = None
    """A held action approved with the person's corrected input (JSON text; ``bees approve
    --input``, issue 26, point 4): it runs instead of the agent's. Only with ``approve`` and
    one held action call."""


class DecisionWait(BaseModel):
    """Input of the ``bees.await_decision`` update: the held approval request ``request_id``
    whose decision the caller waits for. Answered with the :class:`ApprovalRequest` once a
    person decided it (its ``bees.decide`` facts written), the run closed it (cancelled,
    relinquished), or the stage round that asked no longer runs (still ``waiting``)."""

    request_id: int


def edit_refusal(decision: DecideInput, chosen: list[ApprovalRequest]) -> str | None:
    """Return why ``decision``'s corrected input cannot be taken (issue 26, point 4), or
    None: it approves exactly one held action call, not a stage's finish nor an action that
    may already have run."""
    if not decision.approve:
        return "a corrected input goes with an approval, not a denial"
    if len(chosen) != 1:
        ids = ", ".join(str(r.id) for r in chosen)
        return f"a corrected input is for one request; several wait ({ids}): name one"
    (request,) = chosen
    if request.action is None:
        return (f"request {request.id} is the finish of stage {request.stage}, not an "
                "action call: a corrected input is for a held action")
    if request.interrupted_at is not None:
        return (f"request {request.id}: {request.action} may already have run: answer --ran "
                "or --again, without a corrected input")
    return None


def decided_facts(facts: Facts, request: ApprovalRequest) -> Facts:
    """Return ``facts`` with what a person made of ``request`` (its status, answer, who,
    why), for :func:`bees_cli.gate.decide`."""
    return Facts(journal=facts.journal, intent=facts.intent, request=Request(request.status),
                 answer=None if request.answer is None else Answer(request.answer),
                 who=request.who, why=request.reason)

"""The approval gate of an agent's add-on action, decided in one pure function.

DESIGN.md, Rules: approvals; the journal. An agent's ``bees action ADDON.ACTION`` (a command
agent's, or a model agent's tool call) may run now, be answered from the journal, be held for
a person, or be refused. :func:`decide` says which from facts its callers gather; it reads no
clock, record or engine, so the whole table is tested directly (tests/rules/test_gate.py) and
mutated (scripts/mutate_rules.sh).

The decision as it was made in two places before this module (``usecases/actions.py``, in
``bees action``'s process, and ``engine/workflow_gate.py``, the run's ``bees.action``
update), in this order:

1. **Not in the agent's tools: refused.** Both checked it before anything else (the use case
   from the item's stored snapshot, the update in its validator), with the reason ``agent A
   may not use X: it is not in its tools (tools: …)``. (Both also refuse a stage that is not
   running, an agent that does not run the stage, and an action no add-on of the item has;
   those say *who may ask*, not what the gate decides, and stay with each caller.)
2. **A ``read`` action is never journaled**: no intent is written before it, no result looked
   up; it runs (``read`` is never gated). Every other kind:
3. **Already ran here: answered from the journal.** The same action with the same input
   (its digest) has a result with exit code 0 in this stage: its stdout is the answer, it does
   not run again. The use case looked in the local record, then in the run folder's copy; the
   update in the run's journal, then the record (an activity).
4. **An intent without a result: held, it may already have run.** The machine died (or the
   add-on was killed) between the intent and the result. Held for a person whatever the
   kind and the stage's approval: ``bees approve --ran`` answers from the journal (the use
   case writes the result, exit 0, at the intent's time), ``--again`` runs it once more; a
   denial refuses it. The use case looked for the intent after the journal and asked the run
   with ``interrupted_at``; the update holds one request per interruption and answers
   ``held`` at once (the caller waits for the person's answer in the local record).
5. **Not gated: runs.** Gated means a kind of :data:`~bees_cli.rules.GATED_KINDS` on a stage
   with ``approval: required`` (:func:`~bees_cli.rules.needs_approval`).
6. **Gated: a person decides.** The update looks for a request of the same stage, action and
   input that waits or was approved (then one a person denied in this round): none, or one
   that waits, holds (a new request is made when none); approved runs (under that request);
   denied refuses with who and why; cancelled or relinquished (the run ended while it was
   held) refuses with ``X was not run: the item was cancelled``. The use case asked the run
   for every gated action and, for a held one, read the decision in the local record.

Who calls it now: the action use case (``bees action``'s
``Bees.action`` and a model agent's tool call,
``Bees.call_action``, both on one typed call) checks
:func:`refusal` before it looks anything up, then decides from the local record's journal
and intent: refused, journal, run, or it asks the run; once a person decided a held request
it decides again on that request (the tool call gets it from the run's
``bees.await_decision`` update, ``bees action``'s process from the record). The run's
``bees.action`` update checks :func:`refusal` in its validator and decides from its own
journal and requests (a new request when the verdict is to hold and none exists). Nothing
else judges an action.

:func:`decide` is exactly that table. Its one difference from before is on a path no caller
takes: a ``read`` action asked with an open intent (``bees action`` writes no intent for
``read``, so never asks so) is run, where the update held it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from bees_cli.rules import needs_approval


class Kind(Enum):
    """An add-on action's kind (the workspace's ``kind:``)."""

    READ = "read"
    WRITE = "write"
    SEND = "send"
    POST = "post"
    DELETE = "delete"
    PAY = "pay"
    GATED = "gated"
    """An MCP tool whose kind the workspace does not declare and its server does not mark
    read-only (:data:`~bees_cli.rules.UNDECLARED_KIND`): held like ``send``."""


class Journal(Enum):
    """What the journal holds of this action with this input in this stage."""

    NONE = "none"
    """No result with exit code 0 (none at all, or only failed runs)."""
    RAN = "ran"
    """A result with exit code 0."""


class Intent(Enum):
    """Whether an intent of this action with this input in this stage has no result."""

    NONE = "none"
    OPEN = "open"
    """Written before the add-on ran, never ended: it may already have run."""


class Request(Enum):
    """The approval request of this action as a person left it (the run's ``status``)."""

    NONE = "none"
    """No request yet (``bees action`` before it asked the run, or nothing asked yet)."""
    WAITING = "waiting"
    APPROVED = "approved"
    DENIED = "denied"
    CANCELLED = "cancelled"
    """The item was cancelled while the request waited."""
    RELINQUISHED = "relinquished"
    """The item was relinquished (handed over) while the request waited."""


class Answer(Enum):
    """A person's answer to an action that may already have run (``bees approve``)."""

    RAN = "ran"
    """``--ran``: record it as run, answer from the journal."""
    AGAIN = "again"
    """``--again``: run it once more."""


class Verdict(Enum):
    """What happens to the action now."""

    REFUSE = "refuse"
    """Not in the agent's tools: refused with the reason, nothing else looked at."""
    JOURNAL = "journal"
    """It already ran here: answer with the journal's result, do not run it."""
    HOLD_MAY_HAVE_RUN = "hold may have run"
    """An intent without a result: held until a person says ``--ran`` or ``--again``."""
    CONFIRM_RAN = "confirm ran"
    """A person said it ran: journal it (exit 0, at the intent's time) and answer from it."""
    HOLD = "hold"
    """Gated: held until a person approves or denies (a new request when none)."""
    RUN = "run"
    """Run it (the intent first, unless ``read``)."""
    DENIED = "denied"
    """A person denied it: refused with who and why."""
    NOT_RUN = "not run"
    """The item was cancelled or relinquished while it was held: refused."""


@dataclass(frozen=True)
class ActionCall:
    """One call of an add-on action by an agent in a stage.

    Args:
        action: ``ADDON.ACTION``.
        agent: the agent's name.
        tools: the agent's ``tools:`` (the only actions it may use).
        kind: the action's kind.
        approval: the stage's ``approval`` setting (``"required"``, ``"none"``, or None).
    """

    action: str
    agent: str
    tools: tuple[str, ...]
    kind: Kind
    approval: str | None  # pragma: no mutate

    @property
    def journaled(self) -> bool:
        """Whether the journal and intents count for this call (every kind but ``read``):
        callers look them up only then."""
        return self.kind is not Kind.READ


@dataclass(frozen=True)
class Facts:
    """What the caller knows of this call's past; each default means "none".

    Args:
        journal: the journal's result of this action and input in this stage.
        intent: whether an intent of it has no result.
        request: its approval request's state.
        answer: a person's answer to an interrupted action (with ``request`` approved).
        who: who decided the request (for the reason of a denial).
        why: the reason a person gave with a denial.
    """

    journal: Journal = Journal.NONE
    intent: Intent = Intent.NONE
    request: Request = Request.NONE
    answer: Answer | None = None  # pragma: no mutate
    who: str | None = None  # pragma: no mutate
    why: str | None = None  # pragma: no mutate


@dataclass(frozen=True)
class Decision:
    """:func:`decide`'s answer: the verdict and, for a refusal, the reason to show."""

    verdict: Verdict
    reason: str | None = None  # pragma: no mutate


def refusal(action: str, agent: str,
            tools: tuple[str, ...]) -> Decision | None:  # pragma: no mutate
    """Return the refusal of ``action`` when it is outside ``agent``'s ``tools:``, or None
    when the agent may use it (Rules: approvals). Callers check it first, before they look
    anything up (and before they know the action's kind); :func:`decide` starts with it.

    Returns:
        ``Decision(REFUSE, "agent A may not use X: it is not in its tools (tools: T)")``.
    """
    if action in tools:
        return None
    listed = ", ".join(tools) or "none"
    return Decision(Verdict.REFUSE, f"agent {agent} may not use {action}: it is "
                                    f"not in its tools (tools: {listed})")


def decide(call: ActionCall, facts: Facts) -> Decision:
    """Decide what happens to ``call`` given ``facts`` (the table of this module's docstring;
    DESIGN.md, Rules: approvals; the journal).

    Args:
        call: who calls which action, of which kind, on a stage with which approval.
        facts: the journal, open intent and approval request of this action and input in
            this stage (journal and intent are ignored for ``read``).

    Returns:
        The :class:`Decision`; ``reason`` is set for ``REFUSE``, ``DENIED`` and ``NOT_RUN``.
    """
    refused = refusal(call.action, call.agent, call.tools)
    if refused is not None:
        return refused
    if call.journaled:
        if facts.journal is Journal.RAN:
            return Decision(Verdict.JOURNAL)
        if facts.intent is Intent.OPEN:
            return _person(call, facts, interrupted=True)
    if not needs_approval(call.kind.value, call.approval):
        return Decision(Verdict.RUN)
    return _person(call, facts, interrupted=False)


def _person(call: ActionCall, facts: Facts, interrupted: bool) -> Decision:
    """The verdict once a person is asked: held until they decide, then as they decided."""
    if facts.request in (Request.NONE, Request.WAITING):
        return Decision(Verdict.HOLD_MAY_HAVE_RUN if interrupted else Verdict.HOLD)
    if facts.request is Request.APPROVED:
        ran = interrupted and facts.answer is Answer.RAN
        return Decision(Verdict.CONFIRM_RAN if ran else Verdict.RUN)
    if facts.request is Request.DENIED:
        return Decision(Verdict.DENIED,
                        f"{call.action} was denied by {facts.who}: {facts.why}")
    return Decision(Verdict.NOT_RUN,
                    f"{call.action} was not run: the item was {facts.request.value}")

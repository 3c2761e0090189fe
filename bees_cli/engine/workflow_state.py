"""What an item's run knows, declared once: :class:`LiveRun`, the state of
:class:`~bees_cli.engine.workflows.ItemWorkflow` that each of its parts reads and writes
(issue 24, point 2).

The workflow is written in parts (its approval gate, its waits, its memory, its pieces), each
a base class of :class:`~bees_cli.engine.workflows.ItemWorkflow`; they share this one
:class:`LiveRun` (``self.live``, declared by :class:`RunParts`) instead of each declaring the
attributes it uses. What the run does is a :class:`~bees_cli.moves.Phase`, whose values are
the states the run shows (``bees.state``) and records. Deterministic like the workflow: only
``dataclasses``, ``temporalio`` and the engine's models (passed through).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from bees_cli.engine.handover_models import HandoverOutput
    from bees_cli.engine.models import ApprovalRequest, ItemInput, JournalEntry, PersonInput
    from bees_cli.engine.piece_models import PieceOutput, PieceView
    from bees_cli.moves import Phase


@dataclass
class Patches:
    """The shape changes a run took at its first task (``workflow.patched``, decided once so
    an old history replays the shape it was made with; :mod:`~bees_cli.engine.
    workflow_policies` names them)."""

    waits_by_retry: bool = False
    continues_as_new: bool = False
    eligible_locally: bool = False


@dataclass
class LiveRun:
    """The state of one item's run (DESIGN.md, Rules: moving, approvals, handover).

    Where it is: ``item`` (the run's input, None before its first task), ``phase`` (what it
    does), ``stage`` and its ``round`` (``round_of``: the stage ``round`` counts, None before
    the first), ``agent`` (the stage's), ``reason`` (why it failed). A person's requests:
    ``person`` (a retry or accept waiting to be carried out: ``("retry" | "accept", who)``),
    ``relinquish`` (a relinquish under way) and ``handed`` (its checkpoint's answer).
    Approvals and actions: ``requests`` (every approval request, in order), ``approved``
    (``(stage, round)`` whose finish a person approved), ``journal`` (action runs).
    ``facts``: the counter of history keys. Pieces (issue 14): ``pieces`` (each piece's
    view, in order), ``piece_handles`` (their child workflows) and ``ended_attempts``
    (``(stage, round, attempt)`` whose agent ended: its asks are refused).
    ``retried_denials``: denied requests whose stage round a person retried since (they no
    longer answer an ask). ``patches``: the
    shape this run takes. The plan's memory (rounds, attempts, review counts, outputs) is an
    :class:`~bees_cli.engine.models.ItemState`, carried by a continue-as-new.
    """

    item: ItemInput | None = None
    phase: Phase = Phase.STARTING
    stage: str | None = None
    round: int = 0
    round_of: str | None = None
    agent: str | None = None
    reason: str | None = None
    person: tuple[str, PersonInput] | None = None
    relinquish: PersonInput | None = None
    handed: HandoverOutput | None = None
    requests: list[ApprovalRequest] = field(default_factory=list)
    approved: set[tuple[str, int]] = field(default_factory=set)
    journal: list[JournalEntry] = field(default_factory=list)
    facts: int = 0
    pieces: dict[str, PieceView] = field(default_factory=dict)
    piece_handles: dict[str, workflow.ChildWorkflowHandle[object, PieceOutput]] = field(
        default_factory=dict)
    ended_attempts: set[tuple[str, int, int]] = field(default_factory=set)
    retried_denials: frozenset[int] = frozenset()
    patches: Patches = field(default_factory=Patches)


# what the run is doing, for the validators of a person's requests (bees_cli.moves.Phase)
RUNNING, WAITING, FAILED, STOPPED, APPROVAL = (
    Phase.RUNNING.value, Phase.WAITING.value, Phase.FAILED.value, Phase.STOPPED.value,
    Phase.APPROVAL.value)


class RunParts:
    """Base of the item workflow's parts: the one declaration of the run's state."""

    live: LiveRun

"""The item page's view model: status, stage, where, the story, the held action, the buttons,
the pieces as a tree, the logs and what each model stage used (issue 17, point 2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from bees_cli.agents.selection import pick_words
from bees_cli.app.views import (
    Field_,
    HeldView,
    Verb,
    detail,
    held_view,
    offered,
    since_text,
)
from bees_cli.record.pieces import Piece
from bees_cli.record.states import Status, status_text
from bees_cli.record.views import ItemShow, ModelUsage
from bees_cli.usecases.item_details import ItemDetails
from bees_cli.usecases.models import TeamItemDetails
from bees_cli.utc import display_utc, parse_utc, utc_now

OUTPUT_FILES = 20
"""A waiting finish shows at most this many of the stage's output files..."""

OUTPUT_BYTES = 64 * 1024
"""...and of each at most this many bytes (the rest: ``bees item show``'s run folder)."""


@dataclass(frozen=True)
class StoryEvent:
    """One ``<li data-event="KIND">`` of the story's timeline: when, the fact as ``bees item
    show`` renders it, and its tone (the marker's colour)."""

    kind: str
    at: str
    text: str
    tone: str = "info"
    """``ok`` (finished, approved, done), ``bad`` (failed, denied, cancelled, a send-back),
    ``person`` (waits for a person), or ``info``."""


TONES = {"stage_finished": "ok", "done": "ok", "approved": "ok", "accepted": "ok",
         "stage_failed": "bad", "denied": "bad", "cancelled": "bad", "review_limit": "bad",
         "stage_interrupted": "bad", "approval_asked": "person", "cancel_asked": "person",
         "relinquished": "person"}
"""A fact's tone on the timeline, by kind (others: ``info``)."""


@dataclass(frozen=True)
class Step:
    """One stage on the item's progress line (``<li data-stage data-state>``)."""

    name: str
    state: str
    """``done``, ``current`` (running or about to), ``waiting`` (for a person), ``failed``,
    ``stopped`` (cancelled, free) or ``todo``."""
    sent_back: int = 0
    """A review stage: how many times it sent its work back (changes requested)."""
    reviews: str | None = None
    """A review stage: the stage it sends back to."""

    @property
    def words(self) -> str:
        """The step for a screen reader and the tooltip: ``Review: done, sent back to
        Draft 1 time``."""
        back = (f", sent back to {self.reviews} {self.sent_back} time"
                f"{'s' if self.sent_back > 1 else ''}") if self.sent_back else ""
        return f"{self.name}: {self.state}{back}"


STEP_OF_STATUS: dict[str, str] = {
    Status.WAITING_FOR_APPROVAL: "waiting", Status.WAITING_FOR_PERSON: "waiting",
    Status.FAILED: "failed", Status.LOST: "failed", Status.CANCELLED: "stopped",
    Status.FREE: "stopped"}
"""The current step's state by the item's status (others: ``current``)."""


def progress(stages: list[dict[str, object]], stage: str | None, status: str,
             story: list[object]) -> list[Step]:
    """Return the item's progress line: each stage of its process (its snapshot's
    ``stages``), those before ``stage`` done, ``stage`` marked by ``status``, the rest to
    do; a done item has every step done. Each review stage counts the send-backs its
    finished attempts asked for (``verdict: changes_requested``). ``[]`` without stages."""
    names = [str(s["name"]) for s in stages]
    at = names.index(stage) if stage in names else -1
    sent: dict[str, int] = {}
    for event in story:
        if getattr(event, "kind", None) == "stage_finished" and \
                getattr(event, "verdict", None) == "changes_requested":
            name = str(getattr(event, "stage", ""))
            sent[name] = sent.get(name, 0) + 1
    steps = []
    for n, spec in enumerate(stages):
        if status == Status.DONE or n < at:
            state = "done"
        elif n == at:
            state = STEP_OF_STATUS.get(status, "current")
        else:
            state = "todo"
        reviews = spec.get("reviews")
        steps.append(Step(name=names[n], state=state, sent_back=sent.get(names[n], 0),
                          reviews=str(reviews) if reviews else None))
    return steps


@dataclass(frozen=True)
class PieceNode:
    """A piece with the pieces it handed out (``<ul>`` nested)."""

    name: str
    agent: str
    why: str
    status: str
    usage: str
    task: str
    children: list[PieceNode] = field(default_factory=list)


@dataclass(frozen=True)
class PieceGroup:
    """The pieces of one stage round."""

    stage: str
    round: int
    pieces: list[PieceNode]


@dataclass(frozen=True)
class LogLink:
    """One log or transcript file, shown at ``/items/ITEM_ID/logs/INDEX``."""

    index: int
    name: str


@dataclass(frozen=True)
class ItemPage:
    """``/items/ITEM_ID``: everything the page and its live part show."""

    item_id: str
    title: str
    process: str
    stage: str
    status: str
    detail: str
    """What the status text says beside the word (``exit 1``), or ``""``."""
    agent: str
    where: str
    since: str
    runs_elsewhere: str | None
    """The computer that runs it when it is not this one (answer it there)."""
    story: list[StoryEvent]
    steps: list[Step]
    """The progress line (``[]``: the process's stages are not known here)."""
    held: list[HeldView]
    verbs: tuple[Verb, ...]
    pieces: list[PieceGroup]
    logs: list[LogLink]
    models: list[ModelUsage]
    run_folder: str | None


def _tree(pieces: list[Piece]) -> list[PieceGroup]:
    groups: list[PieceGroup] = []
    for stage, round_ in dict.fromkeys((p.stage, p.round) for p in pieces):
        mine = [p for p in pieces if (p.stage, p.round) == (stage, round_)]

        def nodes(parent: str | None, mine: list[Piece] = mine) -> list[PieceNode]:
            return [PieceNode(name=p.piece, agent=p.agent or p.named,
                              why=pick_words(p.pick_reason),
                              status=str(p.status) + (f": {p.reason}" if p.reason else ""),
                              usage=p.usage(), task=p.task, children=nodes(p.piece))
                    for p in mine if p.parent == parent]

        groups.append(PieceGroup(stage=stage, round=round_, pieces=nodes(None)))
    return groups


def stage_output(summary: str) -> list[Field_]:
    """Return a waiting finish's output files (name, text) from its summary
    (``output DIR``): the first :data:`OUTPUT_FILES` files, each cut at
    :data:`OUTPUT_BYTES`."""
    if not summary.startswith("output "):
        return []
    folder = Path(summary.removeprefix("output "))
    if not folder.is_dir():
        return []
    files = sorted(f for f in folder.rglob("*") if f.is_file() and not f.is_symlink())
    shown: list[Field_] = []
    for path in files[:OUTPUT_FILES]:
        with path.open("rb") as handle:
            data = handle.read(OUTPUT_BYTES + 1)
        text = data[:OUTPUT_BYTES].decode("utf-8", errors="replace")
        if len(data) > OUTPUT_BYTES:
            text += "\n… (cut; the whole file is in the run folder)"
        shown.append(Field_(str(path.relative_to(folder)), text))
    return shown


def _when(text: str) -> str:
    try:
        return display_utc(parse_utc(text))
    except ValueError:
        return text


def item_page(details: ItemDetails | TeamItemDetails, *, here: str,
              now: datetime | None = None,
              stages: list[dict[str, object]] | None = None) -> ItemPage:
    """Return the item page of ``bees item show``'s result (:meth:`Bees.item_details`).

    A request a person answered while ``bees run`` was down is not offered again, and the
    status says the decision as ``bees status`` and ``bees item show`` do (``approved by
    maya@example.com 2m ago: delivered when bees run starts``, ``just now`` under a minute,
    as every age of a live part; issue 23, point 2).

    Args:
        details: this computer's item, or a team item another computer runs.
        here: this computer's name.
        now: the clock the decisions' ages are counted from (UTC); default: now.
        stages: the stages of its process (:func:`~bees_cli.record.listing.process_stages`)
            for the progress line.
    """
    if isinstance(details, TeamItemDetails):
        status = details.status or "-"
        runs_here = False
        return ItemPage(
            item_id=details.id, title=details.title or "-", process=details.process or "-",
            stage=details.stage or "-", status=status, detail="",
            agent=details.agent or "-", where=details.computer, since=since_text(details.since),
            runs_elsewhere=details.computer, story=[],
            steps=progress(stages or [], details.stage, status, []), held=[],
            verbs=offered(status, runs_here=runs_here, held=False), pieces=[], logs=[],
            models=[], run_folder=None)
    show = ItemShow.of(details.to_json())
    row = show.item
    facts = show.events()
    story = [StoryEvent(kind=e.kind, at=_when(e.at), text=e.render(),
                        tone=TONES.get(e.kind, "info")) for e in facts]
    if story and any(getattr(e, "verdict", None) == "changes_requested" for e in facts):
        story = [StoryEvent(e.kind, e.at, e.text, "bad") if e.kind == "stage_finished" and
                 getattr(f, "verdict", None) == "changes_requested" else e
                 for e, f in zip(story, facts, strict=True)]
    waiting = [r for r in show.approvals if r.get("status") == "waiting"]
    held = [held_view(r, stage_output(str(r.get("summary") or ""))
                      if r.get("action") is None else None) for r in waiting]
    status = str(row.status)
    said = detail(status, status_text(row.status, row.reason))
    if held and row.status == Status.WAITING_FOR_APPROVAL:  # what waits; its input is below
        said = ", ".join(h.action or f"finish {h.stage}" for h in held)
    elif show.waits_for_bees_run():
        said = show.status_words(now or utc_now(), coarse=True)
    return ItemPage(
        item_id=row.item_id, title=row.title, process=row.process, stage=row.stage or "-",
        status=status, detail=said,
        agent=row.agent or "-", where="-" if row.status == Status.FREE else here,
        since=since_text(row.since), runs_elsewhere=None,
        story=story, steps=progress(stages or [], row.stage, status, list(facts)),
        held=held, verbs=offered(status, runs_here=True, held=bool(held)),
        pieces=_tree(list(show.pieces)),
        logs=[LogLink(i, Path(p).name) for i, p in enumerate(show.logs)],
        models=list(show.models), run_folder=row.run_folder)

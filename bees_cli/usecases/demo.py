"""``bees demo``: the model example from a fresh copy to Done, asking the person at the approval.

One command does what README command 1 did by hand (issue 28, point 1): serve the embedded
model (or use the server at ``model_url``), copy the example into a fresh workspace, point
its agents at that model, create the item, run ``bees run --exit-when-idle`` until the item
needs a person, ask (approve, edit then approve, deny with a reason, or quit), deliver the
answer on the next run, and say where the item ended. The model server is stopped on the way
out, whatever happens; a quit leaves the item waiting for a decision, resumable by the usual
commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bees_cli.errors import Refused, UserError
from bees_cli.record.states import Status, WaitKind
from bees_cli.usecases.models import ApprovalRow, Result

if TYPE_CHECKING:
    from bees_cli.usecases.bees import Bees

EXAMPLE = "weekly-report-model"
"""The example the demo copies: shipped inside the package (``setup.py``), else the source
tree's ``examples/`` (an editable install)."""
PROCESS = "weekly-report"
TITLE = "Weekly report (bees demo)"
EXAMPLE_MODEL_URL = "http://127.0.0.1:11434/v1"
"""The base URL the example's agents name; the copy names the model the demo serves."""
OUTBOX = "outbox"
"""The example's folder the mail add-on writes each sent message to."""
REPORT = ("Draft", "report.md")
"""The report the writer agent's choice made (the example's report add-on), in the run
folder."""

Outcome = Literal["done", "quit", "stopped", "failed", "waiting for a person", "cancelled"]


class Decision(Result):
    """A person's answer to what waits: approve (with the person's ``input`` instead of the
    agent's, when given: one held action call), deny with ``reason``, or quit (``approve``
    None: decide later)."""

    approve: bool | None
    reason: str | None = None
    input: dict[str, Any] | None = None


class DemoDecision(Result):
    """One decision the demo delivered: ``approved`` or ``denied`` (with its reason) of the
    held ``action`` (None: a stage's finish)."""

    decision: Literal["approved", "denied"]
    action: str | None
    reason: str | None = None


class DemoOutcome(Result):
    """Where the demo left its item: ``outcome``, the item's status and stage then, its
    workspace and run folder, the files it made (``results``: the mail in the outbox, the
    report), the model's base URL, and each decision (oldest first)."""

    item_id: str
    outcome: Outcome
    status: Status
    stage: str
    workspace: Path
    run_folder: Path
    results: list[Path]
    model_url: str
    model_embedded: bool
    decisions: list[DemoDecision]


Ask = Callable[[list[ApprovalRow]], Awaitable[Decision]]
"""Shows what waits on the demo's item and returns the person's decision."""


def example_folder() -> Path:
    """Return the folder of the example the demo copies.

    Raises:
        UserError: neither the package's copy nor the source tree's ``examples/`` has it
            (a broken install).
    """
    import bees_cli

    package = Path(bees_cli.__file__).resolve().parent
    for folder in (package / "examples" / EXAMPLE, package.parent / "examples" / EXAMPLE):
        if (folder / "bees.yaml").is_file():
            return folder
    raise UserError(f"the {EXAMPLE} example is not installed with Bees",
                    hint="reinstall bees-cli (its wheel carries the example)")


def fresh_folder(parent: Path, now: datetime) -> Path:
    """Return a folder under ``parent`` that does not exist yet, named after ``now``:
    ``weekly-report-20261202-0530``, then ``…-2``, ``…-3`` when taken."""
    base = f"{PROCESS}-{now:%Y%m%d-%H%M%S}"
    folder, n = parent / base, 1
    while folder.exists():
        n += 1
        folder = parent / f"{base}-{n}"
    return folder


def refuse_existing(folder: Path) -> None:
    """Refuse a workspace folder that exists: the demo makes a fresh one.

    Raises:
        UserError: ``folder`` exists.
    """
    if folder.exists():
        raise UserError(f"{folder} exists: the demo makes a fresh workspace",
                        hint="name a folder that does not exist yet, or leave out --dir")


def copy_example(target: Path, model_url: str) -> Path:
    """Copy the example to ``target`` (which must not exist), its agents pointed at
    ``model_url``, without mail an earlier run left in its outbox; return ``target``.

    Raises:
        UserError: ``target`` exists.
    """
    refuse_existing(target)
    shutil.copytree(example_folder(), target,
                    ignore=shutil.ignore_patterns("*.eml", "__pycache__"))
    for agent in sorted((target / "agents").glob("*.yaml")):
        text = agent.read_text(encoding="utf-8")
        agent.write_text(text.replace(EXAMPLE_MODEL_URL, model_url), encoding="utf-8")
    return target


@contextlib.asynccontextmanager
async def model_serving(model_url: str | None, *, threads: int | None,
                        say: Callable[[str], None]) -> AsyncIterator[tuple[str, bool]]:
    """Yield ``(base URL, embedded)`` of the model the demo's agents use: ``model_url`` as
    given, else the embedded model served in this process on Ollama's port when free (else
    a free one), stopped when the block ends, an error or Ctrl-C too.

    Raises:
        ModelError: the embedded model is not installed, or did not start.
    """
    if model_url is not None:
        yield model_url.rstrip("/"), False
        return
    from bees_cli.errors import ModelError
    from bees_cli.usecases.embedded_model import (
        DEFAULT_HOST,
        DEFAULT_PORT,
        check_port,
        default_threads,
        model_file,
        start_server,
    )

    path = model_file()
    try:
        check_port(DEFAULT_HOST, DEFAULT_PORT)
        port = DEFAULT_PORT
    except ModelError:
        port = 0  # Ollama (or another model) listens there: a free port instead
    held = [await asyncio.to_thread(start_server, path, DEFAULT_HOST, port,
                                    threads or default_threads())]
    try:
        url = f"{str(held[0][1]).rstrip('/')}/v1"
        say(f"demo: the embedded model (SmolLM2-135M) serves at {url}")
        yield url, True
    finally:
        held.clear()  # the last reference: llama.cpp's destructor stops its threads
        say("demo: the embedded model stopped")


def _quiet(_: str) -> None:
    return None


def _interrupt_raises() -> None:
    """Give Ctrl-C back to Python (KeyboardInterrupt) after ``bees run`` took it.

    Why: ``bees run`` makes Ctrl-C stop it gently (a loop signal handler); once it returns,
    that handler would swallow a Ctrl-C at the prompt or while the model stops.
    """
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.remove_signal_handler(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _results(workspace: Path, run_folder: Path) -> list[Path]:
    """The files the item made: each mail in the workspace's outbox, then the report."""
    mails = sorted(p for p in (workspace / OUTBOX).glob("*") if not p.name.startswith("."))
    report = run_folder.joinpath(*REPORT)
    return mails + ([report] if report.is_file() else [])


FOLLOW_EVERY = 0.5
"""Seconds between two looks at the item while it runs (for the progress lines)."""
SAME_LINE_EVERY = 10.0
"""Least seconds between two progress lines of one stage, status and agent (a model's
"turn 2, 180 tokens so far" changes at every look)."""


async def _run_following(bees: Bees, workspace: Path, item_id: str) -> None:
    """``bees run --exit-when-idle`` on ``workspace``, saying each change of the item's
    stage, status or agent as it happens (its model progress at most every
    :data:`SAME_LINE_EVERY` s)."""
    run = asyncio.create_task(bees.run(workspace_path=workspace, address=None,
                                       exit_when_idle=True))
    loop = asyncio.get_running_loop()
    shown: tuple[object, ...] | None = None
    said, at = "", 0.0
    try:
        while not run.done():
            await asyncio.wait({run}, timeout=FOLLOW_EVERY)
            row = await bees.async_record.item(item_id)
            if row.wait == WaitKind.ENGINE_NOT_RUNNING:
                continue  # the engine this very run starts
            key = (row.stage, row.status, row.agent)
            line = f"demo: {row.stage}: {row.status_text}" + (
                f" ({row.agent})" if row.agent and row.status == Status.RUNNING else "")
            if line != said and (key != shown or loop.time() - at >= SAME_LINE_EVERY):
                bees.say(line)
                shown, said, at = key, line, loop.time()
    finally:
        if not run.done():  # cancelled (Ctrl-C before bees run took it, an error here)
            run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run
    await run


async def _decided(bees: Bees, item_id: str, ask: Ask,
                   waiting: list[ApprovalRow]) -> Decision:
    """Ask the person until an answer is delivered (or they quit); return it.

    An edited input the action's schema refuses is said (its field named) and asked
    again, as ``bees approve --input`` refuses it before deciding anything.
    """
    while True:
        decision = await ask(waiting)
        if decision.approve is None:
            return decision
        edited = None if decision.input is None else json.dumps(decision.input)
        try:
            await bees.decide(item_id, approve=decision.approve, reason=decision.reason,
                              input_text=edited)
        except UserError as refused:
            if edited is None:
                raise
            bees.say(f"demo: {refused.message}")
            continue
        return decision


_ENDS: dict[str, Outcome] = {
    Status.DONE: "done", Status.FAILED: "failed",
    Status.WAITING_FOR_PERSON: "waiting for a person", Status.CANCELLED: "cancelled",
}


async def _demo(bees: Bees, *, ask: Ask, folder: Path | None = None,
                model_url: str | None = None, threads: int | None = None,
                now: datetime | None = None) -> DemoOutcome:
    """Run the demo (see the module docstring) and return where its item ended.

    Args:
        bees: this computer's application; ``bees.say`` gets the progress lines.
        ask: called with what waits each time the item stops for approval; its
            :class:`Decision` is delivered on the next run (approve or deny) or ends the
            demo with the item waiting (quit).
        folder: the workspace to make (must not exist); default: a fresh folder under
            ``demo/`` in this computer's data folder (:func:`fresh_folder`).
        model_url: an OpenAI-style base URL to use instead of serving the embedded model.
        threads: the embedded model's generating threads (default: half the cores).
        now: the time that names the default folder (default: now, local time).

    Returns:
        The outcome: ``done``, ``quit`` (the person decides later), ``stopped`` (Ctrl-C
        while it ran: the item waits for the next ``bees run``), or the item's end.

    Raises:
        ModelError: the embedded model is not installed or did not start.
        Refused: ``bees run`` already runs on this computer (checked first).
        UserError: ``folder`` exists.
        EngineError: the engine could not start or went away.
    """
    if folder is None:
        folder = fresh_folder(bees.computer.data_dir / "demo", now or datetime.now())
    refuse_existing(folder)  # before the model loads: a wrong --dir costs nothing
    if await asyncio.to_thread(bees.bees_run_running):
        # it would take the demo's item, with a model the demo stops when it ends
        raise Refused("bees run is already running on this computer: the demo runs its own",
                      hint="stop it first (Ctrl-C), or give the demo a computer of its own: "
                           "BEES_HOME=DIR bees demo")
    say = bees.say
    decisions: list[DemoDecision] = []
    async with model_serving(model_url, threads=threads, say=say) as (url, embedded):
        workspace = await asyncio.to_thread(copy_example, folder, url)
        say(f"demo: copied the {EXAMPLE} example to {workspace}")
        said, bees.say = bees.say, _quiet  # not "the engine is not running": it starts next
        try:
            created = await bees.create_item(workspace, PROCESS, title=TITLE)
        finally:
            bees.say = said
        say(f"demo: created item {created.id}; running it until it needs you")
        outcome: Outcome | None = None
        while outcome is None:
            await _run_following(bees, workspace, created.id)
            _interrupt_raises()
            row = await bees.async_record.item(created.id)
            if row.status in _ENDS:
                outcome = _ENDS[row.status]
                break
            if row.status != Status.WAITING_FOR_APPROVAL:
                outcome = "stopped"  # Ctrl-C stopped bees run: the item waits for the next
                break
            waiting = await bees.approvals_of(created.id)
            decision = await _decided(bees, created.id, ask, waiting)
            if decision.approve is None:
                outcome = "quit"
                break
            for request in waiting:
                action = (request.model_extra or {}).get("action")
                decisions.append(DemoDecision(
                    decision="approved" if decision.approve else "denied",
                    action=action, reason=decision.reason))
            edited = " with your input" if decision.input is not None else ""
            say(f"demo: {decisions[-1].decision}{edited}; running it on")
        row = await bees.async_record.item(created.id)
    run_folder = Path(row.run_folder or created.run_folder)
    return DemoOutcome(item_id=created.id, outcome=outcome, status=row.status,
                       stage=row.stage or "", workspace=workspace, run_folder=run_folder,
                       results=_results(workspace, run_folder), model_url=url,
                       model_embedded=embedded, decisions=decisions)

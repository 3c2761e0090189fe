"""``bees demo``: the model example to Done in one command, asking you at the approval."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bees_cli.cli.context import bees_here
from bees_cli.cli.errors import touches_engine
from bees_cli.cli.options import MAX_THREADS, JsonOpt
from bees_cli.cli.output import exit_hard, say

if TYPE_CHECKING:
    from bees_cli.usecases.demo import Decision, DemoOutcome
    from bees_cli.usecases.item_details import ItemDetails
    from bees_cli.usecases.models import ApprovalRow, TeamItemDetails

CONTEXT = {"help_option_names": ["-h", "--help"]}
CHOICES = "[a]pprove, [e]dit the input then approve, [d]eny with a reason, [q]uit and decide later"
EXIT_CODES = {"done": 0, "quit": 0, "stopped": 130}
"""How ``bees demo`` ends by its outcome: 0 done or quit (the person chose to decide later),
130 stopped by Ctrl-C (while it ran, or at the question: the item waits as on a quit), 1
when the item failed or stopped for a person."""
INTERRUPTED = 130
DENY_PROMPT = ("why? (the agent is told, and may ask again; one that repeats the mail until "
               "its turns run out fails the stage, and [e]dit changes the mail yourself): ")


@touches_engine
def demo(
    yes: Annotated[bool, typer.Option(
        "--yes", "-y", help="Approve what the run asks, without asking (scripts and CI).")
    ] = False,
    folder: Annotated[Path | None, typer.Option(
        "--dir", metavar="DIR", show_default=False,
        help="Make the demo's workspace here (a folder that does not exist yet). Default: a "
             "fresh folder under demo/ in this computer's data folder.")] = None,
    model_url: Annotated[str | None, typer.Option(
        "--model-url", metavar="URL", show_default=False,
        help="Use this OpenAI-style server (e.g. Ollama's http://127.0.0.1:11434/v1, with a "
             "model named smollm2) instead of serving the embedded model.")] = None,
    threads: Annotated[int | None, typer.Option(
        "--threads", min=1, max=MAX_THREADS, show_default=False,
        help="The embedded model's generating threads (default: half the cores).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the weekly report with model agents from a fresh copy to Done, on this computer.

    Serves the embedded demo model (and stops it at the end), copies the model example to a
    new workspace, creates the item and runs it: a writer chooses the week's highlight
    and a template writes the report from the notes, a check and a reviewer judge it, a
    sender asks to mail it to an address of the team. Sending waits for you: the held mail
    is shown field by field and you approve, edit its fields then approve, deny with a
    reason (the agent is told and may ask again; the small model tends to repeat itself
    until the stage fails), or quit and decide later with bees approve / bees deny. Then it
    prints where the result is, the item's story, and the commands that continue it.
    Progress goes to stderr; --json prints a summary on stdout. Needs the model extra (bees
    model serve --help says how to install it).

    Example: bees demo --yes
    """
    import asyncio

    from bees_cli.cli import json_models as out
    from bees_cli.cli.logs import RUN_LOG, engine_logs_in_one_line, run_lines
    from bees_cli.errors import UserError

    if not yes and not sys.stdin.isatty():  # a script that forgot --yes must not pass
        raise UserError("bees demo asks you at the terminal, and its input is not one",
                        hint="pass --yes to approve the held action without asking")

    bees = bees_here(run_lines())
    engine_logs_in_one_line(bees.computer.data_dir / RUN_LOG)
    terminal = _TerminalAsk()
    ask = _approve_all if yes else terminal

    async def demo_then_story() -> tuple[DemoOutcome, ItemDetails | TeamItemDetails]:
        done = await bees.demo(ask=ask, folder=folder, model_url=model_url, threads=threads)
        return done, await bees.item_details(done.item_id)

    done, found = asyncio.run(demo_then_story())
    if as_json:
        out.emit(out.DemoOut.model_validate(done.to_json()))
    else:
        _tell(done, found)
    exit_hard(INTERRUPTED if terminal.interrupted else EXIT_CODES.get(done.outcome, 1))


async def _approve_all(waiting: list[ApprovalRow]) -> Decision:
    """``--yes``: show what waits, then approve it."""
    from bees_cli.usecases.demo import Decision

    _show(waiting)
    say("demo: --yes: approved")
    return Decision(approve=True)


class _TerminalAsk:
    """Asks the person at the terminal; ``interrupted`` once a Ctrl-C answered (the demo then
    exits 130, docs/ci.md)."""

    def __init__(self) -> None:
        self.interrupted = False

    async def __call__(self, waiting: list[ApprovalRow]) -> Decision:
        """See :func:`_ask_terminal`; a Ctrl-C is remembered."""
        try:
            return await _ask_terminal(waiting)
        except KeyboardInterrupt:
            from bees_cli.usecases.demo import Decision

            say("")
            self.interrupted = True
            return Decision(approve=None)


async def _ask_terminal(waiting: list[ApprovalRow]) -> Decision:
    """Show what waits and ask the person at the terminal: approve, edit then approve, deny
    with a reason, or quit (also the end of input).

    Raises:
        KeyboardInterrupt: Ctrl-C at the question.
    """
    from bees_cli.usecases.demo import Decision

    _show(waiting)
    try:
        while True:
            choice = _prompt(f"{CHOICES}: ").strip().lower()
            if choice in ("a", "approve", "y", "yes"):
                return Decision(approve=True)
            if choice in ("q", "quit"):
                return Decision(approve=None)
            if choice in ("e", "edit"):
                edited = _edit(waiting)
                if edited is not None:
                    return Decision(approve=True, input=edited)
                continue
            if choice in ("d", "deny", "n", "no"):
                reason = ""
                while not reason:
                    reason = _prompt(DENY_PROMPT).strip()
                return Decision(approve=False, reason=reason)
            say(f"answer a, e, d or q ({CHOICES})")
    except EOFError:
        say("")
        return Decision(approve=None)


def _edit(waiting: list[ApprovalRow]) -> dict[str, Any] | None:
    """Ask each field of the one held action call's input, the agent's value in brackets
    (Enter keeps it); return the edited input, or None (said) when what waits is not one
    held action call with an input object.

    A typed value replaces a text field as it is; for another field it is read as JSON
    (``3``, ``true``, ``["a", "b"]``), else kept as text: the action's input schema judges
    it when it is approved (``bees approve ITEM --input``).

    Raises:
        EOFError: stdin ended.
    """
    import json

    from bees_cli.usecases.approvals import request_input

    extra = waiting[0].model_extra or {} if len(waiting) == 1 else {}
    value = request_input(extra.get("input")) if extra.get("action") else None
    if not isinstance(value, dict):
        say("only one held action call's input can be edited here; approve, deny or quit")
        return None
    edited: dict[str, Any] = {}
    for key, old in value.items():
        shown = old if isinstance(old, str) else json.dumps(old)
        typed = _prompt(f"  {key} [{shown}]: ").rstrip("\n")
        if not typed:
            edited[key] = old
        elif isinstance(old, str):
            edited[key] = typed
        else:
            try:
                edited[key] = json.loads(typed)
            except ValueError:
                edited[key] = typed
    return edited


def _prompt(text: str) -> str:
    """Ask on stderr (stdout stays for the result), read one line of stdin.

    Raises:
        EOFError: stdin ended.
    """
    sys.stderr.write(text)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


def _show(waiting: list[ApprovalRow]) -> None:
    """Show each waiting request whole, field by field (``bees approvals show``'s lines,
    without its commands: the demo asks)."""
    from bees_cli.cli.status_view import request_lines

    say("")
    say("The run stopped: this waits for your approval.")
    for row in waiting:
        lines = request_lines(row)
        decide = next((n for n, line in enumerate(lines) if line.startswith("decide")),
                      len(lines))
        for line in lines[:decide]:
            say(f"  {line}")
    say("")


def _tell(done: DemoOutcome, found: ItemDetails | TeamItemDetails) -> None:
    """Print where the item ended, where its results are, its story (``bees item show``'s
    text), and, unless it is done, the commands that continue it."""
    from bees_cli.cli.engine import echo_item
    from bees_cli.usecases.item_details import ItemDetails

    typer.echo(f"demo: {_headline(done)}")
    typer.echo(f"workspace   {done.workspace}")
    for path in done.results:
        typer.echo(f"result      {path}")
    typer.echo("")
    if isinstance(found, ItemDetails):
        echo_item(found)
    if done.outcome != "done":
        typer.echo("")
        for line in _next_steps(done):
            typer.echo(line)


def _headline(done: DemoOutcome) -> str:
    """One line: how the demo ended."""
    if done.outcome == "done":
        return f"item {done.item_id} is done"
    if done.outcome == "quit":
        return f"item {done.item_id} waits for your decision at {done.stage}"
    if done.outcome == "stopped":
        return f"stopped; item {done.item_id} waits for the next bees run at {done.stage}"
    return f"item {done.item_id} stopped at {done.stage}: {done.status}"


def _next_steps(done: DemoOutcome) -> list[str]:
    """The commands that continue the item where the demo left it."""
    from urllib.parse import urlsplit

    item, workspace = done.item_id, done.workspace
    lines = ["to continue:"]
    if done.model_embedded:
        port = urlsplit(done.model_url).port
        serve = "bees model serve" + ("" if port == 11434 else f" --port {port}")
        lines.append(f"  {serve} &        # the model the item's agents use")
    if done.outcome in ("failed", "waiting for a person"):
        # a retry is sent to the running engine: bees run first, in the background (a
        # --exit-when-idle run would stop at once, nothing of the failed item left to run)
        lines.append(f"  bees run -w {workspace} &        # the engine: bees retry needs it "
                     "up (stop it later: fg, then Ctrl-C)")
        lines.append(f"  bees retry {item}        # then bees approvals, bees approve {item}")
        lines.append(f"  bees item show {item}")
        return lines
    if done.outcome == "quit":
        lines.append(f"  bees approve {item}        # or: bees deny {item} --reason TEXT")
    lines.append(f"  bees run -w {workspace} --exit-when-idle")
    lines.append(f"  bees item show {item}")
    return lines


def register(app: typer.Typer) -> None:
    """Attach ``demo`` to the root app."""
    app.command("demo", context_settings=CONTEXT)(demo)

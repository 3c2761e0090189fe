"""The root ``bees`` app: each command group is imported when its name is asked for, behind the
one error boundary."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from difflib import get_close_matches
from typing import Annotated, Any, NamedTuple

import typer
from typer.core import TyperCommand, TyperGroup

from bees_cli import __version__

CONTEXT = {"help_option_names": ["-h", "--help"]}


class Entry(NamedTuple):
    """A root command: the command modules whose ``register(app)`` defines it (registered
    together, in this order), and the first paragraph of its help, which the root's help and
    shell completion list without importing those modules."""

    modules: tuple[str, ...]
    help: str


_ENGINE = ("engine", "control")  # control adds `item accept|cancel` to engine's `item` group

# Root commands in the order `bees --help` lists them (typer's: commands, then groups).
# tests/cli/test_startup.py checks this table against the modules' own commands and help.
COMMANDS: dict[str, Entry] = {
    "whoami": Entry(("machine",), "Show this computer's machine id, name and signed-in person."),
    "link": Entry(("machine",), "Link a declared folder to a directory on this computer."),
    "unlink": Entry(("machine",), "Remove this computer's link of a folder."),
    "links": Entry(("machine",), "List each declared folder, where it resolves here, and whether "
                   "it is linked."),
    "addons": Entry(("machine",), "List each add-on and whether it is connected on this "
                    "computer, with what is missing."),
    "run": Entry(_ENGINE, "Run this computer's engine and worker until Ctrl-C."),
    "status": Entry(_ENGINE, "List work items with stage, status, agent and since when: this "
                    "computer's, then the team's from the shared record (\"Draft, running on "
                    "maya-laptop\")."),
    "init": Entry(("workspace",), "Create a starter workspace: a draft → review → done process, "
                  "two agents, schemas."),
    "validate": Entry(("workspace",), "Check every file of the workspace; print each problem as "
                      "FILE:LINE:COL  field  message."),
    "login": Entry(("login",), "Sign this computer in to Bees Cloud (the token is stored with "
                   "mode 0600)."),
    "logout": Entry(("login",), "Forget this computer's Bees Cloud token (this computer's person "
                    "stays as it is)."),
    "retry": Entry(_ENGINE, "Start a failed stage again from the top, as a new attempt (or, for "
                   "an item stopped at the review limit, one more round from the work stage)."),
    "approvals": Entry(_ENGINE, "List what waits for a person's approval on this computer."),
    "approve": Entry(_ENGINE, "Approve what waits on an item (a held action, or its stage's "
                     "finish)."),
    "deny": Entry(_ENGINE, "Deny what waits on an item: the agent's action is refused with the "
                  "reason."),
    "action": Entry(_ENGINE, "Run an add-on action from inside a stage, once the item's run "
                    "allows it."),
    "schedules": Entry(("schedules",), "List the workspace's schedules: whether they fire here, "
                       "their next three times in their own time zone, and this computer's last "
                       "fires with their outcome (ran here, taken by another computer, skipped, "
                       "missed, gave up, not eligible, failed)."),
    "doctor": Entry(("doctor",), "Check this computer: the engine and its version, Bees Cloud "
                    "(reachable, authorized, clock skew), folder links, add-on connections, and "
                    "for each process whether it could run here now, and if not, why."),
    "relinquish": Entry(("handover",), "Stop an item this computer owns and hand it over: its "
                        "stage stops, the checkpoint is written into the run folder, and Bees "
                        "Cloud learns that the item is free."),
    "continue": Entry(("handover",), "Continue a relinquished item on this computer: verify its "
                      "checkpoint and files, check eligibility, then claim it and start its "
                      "unfinished stage from the top."),
    "item": Entry(_ENGINE, "Work items: create one, show one."),
    "schemas": Entry(("workspace",), "JSON Schemas of the workspace files, for editors."),
    "cloud": Entry(("cloud",), "Bees Cloud: run the server, manage teams and people, check the "
                   "connection."),
    "checkpoint": Entry(("checkpoint",), "Check the checkpoint a run folder carries on a "
                        "handover."),
    "model": Entry(("model",), "The embedded demo model: a tiny local model for trying model "
                   "agents."),
}

# Each module has ``register(app)``; its heavy imports stay inside command bodies. This order
# (``_register``'s) gives the order of COMMANDS.
COMMAND_MODULES: list[str] = [
    "machine",
    "engine",
    "workspace",
    "cloud",
    "login",
    "checkpoint",
    "control",
    "schedules",
    "doctor",
    "handover",
    "model",
]


def _typer(**settings: Any) -> typer.Typer:
    """A Typer with the root's settings (sub-commands inherit its markup mode when converted:
    ``None`` keeps rich off every path)."""
    return typer.Typer(
        no_args_is_help=True, context_settings=CONTEXT, pretty_exceptions_enable=False,
        rich_markup_mode=None, **settings,
    )


class LazyGroup(TyperGroup):
    """The root group: a command's modules are imported and converted (typer's parameter
    machinery) only when that command is resolved; the root's help, its completion and its
    did-you-mean list the names and help of :data:`COMMANDS` instead."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.listing = False
        self.loaded: set[tuple[str, ...]] = set()

    @contextmanager
    def _listing(self) -> Iterator[None]:
        self.listing = True
        try:
            yield
        finally:
            self.listing = False

    def _load(self, modules: tuple[str, ...]) -> None:
        """Register ``modules`` on a fresh Typer behind the error boundary and take its commands."""
        from bees_cli.cli.errors import guard_all

        self.loaded.add(modules)
        holder = _typer()
        for module in modules:
            importlib.import_module(f"bees_cli.cli.{module}").register(holder)
        guard_all(holder)
        for name, command in typer.main.get_group(holder).commands.items():
            self.commands.setdefault(name, command)

    def list_commands(self, ctx: Any) -> list[str]:
        """Names in :data:`COMMANDS` order, then any registered eagerly beyond it."""
        return [*COMMANDS, *(name for name in self.commands if name not in COMMANDS)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command ``cmd_name`` (importing its modules), a help-only stand-in while
        listing, or ``None`` for an unknown name."""
        command = self.commands.get(cmd_name)
        entry = COMMANDS.get(cmd_name)
        if command is not None or entry is None:
            return command
        if self.listing:
            return TyperCommand(cmd_name, help=entry.help, rich_markup_mode=None)
        if entry.modules not in self.loaded:
            self._load(entry.modules)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """List the commands from :data:`COMMANDS` (no command module is imported)."""
        with self._listing():
            super().format_commands(ctx, formatter)

    def shell_complete(self, ctx: Any, incomplete: str) -> Any:
        """Complete root command names from :data:`COMMANDS` (no command module is imported)."""
        with self._listing():
            return super().shell_complete(ctx, incomplete)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """Resolve ``args[0]``; an unknown name is refused with close names from all commands
        (typer's own suggestions know only the commands converted so far)."""
        name = args[0] if args else ""
        if (name and not name.startswith("-") and not ctx.resilient_parsing
                and self.get_command(ctx, name) is None):
            matches = get_close_matches(name, self.list_commands(ctx))
            if matches:
                suggestions = ", ".join(f"{m!r}" for m in matches)
                ctx.fail(f"No such command {name!r}. Did you mean {suggestions}?")
        return super().resolve_command(ctx, args)


app = _typer(
    name="bees",
    help="Run multi-stage agent work on your own computers, with no central dispatcher.",
    cls=LazyGroup,
    add_completion=True,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"bees {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Run multi-stage agent work on your own computers, with no central dispatcher."""


def _register() -> None:
    """Attach every command module to ``app`` at once (tests that walk all commands use it;
    ``run`` leaves it to :class:`LazyGroup`)."""
    from bees_cli.cli.errors import guard_all

    for module_name in COMMAND_MODULES:
        module = importlib.import_module(f"bees_cli.cli.{module_name}")
        module.register(app)
    guard_all(app)


def run() -> None:
    """Console entry point: run the app; a command's module is imported when it is resolved
    (errors are mapped by :mod:`bees_cli.cli.errors`)."""
    app()

"""The root ``bees`` app: each command group is imported when its name is asked for, behind the
one error boundary."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from difflib import get_close_matches
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from bees_cli import __version__
from bees_cli.cli.commands import COMMANDS, COMPLETE_VAR, HELP

CONTEXT = {"help_option_names": ["-h", "--help"]}


# Each module has ``register(app)``; its heavy imports stay inside command bodies. This order
# (``whole_app``'s) gives the order of COMMANDS.
COMMAND_MODULES: list[str] = [
    "machine",
    "engine",
    "workspace",
    "cloud",
    "login",
    "checkpoint",
    "control",
    "delegate",
    "schedules",
    "doctor",
    "handover",
    "model",
    "demo",
    "completion",
    "app",
    "helpcmd",
]


def _typer(**settings: Any) -> typer.Typer:
    """A Typer with the root's settings (sub-commands inherit its markup mode when converted:
    ``None`` keeps rich off every path)."""
    return typer.Typer(
        no_args_is_help=True, context_settings=CONTEXT, pretty_exceptions_enable=False,
        rich_markup_mode=None, **settings,
    )


_CONVERTED: dict[tuple[str, ...], dict[str, Any]] = {}
"""The click commands of each set of command modules, converted once in a process."""


def _converted(modules: tuple[str, ...]) -> dict[str, Any]:
    """Return the click commands of ``modules`` by name: registered on a fresh Typer behind
    the error boundary and converted by typer, once per process. Typer converts again each
    time an app is called (reading every parameter's type hints, about 20 ms of CPU for a
    module); a process that calls the app again (the tests' in-process runs) reuses them, as
    click's commands hold no state of a run."""
    if modules not in _CONVERTED:
        from bees_cli.cli.errors import guard_all

        holder = _typer()
        for module in modules:
            importlib.import_module(f"bees_cli.cli.{module}").register(holder)
        guard_all(holder)
        _CONVERTED[modules] = dict(typer.main.get_group(holder).commands)
    return _CONVERTED[modules]


class LazyGroup(TyperGroup):
    """The root group: a command's modules are imported and converted (typer's parameter
    machinery) only when that command is resolved; the root's help, its completion and its
    did-you-mean list the names and help of :data:`COMMANDS` instead."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name, command in self.commands.items():
            self._summarize(name, command)
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
        """Take the commands of ``modules`` (:func:`_converted`)."""
        self.loaded.add(modules)
        for name, command in _converted(modules).items():
            self.commands.setdefault(name, self._summarize(name, command))

    def make_context(self, info_name: str | None, args: list[str],
                     parent: Any = None, **extra: Any) -> Any:
        """Parse the root's options; a closed pipe under its help ends quietly (141)."""
        from bees_cli.cli.pipes import closed_pipe_ends_quietly

        with closed_pipe_ends_quietly():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        """Run the command; a closed pipe under a group's or command's help (written by
        click, before any command runs) ends quietly with 141, not typer's exit 1.

        Why: typer turns a ``BrokenPipeError`` into exit 1 itself; caught here first, every
        command and its help end alike (:func:`bees_cli.cli.pipes.leave_closed_pipe`).
        """
        from bees_cli.cli.pipes import closed_pipe_ends_quietly

        with closed_pipe_ends_quietly():
            return super().invoke(ctx)

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
            return TyperCommand(cmd_name, help=entry.help, short_help=entry.help,
                                rich_markup_mode=None)
        if entry.modules not in self.loaded:
            self._load(entry.modules)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """List the commands in their panels from :data:`COMMANDS` (no command module is
        imported), as ``bees --help`` does (:func:`bees_cli.cli.roothelp.panels`)."""
        from bees_cli.cli.roothelp import panels

        for line in panels(formatter.width):
            formatter.write(line + "\n")

    def _summarize(self, name: str, command: Any) -> Any:
        """``command`` with its short help from :data:`COMMANDS` (one source for listings)."""
        entry = COMMANDS.get(name)
        if entry is not None and command is not None:
            command.short_help = entry.help
        return command

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
    help=HELP,
    cls=LazyGroup,
    add_completion=False,  # `bees completion SHELL` prints the script; no rc files edited
)


def _version(ctx: typer.Context, value: bool) -> None:
    if value and not ctx.resilient_parsing:  # not while a shell asks for completions
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
    debug: Annotated[
        bool,
        typer.Option("--debug", help="Show a bug's Python traceback (same as BEES_DEBUG=1)."),
    ] = False,
) -> None:
    """Run multi-stage agent work on your own computers, with no central dispatcher."""
    if debug:
        import os

        from bees_cli.cli.boundary import DEBUG_ENV

        os.environ[DEBUG_ENV] = "1"


@functools.cache
def whole_app() -> typer.Typer:
    """Return a second root with every command module registered at once, for what walks the
    whole tree (the generated files, the tests); built once a process. ``app`` itself stays
    lazy: an app with every command registered would be converted whole (about 100 commands'
    parameters) each time it is called."""
    from bees_cli.cli.errors import guard_all

    whole = _typer(name="bees", help=HELP, cls=LazyGroup, add_completion=False)
    whole.callback()(root)
    for module_name in COMMAND_MODULES:
        importlib.import_module(f"bees_cli.cli.{module_name}").register(whole)
    guard_all(whole)
    return whole


@functools.cache
def whole_command() -> Any:
    """Return the click command tree of :func:`whole_app`, converted once a process."""
    return typer.main.get_command(whole_app())


def run() -> None:
    """Console entry point: run the app; a command's module is imported when it is resolved
    (errors are mapped by :mod:`bees_cli.cli.errors`). A shell's completion request
    (``_BEES_COMPLETE`` set) first registers typer's shell classes, which answer it."""
    import os

    if COMPLETE_VAR in os.environ:
        from typer.completion import completion_init

        completion_init()
    app(complete_var=COMPLETE_VAR)

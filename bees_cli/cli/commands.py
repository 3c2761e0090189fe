"""The root command table: each ``bees`` command's modules and help, importable without typer
(``bees --help`` renders from it, :mod:`bees_cli.cli.roothelp`)."""

from __future__ import annotations

COMPLETE_VAR = "_BEES_COMPLETE"
"""The environment variable through which a completion script asks ``bees`` for completions
(the typer protocol: ``complete_bash``, ``complete_zsh``, ``complete_fish``)."""

HELP = "Run multi-stage agent work on your own computers, with no central dispatcher."
"""The root's help (its callback's docstring says the same)."""


class Entry:
    """A root command: the command modules whose ``register(app)`` defines it (registered
    together, in this order), and its one-line summary, which the root's help and shell
    completion list without importing those modules (and the command's short help once
    loaded). (A plain class: ``typing`` is
    not imported on the path of ``bees --help``.)"""

    __slots__ = ("help", "modules")

    def __init__(self, modules: tuple[str, ...], help: str) -> None:
        self.modules = modules
        self.help = help


_ENGINE = ("engine", "control")  # control adds `item accept|cancel` to engine's `item` group

# Root commands in typer's registration order (commands, then groups), each with its one-line
# summary: at most 62 characters, so that `bees --help` shows it whole at 80 columns.
# tests/cli/test_startup.py checks this table against the modules' own commands.
COMMANDS: dict[str, Entry] = {
    "whoami": Entry(("machine",), "Show this computer's machine id, name and person."),
    "link": Entry(("machine",), "Link a declared folder to a directory on this computer."),
    "unlink": Entry(("machine",), "Remove this computer's link of a folder."),
    "links": Entry(("machine",), "List the declared folders and where each resolves here."),
    "addons": Entry(("machine",), "List the add-ons and whether each is connected here."),
    "run": Entry(_ENGINE, "Run this computer's engine and worker until Ctrl-C."),
    "status": Entry(_ENGINE, "List work items here and the team's, with stage and status."),
    "init": Entry(("workspace",), "Create a starter workspace (draft → review → done)."),
    "validate": Entry(("workspace",), "Check every file of the workspace (FILE:LINE:COL)."),
    "login": Entry(("login",), "Sign this computer in to Bees Cloud."),
    "logout": Entry(("login",), "Forget this computer's Bees Cloud token."),
    "retry": Entry(_ENGINE, "Start a failed or stopped stage again from the top."),
    "approve": Entry(_ENGINE, "Approve what waits on an item (an action or a finish)."),
    "deny": Entry(_ENGINE, "Deny what waits on an item, with the reason."),
    "action": Entry(_ENGINE, "Run an add-on action from inside a stage."),
    "delegate": Entry(("delegate",), "Hand a piece of a stage to another agent (inside a "
                      "stage)."),
    "schedules": Entry(("schedules",), "List the schedules, their next times and last fires "
                       "here."),
    "doctor": Entry(("doctor",), "Check this computer: engine, Bees Cloud, links, add-ons."),
    "relinquish": Entry(("handover",), "Stop an item this computer owns and hand it over."),
    "continue": Entry(("handover",), "Continue a relinquished item on this computer."),
    "offers": Entry(("handover",), "List the items handed to pools of runners, and who took "
                    "them."),
    "runners": Entry(("handover",), "List the team's runners: pool, work, last heard."),
    "demo": Entry(("demo",), "Run the model example from a fresh copy to Done, here."),
    "completion": Entry(("completion",), "Print the completion script of a shell."),
    "app": Entry(("app",), "Serve the Bees app: the team's items live in a browser."),
    "help": Entry(("helpcmd",), "Show a command's help, or a topic: json, exit-codes."),
    "item": Entry(_ENGINE, "Work items: create, show, watch, accept, cancel."),
    "schemas": Entry(("workspace",), "JSON Schemas of the workspace files, for editors."),
    "cloud": Entry(("cloud",), "Run Bees Cloud, manage teams and people, check the "
                   "connection."),
    "checkpoint": Entry(("checkpoint",), "Check the checkpoint a run folder carries on a "
                        "handover."),
    "approvals": Entry(_ENGINE, "List what waits for a person's approval on this computer."),
    "model": Entry(("model",), "The embedded demo model, for trying model agents."),
}

PANELS: dict[str, list[str]] = {
    "Work items": ["status", "item", "run", "retry", "app", "action", "delegate"],
    "Approvals": ["approvals", "approve", "deny"],
    "Handover": ["relinquish", "continue", "offers", "runners", "checkpoint"],
    "Schedules": ["schedules"],
    "Workspace": ["init", "validate", "schemas"],
    "This computer": ["doctor", "whoami", "link", "unlink", "links", "addons", "model",
                      "completion"],
    "Bees Cloud": ["login", "logout", "cloud"],
    "Help": ["demo", "help"],
}
"""The panels of ``bees --help``, in order, each with its commands in the order shown; every
command of :data:`COMMANDS` is in exactly one (tests/cli/test_help.py)."""

__all__ = ["COMMANDS", "COMPLETE_VAR", "HELP", "PANELS", "Entry"]

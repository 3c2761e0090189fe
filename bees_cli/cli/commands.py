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
    together, in this order), and the first paragraph of its help, which the root's help and
    shell completion list without importing those modules. (A plain class: ``typing`` is
    not imported on the path of ``bees --help``.)"""

    __slots__ = ("help", "modules")

    def __init__(self, modules: tuple[str, ...], help: str) -> None:
        self.modules = modules
        self.help = help


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
    "approve": Entry(_ENGINE, "Approve what waits on an item (a held action, or its stage's "
                     "finish)."),
    "deny": Entry(_ENGINE, "Deny what waits on an item: the agent's action is refused with the "
                  "reason."),
    "action": Entry(_ENGINE, "Run an add-on action from inside a stage, once the item's run "
                    "allows it."),
    "delegate": Entry(("delegate",), "Hand a piece of this stage to another agent and wait for "
                      "its answer (inside a stage)."),
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
    "offers": Entry(("handover",), "List the items handed to pools of runners (bees "
                    "relinquish ITEM --to POOL): open ones first by age, the secrets each "
                    "names (names only), who claimed it, and why each runner that could not "
                    "run it left it (\"runner-2: ... not linked on this computer\")."),
    "runners": Entry(("handover",), "List the team's runners: each one's pool, what it runs "
                     "and when Bees Cloud last heard it (\"runner-2: silent for 12 min\"); "
                     "nothing moves on its own (an admin may retire one)."),
    "completion": Entry(("completion",), "Print the completion script of SHELL on stdout; "
                        "nothing is installed or edited."),
    "app": Entry(("app",), "Serve the Bees app on loopback until Ctrl-C: the team's items "
                 "live, approvals to read and answer, retry, relinquish and continue, "
                 "schedules and doctor."),
    "item": Entry(_ENGINE, "Work items: create one, show one."),
    "schemas": Entry(("workspace",), "JSON Schemas of the workspace files, for editors."),
    "cloud": Entry(("cloud",), "Bees Cloud: run the server, manage teams and people, check the "
                   "connection."),
    "checkpoint": Entry(("checkpoint",), "Check the checkpoint a run folder carries on a "
                        "handover."),
    "approvals": Entry(_ENGINE, "List what waits for a person's approval on this computer: the "
                       "action and its input, recipients first (each field on its own line: "
                       "bees approvals show ITEM)."),
    "model": Entry(("model",), "The embedded demo model: a tiny local model for trying model "
                   "agents."),
}

__all__ = ["COMMANDS", "COMPLETE_VAR", "HELP", "Entry"]

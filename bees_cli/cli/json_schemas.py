"""The JSON Schema of each command's ``--json`` output, generated into ``schemas/output/``.

Run ``python -m bees_cli.cli.json_schemas [DIR]`` (DIR defaults to ``./schemas/output``,
beside the workspace schemas, STYLE.md habit 6). ``tests/cli/test_json_contract.py`` checks
the committed files are current and that each command's real output validates.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from bees_cli.cli import json_models as m

SCHEMA_FILES: dict[str, type[BaseModel]] = {
    "error.json": m.ErrorOut,
    "whoami.json": m.WhoamiOut,
    "login.json": m.LoginOut,
    "logout.json": m.LogoutOut,
    "link.json": m.LinkOut,
    "unlink.json": m.UnlinkOut,
    "links.json": m.LinksOut,
    "addons.json": m.AddonsOut,
    "init.json": m.InitOut,
    "validate.json": m.ValidateOut,
    "schemas-write.json": m.SchemasWriteOut,
    "status.json": m.StatusOut,
    "item-create.json": m.ItemCreateOut,
    "item-create-error.json": m.ItemCreateErrorOut,
    "item-show.json": m.ItemShowOut,
    "item-show-team.json": m.TeamItemShow,
    "item-watch.json": m.ItemWatchOut,
    "retry.json": m.PersonDoneOut,
    "item-accept.json": m.PersonDoneOut,
    "item-cancel.json": m.CancelOut,
    "approvals.json": m.ApprovalsOut,
    "approve.json": m.DecisionOut,
    "deny.json": m.DecisionOut,
    "schedules.json": m.SchedulesOut,
    "doctor.json": m.DoctorOut,
    "relinquish.json": m.RelinquishOut,
    "relinquish-repair.json": m.RepairOut,
    "continue.json": m.ContinueOut,
    "checkpoint-verify.json": m.VerifyOut,
    "cloud-status.json": m.CloudStatusOut,
    "cloud-person-add.json": m.PersonAddOut,
    "delegate.json": m.DelegateOut,
    "cloud-team-add.json": m.TeamAddOut,
    "cloud-person-revoke.json": m.PersonRevokeOut,
    "app.json": m.AppOut,
    "cloud-admin-runner-add.json": m.RunnerAddOut,
    "offers.json": m.OffersOut,
    "demo.json": m.DemoOut,
    "runners.json": m.RunnersOut,
    "cloud-admin-runner-retire.json": m.RunnerRetireOut,
}
"""File name → the model of the document it describes (``error.json``: any command's error;
a command with two shapes has two files, e.g. ``relinquish-repair.json``)."""

COMMAND_SCHEMAS: dict[str, tuple[str, ...]] = {
    "whoami": ("whoami.json",),
    "login": ("login.json",),
    "logout": ("logout.json",),
    "link": ("link.json",),
    "unlink": ("unlink.json",),
    "links": ("links.json",),
    "addons": ("addons.json",),
    "init": ("init.json",),
    "validate": ("validate.json",),
    "schemas write": ("schemas-write.json",),
    "status": ("status.json",),
    "item create": ("item-create.json", "item-create-error.json"),
    "item show": ("item-show.json", "item-show-team.json"),
    "item watch": ("item-watch.json",),
    "retry": ("retry.json",),
    "item accept": ("item-accept.json",),
    "item cancel": ("item-cancel.json",),
    "approvals": ("approvals.json",),
    "approvals show": ("approvals.json",),
    "approve": ("approve.json",),
    "deny": ("deny.json",),
    "schedules": ("schedules.json",),
    "doctor": ("doctor.json",),
    "relinquish": ("relinquish.json", "relinquish-repair.json"),
    "continue": ("continue.json",),
    "checkpoint verify": ("checkpoint-verify.json",),
    "cloud status": ("cloud-status.json",),
    "cloud person add": ("cloud-person-add.json",),
    "delegate": ("delegate.json",),
    "cloud team add": ("cloud-team-add.json",),
    "cloud person revoke": ("cloud-person-revoke.json",),
    "app": ("app.json",),
    "cloud admin runner add": ("cloud-admin-runner-add.json",),
    "cloud admin runner retire": ("cloud-admin-runner-retire.json",),
    "offers": ("offers.json",),
    "demo": ("demo.json",),
    "runners": ("runners.json",),
}
"""Each leaf command with ``--json`` → the schema files its success output matches (any of
them); its errors match ``error.json``, or the command's own error file when its every
answer carries a key beside ``error`` (``item-create-error.json``: the ``item_id``)."""

NO_JSON: dict[str, str] = {
    "run": "a long-running worker: it prints log lines, not a document",
    "cloud serve": "a long-running server: it prints log lines, not a document",
    "model serve": "a long-running server: it prints its base URL, then log lines",
    "action": "prints the add-on's own output for the agent, and exits with its code",
    "cloud admin-token": "writes a secret to the file named; it prints only where, once",
    "completion": "prints a shell's completion script (issue 15, point 1)",
    "help": "prints help text for people; bees help json says how --json works",
}
"""Each leaf command without ``--json`` → why (a test checks every leaf is in one table)."""


def generate() -> dict[str, str]:
    """Return file name → JSON Schema text (2-space indent, trailing newline)."""
    out: dict[str, str] = {}
    for name, model in SCHEMA_FILES.items():
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                  **model.model_json_schema(by_alias=True, mode="serialization")}
        # every document carries its version, though the model gives it a default; a
        # document of several kinds (item-watch.json) is one of its $defs
        documents = [schema] if "required" in schema else [
            schema["$defs"][one["$ref"].rsplit("/", 1)[1]] for one in schema["oneOf"]]
        for document in documents:
            document["required"] = ["version",
                                    *(n for n in document["required"] if n != "version")]
        out[name] = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    return out


def main(argv: list[str]) -> None:
    """Write every output schema into ``argv[0]`` (default ``schemas/output``)."""
    folder = Path(argv[0] if argv else "schemas/output")
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in generate().items():
        (folder / name).write_text(text, encoding="utf-8")
        print(folder / name)


if __name__ == "__main__":
    main(sys.argv[1:])

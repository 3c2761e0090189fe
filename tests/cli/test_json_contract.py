"""One JSON contract (issue 15, point 2): every leaf command that prints data or changes state
has ``--json``; each output is a versioned object that validates against its generated schema
in ``schemas/output/``; errors are ``{"version", "error": {"code", "message", "hint"}}``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bees_cli.cli import main
from bees_cli.cli.json_schemas import COMMAND_SCHEMAS, NO_JSON, SCHEMA_FILES, generate
from bees_cli.cloud.server.storage import Storage
from bees_cli.handover.continue_ import Continued
from bees_cli.handover.relinquish import Relinquished
from bees_cli.handover.repair import Repaired
from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord
from bees_cli.usecases.bees import Bees
from bees_cli.usecases.models import PersonDone, TeamItemDetails
from tests.cli.conftest import InProcess, Ran
from tests.conftest import EXAMPLE, REPO
from tests.handover.helpers import make_run, write

OUTPUT_SCHEMAS = REPO / "schemas" / "output"
ITEM = "01JH3QX5Z8KZ2W4M6N8P0R2T4V"
WAITING_FOR_RUN = "waiting: the engine is not running (bees run)"
UTC_TIME = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"
"""Every time in a ``--json`` document: RFC 3339 UTC to whole seconds (issue 15, point 2)."""
TIME_LIKE = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
WALL_CLOCK_KEYS = frozenset({"local", "local_time"})
"""Keys whose value is a wall-clock time in a schedule's own zone (no offset), not an instant."""


def time_fields(node: Any, path: str = "") -> dict[str, list[str]]:
    """Return every time-valued field of a document: its path (``items[].since``) → values.

    A field is time-valued when its text starts as a date and time do; wall-clock times
    (:data:`WALL_CLOCK_KEYS`) are not instants and are left out."""
    found: dict[str, list[str]] = {}
    if isinstance(node, list):
        for value in node:
            for key, values in time_fields(value, f"{path}[]").items():
                found.setdefault(key, []).extend(values)
    elif isinstance(node, dict):
        for name, value in node.items():
            if name in WALL_CLOCK_KEYS:
                continue
            for key, values in time_fields(value, f"{path}.{name}".lstrip(".")).items():
                found.setdefault(key, []).extend(values)
    elif isinstance(node, str) and TIME_LIKE.match(node):
        found[path] = [node]
    return found


def leaf_commands() -> dict[str, set[str]]:
    """Return each leaf command (``item show``) → its options' spellings."""
    found: dict[str, set[str]] = {}

    def walk(command: Any, path: tuple[str, ...]) -> None:
        if hasattr(command, "commands"):
            if command.invoke_without_command:  # a group that lists by itself: `approvals`
                found[" ".join(path)] = {o for p in command.params
                                         for o in getattr(p, "opts", [])}
            for name, sub in command.commands.items():
                walk(sub, (*path, name))
            return
        found[" ".join(path)] = {o for p in command.params for o in getattr(p, "opts", [])}

    walk(main.whole_command(), ())
    return found


def schema(name: str) -> dict[str, Any]:
    return dict(json.loads((OUTPUT_SCHEMAS / name).read_text("utf-8")))


def matches(command: str, doc: Any) -> str:
    """Return the schema file ``doc`` validates against (``error.json`` for an error), or
    fail naming every reason."""
    assert isinstance(doc, dict) and doc.get("version") == 1, doc
    wrong = {path: values for path, values in time_fields(doc).items()
             if not all(re.match(UTC_TIME, v) for v in values)}
    assert wrong == {}, f"{command}: times not as YYYY-MM-DDTHH:MM:SSZ: {wrong}"
    names = ("error.json",) if sorted(doc) == ["error", "version"] else COMMAND_SCHEMAS[command]
    reasons = []
    for name in names:
        errors = list(jsonschema.Draft202012Validator(schema(name)).iter_errors(doc))
        if not errors:
            return name
        reasons += [f"{name}: {e.message}" for e in errors]
    raise AssertionError(f"{command}: {reasons}")


def test_output_schema_files_are_current() -> None:
    on_disk = {p.name: p.read_text("utf-8") for p in OUTPUT_SCHEMAS.glob("*.json")}
    assert on_disk == generate(), "run: python -m bees_cli.cli.json_schemas"
    # Every file is a valid 2020-12 schema. The meta-schema checks each subschema on its own
    # (each ``$defs`` entry against the whole meta-schema, through ``$dynamicRef: "#meta"``),
    # so a file is valid exactly when its top (``$defs`` aside) and each definition are: a
    # definition the same in several files is checked once, named where it is first.
    definitions: dict[str, dict[str, Any]] = {}
    for name in SCHEMA_FILES:
        top = schema(name)
        for key, definition in top.pop("$defs", {}).items():
            definitions.setdefault(json.dumps(definition, sort_keys=True),
                                   {"where": f"{name}#/$defs/{key}", "schema": definition})
        jsonschema.Draft202012Validator.check_schema(top)
    jsonschema.Draft202012Validator.check_schema(
        {"$defs": {one["where"]: one["schema"] for one in definitions.values()}})


def property_names(node: Any) -> set[str]:
    """Every property name declared anywhere in a JSON Schema."""
    if isinstance(node, list):
        return set().union(*(property_names(n) for n in node))
    if not isinstance(node, dict):
        return set()
    own = set(node.get("properties", {})) if isinstance(node.get("properties"), dict) else set()
    return own.union(*(property_names(v) for v in node.values()))


def test_no_document_holds_the_text_views_display_strings() -> None:
    """Issue 15, point 2: machine values only; the text view words ``status_text``,
    ``since_human``, approvals' ``what`` and each doctor check's ``detail``."""
    display = {"status_text", "since_human", "what", "detail"}
    found = {name: property_names(schema(name)) & display for name in SCHEMA_FILES}
    # schedules' ``detail`` is a fire's machine value (the item, the computer, seconds late)
    assert {name: names for name, names in found.items() if names} == {
        "schedules.json": {"detail"}}


def test_every_leaf_command_has_json_or_says_why_not() -> None:
    leaves = leaf_commands()
    with_json = {name for name, opts in leaves.items() if "--json" in opts}
    assert with_json == set(COMMAND_SCHEMAS)
    assert set(leaves) - with_json == set(NO_JSON) & set(leaves)
    assert set(NO_JSON) - set(leaves) <= {"completion"}


@pytest.fixture
def workspace(run_bees: InProcess, tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    assert run_bees("init", str(root)).code == 0
    return root


def test_each_command_prints_what_its_schema_says(run_bees: InProcess, workspace: Path,
                                                  tmp_path: Path) -> None:
    seen: dict[str, set[str]] = {}
    times: set[str] = set()

    def check(command: str, *argv: str, code: int = 0) -> Any:
        done: Ran = run_bees(*command.split(), *argv, "--json")
        assert (done.code, done.raised) == (code, None), (command, done.stdout, done.stderr)
        doc = done.json()
        seen.setdefault(command, set()).add(matches(command, doc))
        times.update(f"{command}: {path}" for path in time_fields(doc))
        return doc

    ws = ("-w", str(workspace))
    assert check("init", str(tmp_path / "other"))["files"][0].startswith(str(tmp_path))
    assert check("validate", str(workspace))["counts"]["processes"] == 1
    assert check("schemas write", str(tmp_path / "schemas"))["files"]
    assert check("whoami")["person"] is None
    assert check("logout") == {"version": 1, "signed_out": False}
    assert check("login", "http://127.0.0.1:9", "--token", "t0k", "--no-check") == {
        "version": 1, "url": "http://127.0.0.1:9", "checked": False, "person": None,
        "team": None, "person_before": None, "person_changed": False}
    assert check("login", "http://127.0.0.1:9", "--token", " ", "--no-check",
                 code=2)["error"]["code"] == "usage"
    assert check("logout") == {"version": 1, "signed_out": True}
    notes = tmp_path / "notes"
    notes.mkdir()
    assert check("link", "notes", str(notes), *ws) == {
        "version": 1, "folder": "notes", "path": str(notes)}
    assert check("links", *ws)["folders"][0]["linked"] is True
    assert check("unlink", "notes") == {"version": 1, "folder": "notes"}
    assert check("addons", *ws) == {"version": 1, "addons": []}
    created = check("item create", "draft-review", *ws)
    item = created["item_id"]
    assert (created["started"], created["final"]) == (False, None)
    [row] = check("status")["items"]
    assert (row["item_id"], row["status"], row["team"]) == (item, "pending", False)
    assert "id" not in row and "since_human" not in row
    shown = check("item show", item)
    assert shown["item"]["item_id"] == item and "since_human" not in shown

    record = LocalRecord(Computer.load().record_path)
    for request in (1, 2):
        record.put_approval(item, {
            "id": request, "item_id": item, "stage": "Draft", "round": 1,
            "action": "mail.send", "kind": "send", "summary": "to maya", "input": "{}",
            "status": "waiting", "asked_at": "2026-12-01T08:00:00.250000Z"})
    waiting = check("approvals")["approvals"]
    assert [(a["request_id"], a["item_id"], a["asked_at"]) for a in waiting] == [
        (1, item, "2026-12-01T08:00:00Z"), (2, item, "2026-12-01T08:00:00Z")]
    assert check("approvals show", item, "--action", "2")["approvals"] == waiting[1:]
    assert [a["asked_at"] for a in check("item show", item)["approvals"]] == [
        "2026-12-01T08:00:00Z", "2026-12-01T08:00:00Z"]
    approved = check("approve", item, "--action", "1")
    assert (approved["decision"], approved["queued"]) == ("approved", True)
    assert check("deny", item, "--action", "2", "--reason", "no")["decision"] == "denied"

    fires = check("schedules", "-w", str(EXAMPLE))["schedules"]
    assert all(len(s["next"]) == 3 for s in fires)
    check("doctor", *ws, code=1)
    assert check("item cancel", item) == {
        "version": 1, "item_id": item, "requested": False, "cancelled": True}
    assert check("cloud status", code=2)["error"]["code"] == "usage"
    folder = make_run(tmp_path / "run")
    assert check("checkpoint verify", str(folder), code=3)["error"]["code"] == \
        "checkpoint_invalid"
    info = write(folder)
    assert check("checkpoint verify", str(folder))["sha256"] == info.sha256
    assert check("item show", "01ZZZZZZ", code=1)["error"]["code"] == "not_found"
    assert check("retry", ITEM, code=1)["error"]["code"] == "not_found"
    assert check("item accept", ITEM, code=1)["error"]["code"] == "not_found"
    assert check("relinquish", ITEM, code=1)["error"]["code"] == "not_found"
    assert check("continue", ITEM, "--digest", "x", code=2)["error"]["code"] == "usage"
    assert check("cloud person add", "maya@example.com", "--team", "acme", "--db", "x",
                 code=2)["error"]["code"] == "usage"
    db = f"sqlite:///{tmp_path / 'cloud.db'}"
    Storage(db).close()  # an admin command never creates the database: the server's start does
    team = check("cloud team add", "acme", "--db", db)
    assert (team["team"], team["created"], team["database"]) == ("acme", True, db)
    added = check("cloud person add", "Maya@example.com", "--team", "acme", "--db", db)
    assert (added["email"], added["team"]) == ("maya@example.com", "acme")
    revoked = check("cloud person revoke", "maya@example.com", "--team", "acme", "--db", db)
    assert (revoked["email"], revoked["revoked"]) == ("maya@example.com", 1)
    runner = check("cloud admin runner add", "runner-1", "--pool", "build", "--team", "acme",
                   "--db", db)
    assert (runner["name"], runner["pool"], runner["team"]) == ("runner-1", "build", "acme")
    retired = check("cloud admin runner retire", "runner-1", "--team", "acme", "--db", db)
    assert (retired["name"], retired["revoked"], retired["offered"]) == ("runner-1", 1, [])
    # their successes need a run or a server: test_a_use_case_result_prints_as_its_schema_says
    # and tests/cloud/test_cli.py check them against the same schemas; bees app serves until
    # a signal: tests/app/test_command.py checks its line; bees offers needs a cloud:
    # tests/engine/test_runners_e2e.py checks it, bees runners too: tests/runners/test_vouch.py;
    # bees demo runs an item through an engine: tests/engine/test_demo.py checks its summary;
    # bees item watch prints a document per line: tests/engine/test_watch.py checks each
    unseen = {c for c in COMMAND_SCHEMAS if COMMAND_SCHEMAS[c][0] not in seen.get(c, ())}
    assert unseen == {"retry", "item accept", "relinquish", "continue", "cloud status",
                      "delegate", "app", "offers", "runners", "demo", "item watch"}
    # every time-valued field checked by `matches` (a time with microseconds fails it)
    assert times == {
        "status: items[].since", "status: items[].created", "item show: item.since",
        "item show: item.created", "item show: history[].at", "approvals: approvals[].asked_at",
        "approvals show: approvals[].asked_at",
        "item show: approvals[].asked_at", "approve: at", "deny: at",
        "schedules: schedules[].next[]", "cloud admin runner retire: retired_at"}


def _canned(monkeypatch: pytest.MonkeyPatch, method: str, result: object) -> None:
    async def answer(self: Bees, *args: object, **kwargs: object) -> object:
        return result

    def blocking(self: Bees, *args: object, **kwargs: object) -> object:
        return result

    # a use case the CLI calls without an event loop has a blocking method (``…_now``)
    monkeypatch.setattr(Bees, method, blocking if method.endswith("_now") else answer)


@pytest.mark.parametrize(("argv", "method", "result", "want"), [
    (("retry", ITEM), "retry",
     PersonDone(item=ITEM, stage="Draft", who="maya", at="2026-12-01T08:00:00Z"),
     {"item_id": ITEM, "stage": "Draft", "who": "maya", "at": "2026-12-01T08:00:00Z"}),
    (("item", "accept", ITEM), "accept",
     PersonDone(item=ITEM, stage="Review", who="maya", at="2026-12-01T08:00:00.5+00:00"),
     {"item_id": ITEM, "stage": "Review", "who": "maya", "at": "2026-12-01T08:00:00Z"}),
    (("relinquish", ITEM), "relinquish",
     Relinquished(item=ITEM, stage="Draft", restart_stages={"main": "Draft"},
                  checkpoint="/r/checkpoint.json", checkpoint_sha256="ab" * 32, files=3,
                  total_bytes=43, released=False),
     {"item_id": ITEM, "stage": "Draft", "restart_stages": {"main": "Draft"},
      "checkpoint": "/r/checkpoint.json", "checkpoint_sha256": "ab" * 32, "files": 3,
      "total_bytes": 43, "released": False, "offer": None}),
    (("relinquish", ITEM, "--repair"), "repair_release",
     Repaired(item=ITEM, checkpoint="/r/checkpoint.json", checkpoint_sha256="ab" * 32,
              before=None, restart_stages={"main": "Draft"}, released=True),
     {"item_id": ITEM, "checkpoint": "/r/checkpoint.json", "checkpoint_sha256": "ab" * 32,
      "before": None, "restart_stages": {"main": "Draft"}, "released": True,
      "changed": True}),
    (("continue", ITEM, "--digest", "ab" * 32), "continue_item",
     Continued(item=ITEM, run_folder="/r", stage="Draft", checkpoint_sha256="ab" * 32,
               journal=0, run=2, started=False),
     {"item_id": ITEM, "run_folder": "/r", "stage": "Draft", "checkpoint_sha256": "ab" * 32,
      "journal": 0, "run": 2, "started": False}),
    (("item", "show", ITEM), "item_details_now",
     TeamItemDetails(id=ITEM, process="p", title="Week 2", stage="Draft", status="running",
                     status_text="Draft, running on maya-desktop", computer="maya-desktop",
                     person="maya@example.com", agent="writer", since="2026-12-01T08:00:00Z"),
     {"item_id": ITEM, "process": "p", "title": "Week 2", "stage": "Draft",
      "status": "running", "computer": "maya-desktop", "person": "maya@example.com",
      "agent": "writer",
      "since": "2026-12-01T08:00:00Z", "team": True}),
], ids=["retry", "accept", "relinquish", "repair", "continue", "team-item-show"])
def test_a_use_case_result_prints_as_its_schema_says(
        run_bees: InProcess, monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...],
        method: str, result: object, want: dict[str, Any]) -> None:
    _canned(monkeypatch, method, result)
    done = run_bees(*argv, "--json")
    assert (done.code, done.raised) == (0, None), done.stderr
    assert done.json() == {"version": 1, **want}
    command = " ".join(a for a in argv[:2] if not a.startswith(("0", "-")))
    matches(command, done.json())


def test_relinquish_to_a_pool_json_carries_the_offer(
        run_bees: InProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    from bees_cli.cloud import wire
    from bees_cli.utc import parse_utc

    done = Relinquished(item=ITEM, stage="Draft", restart_stages={"main": "Draft"},
                        checkpoint="/r/checkpoint.json", checkpoint_sha256="ab" * 32, files=3,
                        total_bytes=43, released=True)
    _canned(monkeypatch, "relinquish", done)
    offer = wire.Offer(item_id=ITEM, epoch=1, pool="build", secrets=["MAIL_TOKEN"],
                       offered_at=parse_utc("2026-12-02T09:30:00Z"),
                       offered_by="maya@example.com", open=True)
    monkeypatch.setattr(Bees, "offer_to_pool", lambda self, given, pool: offer)
    ran = run_bees("relinquish", ITEM, "--to", "build", "--json")
    assert (ran.code, ran.raised) == (0, None), ran.stderr
    assert ran.json()["offer"] == {
        "item_id": ITEM, "epoch": 1, "pool": "build", "secrets": ["MAIL_TOKEN"],
        "offered_at": "2026-12-02T09:30:00Z", "offered_by": "maya@example.com", "open": True,
        "claimed_at": None, "claimed_by": None, "notes": []}
    matches("relinquish", ran.json())


def test_item_create_wait_json_prints_the_final_state_once(
        run_bees: InProcess, monkeypatch: pytest.MonkeyPatch, workspace: Path) -> None:
    async def failed(self: Bees, item_id: str, **_: object) -> int:
        self.record.set_state(item_id, status="failed", stage="Draft", reason="exit 1")
        return 1

    monkeypatch.setattr(Bees, "wait_for_item", failed)
    done = run_bees("item", "create", "draft-review", "-w", str(workspace), "--wait", "--json")
    assert (done.code, done.raised) == (1, None), done.stderr
    doc = done.json()
    assert matches("item create", doc) == "item-create.json"
    final = doc["final"]
    assert (final["item_id"], final["status"], final["reason"]) == (
        doc["item_id"], "failed", "exit 1")
    assert "id" not in final
    assert re.match(UTC_TIME, final["since"]) and re.match(UTC_TIME, final["created"])


def test_a_parse_refusal_and_a_refusal_are_the_same_error_shape(run_bees: InProcess) -> None:
    bad = run_bees("item", "show", "../x", "--json")
    assert (bad.code, bad.stderr) == (2, "")
    assert sorted(bad.json()) == ["error", "version"]
    assert sorted(bad.json()["error"]) == ["code", "hint", "message"]
    matches("item show", bad.json())


@pytest.mark.parametrize(("argv", "message"), [
    (("deny", ITEM, "--json"), "Missing option '--reason'."),
    (("status", "--json", "--nosuch"), "No such option: --nosuch"),
])
def test_a_usage_error_with_json_is_a_json_error_too(run_bees: InProcess,
                                                     argv: tuple[str, ...], message: str) -> None:
    done = run_bees(*argv)
    assert (done.code, done.raised, done.stderr) == (2, None, "")
    hint = f"see bees {' '.join(a for a in argv[:1])} -h"
    assert done.json() == {"version": 1, "error": {"code": "usage", "message": message,
                                                   "hint": hint}}
    matches(argv[0], done.json())
    assert run_bees(*(a for a in argv if a != "--json")).stderr.startswith("Usage: bees ")


def test_item_create_wait_timeout_names_the_item_and_its_last_state(
        run_bees: InProcess, workspace: Path) -> None:
    """A timed-out ``--wait`` is the error ``timed_out`` (exit 1) carrying the item id and
    the state last seen, in JSON and in text (with the hint ``bees item show ID``)."""
    argv = ("item", "create", "draft-review", "-w", str(workspace), "--wait", "--timeout", "0")
    done = run_bees(*argv, "--json")
    assert (done.code, done.raised) == (1, None), done.stderr
    doc = done.json()
    assert matches("item create", doc) == "item-create-error.json"
    item = doc["item_id"]  # issue 23, point 8: where docs/ci.md's `jq -r .item_id` reads it
    assert doc == {"version": 1, "item_id": item, "error": {
        "code": "timed_out", "item_id": item, "item_status": "pending", "stage": "Draft",
        "message": f"timed out after 0 s waiting for {item} (status: {WAITING_FOR_RUN})",
        "hint": f"bees item show {item}"}}
    assert [row.id for row in LocalRecord(Computer.load().record_path).items()] == [item]
    text = run_bees(*argv)
    assert (text.code, text.raised) == (1, None)
    item = text.stdout.strip()
    assert text.stderr.splitlines()[-2:] == [
        f"error: timed out after 0 s waiting for {item} (status: {WAITING_FOR_RUN})",
        f"hint: bees item show {item}"]


def test_every_answer_of_item_create_has_the_item_id_at_the_top(
        run_bees: InProcess, workspace: Path) -> None:
    """Issue 23, point 8: success or not, ``item create --json`` answers with ``item_id`` at
    the top level: the item's id once it was made, null when no item was made."""
    made = run_bees("item", "create", "draft-review", "-w", str(workspace), "--json")
    assert (made.code, matches("item create", made.json())) == (0, "item-create.json")
    unknown = run_bees("item", "create", "nope", "-w", str(workspace), "--json")
    assert (unknown.code, unknown.raised) == (1, None)
    assert unknown.json() == {"version": 1, "item_id": None, "error": {
        "code": "not_found", "message": "no process named 'nope' in the workspace",
        "hint": "declared processes: draft-review"}}
    assert matches("item create", unknown.json()) == "item-create-error.json"
    refused = run_bees("item", "create", "draft-review", "--timeout", "1", "--json")
    assert (refused.code, refused.json()["item_id"]) == (2, None)


MAIL_BODY = "Dear team,\nthe numbers are up.\n" + "More of the same. " * 300
"""A mail body longer than what a request kept of its input (4,000 characters)."""


def test_approvals_show_each_input_field_recipients_first_and_json_gives_the_object(
        run_bees: InProcess, workspace: Path) -> None:
    """Issue 23, point 8: ``bees approvals show ITEM`` gives each field of a held action's
    input on its own line, recipients first and nothing cut; ``--json`` gives ``input`` as
    the object itself, in ``bees approvals`` too."""
    from bees_cli.usecases.actions import kept_input

    item = run_bees("item", "create", "draft-review", "-w", str(workspace)).stdout.strip()
    mail = {"subject": "Weekly report", "body": MAIL_BODY, "to": "wrong@example.org",
            "cc": ["maya@example.com"]}
    record = LocalRecord(Computer.load().record_path)
    record.put_approval(item, {
        "id": 1, "item_id": item, "stage": "Draft", "round": 1, "action": "mail.send",
        "kind": "send", "summary": "{…}", "input": kept_input(mail), "status": "waiting",
        "asked_at": "2026-12-01T08:00:00Z"})
    listed = run_bees("approvals", "--json")
    assert listed.code == 0 and matches("approvals", listed.json()) == "approvals.json"
    [waiting] = listed.json()["approvals"]
    assert waiting["input"] == mail
    shown = run_bees("approvals", "show", item[:8], "--json")
    assert (shown.code, shown.json()) == (0, listed.json())
    assert matches("approvals show", shown.json()) == "approvals.json"
    text = run_bees("approvals", "show", item[:8])
    assert (text.code, text.raised) == (0, None), text.stderr
    lines = text.stdout.splitlines()
    assert lines[:7] == [
        f"item      {item}  Draft and review",
        "request   1",
        "stage     Draft (round 1)",
        "action    mail.send (send)",
        "asked     2026-12-01T08:00:00Z",
        "input",
        "  to       wrong@example.org"]
    assert lines[7:10] == [
        '  cc       ["maya@example.com"]',
        "  subject  Weekly report",
        "  body     Dear team,"]
    assert lines[10:] == [
        "           the numbers are up.",
        "           " + ("More of the same. " * 300).rstrip(),
        f"decide    bees approve {item} --action 1  |  "
        f'bees deny {item} --action 1 --reason "…"']
    nothing = run_bees("approvals", "show", item, "--action", "2")
    assert (nothing.code, nothing.stderr.splitlines()[0]) == (
        1, f"error: request 2 of item {item} does not wait for approval (waiting: 1)")


def test_doctor_gives_why_a_process_cannot_run_as_codes_and_words_them_in_text(
        run_bees: InProcess, workspace: Path) -> None:
    """Issue 15, point 2: ``processes[].reasons`` are machine values (a code and its values);
    the text view words them."""
    shutil.rmtree(workspace / "notes")
    for agent in ("writer", "reviewer"):
        path = workspace / "agents" / f"{agent}.yaml"
        path.write_text(path.read_text().replace("enabled: true", "enabled: false"))
    done = run_bees("doctor", "-w", str(workspace), "--json")
    assert (done.code, done.raised) == (1, None), done.stderr
    matches("doctor", done.json())
    assert done.json()["processes"] == [{
        "process": "draft-review", "stage": "Draft", "can_run": False, "reasons": [
            {"code": "folder_not_linked", "folder": "notes", "skipped": []},
            {"code": "no_agent", "folder": None, "skipped": [
                {"agent": "writer", "why": "disabled", "addons": []},
                {"agent": "reviewer", "why": "disabled", "addons": []}]}]}]
    [notes] = [c for c in done.json()["checks"] if c["check"] == "folder notes"]
    assert (notes["ok"], notes["link"], notes["path"]) == (
        False, "default_not_dir", str(workspace / "notes"))
    text = run_bees("doctor", "-w", str(workspace))
    assert text.stdout.splitlines()[-1] == (
        f"no    process draft-review: cannot run here now: folder notes: default path "
        f"{notes['path']} is not an existing directory; no enabled agent for Draft: writer "
        "disabled; reviewer disabled")


@pytest.mark.parametrize(("person", "why_not", "words"), [
    (None, "no_person", "no: no person signed in here (bees whoami --set-person EMAIL)"),
    ("sam@example.com", "not_owner", "no: owned by maya@example.com"),
])
def test_schedules_say_why_not_here_as_a_code_and_the_text_words_it(
        run_bees: InProcess, person: str | None, why_not: str, words: str) -> None:
    if person is not None:
        assert run_bees("whoami", "--set-person", person).code == 0
    done = run_bees("schedules", "-w", str(EXAMPLE), "--json")
    assert (done.code, matches("schedules", done.json())) == (0, "schedules.json")
    [row] = done.json()["schedules"]
    assert (row["fires_here"], row["why_not"], row["warnings"]) == (False, why_not, [])
    assert f"  {words}  " in run_bees("schedules", "-w", str(EXAMPLE)).stdout


def test_a_pick_reason_is_its_tier_in_json() -> None:
    """``pick_reason`` in ``--json`` (item show's pieces, delegate) is the tier of agent
    choice; the text view words it."""
    from bees_cli.agents.selection import pick_tier, pick_words
    from bees_cli.cli.json_models import DelegateOut

    stored = ["named on the item", "stage agents of weekly-report.Draft", "workspace default",
              "first enabled agent by name", "named by the caller",
              "no enabled agent for a piece of Draft: beta disabled", None]
    assert [pick_tier(r) for r in stored] == [
        "item", "stage", "default", "by_name", "caller", "none", None]
    assert [pick_words(pick_tier(r)) for r in stored] == [
        "named on the item", "the stage's agents", "workspace default",
        "first enabled agent by name", "named by the caller", "no enabled agent",
        "not picked yet"]
    out = DelegateOut(piece="r1-a1-p1", agent="beta", pick_reason="named by the caller",
                      status="finished", text="ok", files=[], folder="/r")
    assert out.to_json()["pick_reason"] == "caller"


def test_item_show_gives_a_pieces_pick_reason_as_its_tier_and_its_times_to_seconds() -> None:
    from bees_cli.cli.json_models import ItemShowOut
    from bees_cli.record.pieces import Piece
    from bees_cli.record.views import piece_tree

    piece = Piece(item_id=ITEM, piece="r1-a1-p1", stage="Draft", seq=1, named="beta",
                  agent="beta", pick_reason="named by the caller", task="t", ask_digest="d",
                  workflow_id="w", folder="/r", started="2026-12-01T08:00:00.250000Z")
    item = {"item_id": ITEM, "process": "p", "title": "t", "workspace": "/w", "run_folder": "/r",
            "stage": "Draft", "status": "running", "reason": None, "wait": None,
            "agent": "alpha", "since": "2026-12-01T08:00:00Z",
            "created": "2026-12-01T08:00:00Z", "created_on": "laptop"}
    shown = ItemShowOut.model_validate({
        "item": item, "history": [], "logs": [], "engine_log": "/e", "journal": [],
        "approvals": [], "pieces": [piece.model_dump(mode="json")]})
    [out] = shown.to_json()["pieces"]
    assert (out["pick_reason"], out["started"]) == ("caller", "2026-12-01T08:00:00Z")
    assert piece_tree(shown.pieces)[1].startswith("    r1-a1-p1  beta (named by the caller)  ")


def test_status_json_gives_its_warnings_as_codes_and_values(run_bees: InProcess) -> None:
    """``bees status --json``'s ``warnings`` are machine values; the text view words them."""
    from bees_cli.record.sync import SharedRecord

    SharedRecord(Computer.load().record_path).set_meta(
        skew="-412.000", last_sync="2025-01-06T09:00:00.250000Z",
        error="cannot reach Bees Cloud at http://127.0.0.1:9", error_code="cloud_unreachable")
    done = run_bees("status", "--json")
    assert (done.code, matches("status", done.json())) == (0, "status.json")
    none = {"pid": None, "skew_seconds": None, "refused": None, "items": [],
            "offset_seconds": None, "owner": None, "last_sync": None, "error": None}
    assert done.json()["warnings"] == [
        {**none, "code": "clock_skew", "skew_seconds": -412.0},
        {**none, "code": "team_rows_stale", "last_sync": "2025-01-06T09:00:00Z",
         "error": "cloud_unreachable"}]
    text = run_bees("status").stderr.splitlines()
    assert text[0] == ("warning: this computer's clock is 412.0 s ahead of Bees Cloud's; the "
                       "shared record trusts each computer's clock (fix the system clock)")
    assert text[1].startswith("team rows as of ") and text[1].endswith(
        " days ago: Bees Cloud unreachable")


def test_approvals_show_offers_ran_or_again_for_an_action_that_may_already_have_run(
        run_bees: InProcess, workspace: Path) -> None:
    """A request interrupted between its intent and its result cannot be answered by a plain
    ``bees approve`` (it asks --ran or --again), so the decide line offers those two."""
    from bees_cli.usecases.actions import kept_input

    item = run_bees("item", "create", "draft-review", "-w", str(workspace)).stdout.strip()
    record = LocalRecord(Computer.load().record_path)
    record.put_approval(item, {
        "id": 1, "item_id": item, "stage": "Draft", "round": 1, "action": "mail.send",
        "kind": "send", "summary": "{…}", "input": kept_input({"to": "a@example.org"}),
        "status": "waiting", "asked_at": "2026-12-01T08:00:00Z",
        "interrupted_at": "2026-12-01T08:01:00Z"})
    text = run_bees("approvals", "show", item)
    assert (text.code, text.stdout.splitlines()[-4:]) == (0, [
        "note      may already have run (interrupted at 2026-12-01T08:01:00Z): approve with "
        "--ran (it ran) or --again (run it once more)",
        "input",
        "  to  a@example.org",
        f"decide    bees approve {item} --action 1 --ran  |  "
        f"bees approve {item} --action 1 --again  |  "
        f'bees deny {item} --action 1 --reason "…"'])


def test_the_package_names_each_model_once_and_reads_it_from_its_module() -> None:
    """``json_models`` imports a group's module when one of its names is first read: every
    name of ``__all__`` is in exactly one group, resolves to that module's object, and an
    unknown name is an AttributeError."""
    import importlib

    from bees_cli.cli import json_models

    homes = json_models._HOMES
    named = [name for names in homes.values() for name in names]
    assert sorted(named) == sorted(json_models.__all__)
    assert len(named) == len(set(named))
    for module, names in homes.items():
        full = module if "." in module else f"bees_cli.cli.json_models.{module}"
        for name in names:
            assert getattr(json_models, name) is getattr(importlib.import_module(full), name)
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchOut'"):
        _ = json_models.NoSuchOut  # type: ignore[attr-defined]

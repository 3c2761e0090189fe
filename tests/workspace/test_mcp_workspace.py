"""An MCP add-on in a workspace (issue 25): agents name its tools without a declared action,
and ``bees validate`` lists each named tool with the kind known without the server."""

from __future__ import annotations

import json
from pathlib import Path

from bees_cli.workspace.loader import load_workspace
from bees_cli.workspace.summary import ToolKind, declared_tool_kinds
from tests.conftest import BeesRunner


def notes_workspace(root: Path) -> Path:
    root.mkdir()
    (root / "bees.yaml").write_text("name: notes\n")
    for relative, text in {
        "addons/notes.yaml": "mcp:\n  command: [notes-server]\n  env: [NOTES_LOG]\n"
                             "kinds:\n  send_email: send\n  search: read\n",
        "agents/clerk.yaml": "tools: [notes.search, notes.send_email, notes.close_issue]\n"
                             "runner:\n  command: [clerk]\n",
        "agents/idle.yaml": "enabled: false\ntools: [notes.archive]\nrunner:\n  command: [x]\n",
        "processes/p.yaml": "stages:\n  - {name: Work, kind: work, agents: [clerk], "
                            "approval: required}\n"
                            "  - {name: Done, kind: done}\n",
    }.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def test_agents_name_any_tool_of_an_mcp_addon_and_each_has_a_kind(tmp_path: Path) -> None:
    workspace = load_workspace(notes_workspace(tmp_path / "w"))
    assert workspace.agents["clerk"].tools == [
        "notes.search", "notes.send_email", "notes.close_issue"]
    assert declared_tool_kinds(workspace) == [
        ToolKind("notes", "close_issue", "gated", "undeclared"),
        ToolKind("notes", "search", "read", "declared"),
        ToolKind("notes", "send_email", "send", "declared"),
    ]


def test_validate_lists_each_named_tool_with_its_kind_and_why(
        tmp_path: Path, bees: BeesRunner) -> None:
    root = notes_workspace(tmp_path / "w")
    done = bees("validate", str(root))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "ok: 1 process, 2 agents, 0 schedules, 0 folders, 1 add-on",
        "add-on notes: close_issue gated (not declared: gated unless the server marks it "
        "read-only)",
        "add-on notes: search read (declared)",
        "add-on notes: send_email send (declared)",
    ]
    listed = json.loads(bees("validate", str(root), "--json").stdout)["tools"]
    assert listed == [
        {"addon": "notes", "tool": "close_issue", "kind": "gated", "why": "undeclared"},
        {"addon": "notes", "tool": "search", "kind": "read", "why": "declared"},
        {"addon": "notes", "tool": "send_email", "kind": "send", "why": "declared"}]


def test_a_script_addon_dumps_as_before_and_an_mcp_one_reloads() -> None:
    """A stored snapshot is found by the digest of its JSON: a script add-on's dump keeps its
    keys (no ``mcp: null``), and an MCP add-on's dump (no ``actions: {}``) loads again."""
    from bees_cli.workspace.models import Addon

    script = Addon.model_validate({"actions": {"send": {"kind": "send", "command": ["x"]}}})
    assert list(script.model_dump(mode="json")) == ["description", "actions", "connection"]
    server = Addon.model_validate({"mcp": {"url": "https://notes.example.com/mcp"},
                                   "kinds": {"send_email": "send"}})
    dumped = server.model_dump(mode="json")
    assert list(dumped) == ["description", "mcp", "kinds", "connection"]
    assert Addon.model_validate(dumped) == server

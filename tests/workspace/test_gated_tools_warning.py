"""``bees validate`` warns when an agent holding a send, post, delete or pay tool runs on a stage
without ``approval: required`` (issue 25, point 5: no side doors)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import BeesRunner


def mail_workspace(root: Path, approval: str) -> Path:
    root.mkdir()
    (root / "bees.yaml").write_text("name: mail\ndefault_agent: sender\n")
    for relative, text in {
        "addons/mail.yaml": "actions:\n  send: {kind: send, command: [send]}\n"
                            "  list: {kind: read, command: [list]}\n",
        "addons/notes.yaml": "mcp:\n  command: [notes-server]\nkinds:\n  pay_invoice: pay\n"
                             "  search: read\n",
        "agents/sender.yaml": "tools: [mail.send, mail.list]\nrunner:\n  command: [s]\n",
        "agents/clerk.yaml": "tools: [notes.search, notes.pay_invoice, notes.other]\n"
                             "runner:\n  command: [c]\n",
        "agents/reader.yaml": "tools: [mail.list, notes.search]\nrunner:\n  command: [r]\n",
        "processes/p.yaml": "stages:\n"
                            f"  - {{name: Draft, kind: work, agents: [reader, clerk]}}\n"
                            f"  - {{name: Send, kind: work, approval: {approval}}}\n"
                            "  - {name: Done, kind: done}\n",
    }.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def test_a_sending_agent_on_a_stage_without_approval_is_warned(
        tmp_path: Path, bees: BeesRunner) -> None:
    done = bees("validate", str(mail_workspace(tmp_path / "w", "none")))
    assert done.returncode == 0
    assert done.stderr.splitlines() == [
        "processes/p.yaml:2:48  stages[0].agents[1]  warning: agent 'clerk' holds "
        "notes.pay_invoice (pay) but stage 'Draft' has no 'approval: required': it runs "
        "without a person's approval",
        "processes/p.yaml:3:5  stages[1]  warning: agent 'sender' (the default agent) holds "
        "mail.send (send) but stage 'Send' has no 'approval: required': it runs without a person's "
        "approval",
    ]


def test_no_warning_where_the_stage_asks_for_approval(tmp_path: Path, bees: BeesRunner) -> None:
    root = mail_workspace(tmp_path / "w", "required")
    text = (root / "processes/p.yaml").read_text()
    (root / "processes/p.yaml").write_text(text.replace(
        "agents: [reader, clerk]}", "agents: [reader, clerk], approval: required}"))
    done = bees("validate", str(root))
    assert (done.returncode, done.stderr) == (0, "")

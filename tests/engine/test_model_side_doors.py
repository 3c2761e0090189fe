"""No side doors (issue 25, point 5): a model's write_file cannot change a folder its stage only
reads, nor, on an approval stage, any linked folder before a person approved; its own folder
is always writable. Real dev server, scripted model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.record.local import LocalRecord
from tests.agents.model_server import Answer, ScriptedServer
from tests.engine.conftest import Space, until
from tests.engine.test_model_loop import (
    model_agent,
    model_server,  # noqa: F401 - the fixture
    result,
    sent,
    worker,  # noqa: F401 - the fixture
)
from tests.engine.test_rules import decide, mail_addon, start

PROCESS = """\
stages:
  - name: Send
    kind: work
    agents: [sender]
    approval: {approval}
    reads: [notes]
    writes: [outbox]
  - name: Done
    kind: done
"""

READ_ONLY = ("refused: folder notes is read-only to this stage: it is not under the stage's "
             "writes:")
BEFORE_APPROVAL = ("refused: folder outbox is a linked folder and this stage needs a person's "
                   "approval before it changes one; write in the stage's own folder (stage) "
                   "until then")


def folders(space: Space) -> tuple[Path, Path]:
    """Declare and link folders ``notes`` (read) and ``outbox`` (written); return both."""
    paths = []
    for name in ("notes", "outbox"):
        space.write(f"folders/{name}.yaml", f"path: {name}\n")
        (space.root / name).mkdir()
        paths.append(space.root / name)
    (space.root / "notes" / "maya.md").write_text("shipped\n", encoding="utf-8")
    return paths[0], paths[1]


def write(call_id: str, folder: str, path: str, content: str) -> tuple[str, str, str]:
    return (call_id, "write_file",
            json.dumps({"folder": folder, "path": path, "content": content}))


def results(server: ScriptedServer, index: int) -> list[str]:
    """The tool results of the last turn's calls, as request ``index`` sent them back."""
    messages = sent(server, index)
    last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return [m["content"] for m in messages[last + 1:] if m["role"] == "tool"]


async def test_a_folder_the_stage_only_reads_is_read_only_to_its_model(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker, model_server: ScriptedServer) -> None:  # noqa: F811
    notes, outbox = folders(space)
    model_agent(space, "sender", model_server)
    space.write("processes/p.yaml", PROCESS.format(approval="none"))
    model_server.model.push(
        Answer.tool_calls(write("c1", "notes", "maya.md", "overwritten"),
                          write("c2", "outbox", "mail.eml", "hello")),
        Answer.reply("done"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    assert results(model_server, 1) == [READ_ONLY, "wrote 5 bytes to mail.eml"]
    assert (notes / "maya.md").read_text() == "shipped\n"
    assert (outbox / "mail.eml").read_text() == "hello"


async def test_an_approval_stage_changes_no_linked_folder_before_a_person_approved(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker, model_server: ScriptedServer,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    notes, outbox = folders(space)
    monkeypatch.setenv("ADDON_LOG", str(mail_addon(space)))
    model_agent(space, "sender", model_server, tools=["mail.send"])
    space.write("processes/p.yaml", PROCESS.format(approval="required"))
    model_server.model.push(
        Answer.tool_calls(write("c1", "stage", "draft.eml", "draft"),
                          write("c2", "outbox", "mail.eml", "early"),
                          write("c3", "notes", "maya.md", "overwritten")),
        Answer.tool_calls(("c4", "mail__send", '{"to": "all"}')),
        Answer.tool_calls(write("c5", "outbox", "mail.eml", "approved")),
        Answer.reply("sent"))
    item_id = await start(dev_env, record, space, "p")
    await until(record, item_id, lambda r: r.status == "waiting for approval")
    assert results(model_server, 1) == ["wrote 5 bytes to draft.eml", BEFORE_APPROVAL,
                                        READ_ONLY]
    assert list(outbox.iterdir()) == []  # nothing reached the outbox while it waits
    run = Path(record.item(item_id).run_folder)
    assert (run / "Send" / "draft.eml").read_text() == "draft"
    await asyncio.to_thread(decide, item_id, approve=True, request_id=None, reason=None)
    # approved (which also approves the stage's finish): the stage may now change the
    # folder it writes, never the one it reads
    assert await result(dev_env, item_id) == "done"
    assert results(model_server, 3) == ["wrote 8 bytes to mail.eml"]
    assert (outbox / "mail.eml").read_text() == "approved"
    assert (notes / "maya.md").read_text() == "shipped\n"

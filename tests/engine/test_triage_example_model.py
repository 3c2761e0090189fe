"""examples/bug-triage-model once on the embedded model (issue 26, done-when). ``slow``.

A real llama.cpp server and SmolLM2-135M: Triage → Review (its check, then the reviewer) →
File held → approve → Done, and the one bug filed is one of the folder's, the one the
triager picked. Asserts flow and the acted-on id, never the model's prose.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.record.local import LocalRecord, item_journal
from tests.engine.conftest import Space, until
from tests.engine.test_model_example import INSTALLED, served  # noqa: F401 - the fixture
from tests.engine.test_model_loop import loop_worker, note_this_worker, result
from tests.engine.test_rules import decide, start

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bug-triage-model"

pytestmark = [pytest.mark.slow, pytest.mark.integration,
              pytest.mark.skipif(not INSTALLED, reason="the 'model' extra is not installed")]


@pytest.fixture
def example(tmp_path: Path, served: str) -> Space:  # noqa: F811
    """The example workspace (nothing filed yet), its agents pointed at the served model."""
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("filed.json"))
    for path in (root / "agents").glob("*.yaml"):
        path.write_text(path.read_text().replace("http://127.0.0.1:11434/v1", served))
    return Space(root, tmp_path / "agents.log")


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, example: Space,
                 record: LocalRecord) -> AsyncIterator[Worker]:
    note_this_worker(dev_env)
    async with loop_worker(dev_env, record) as running:
        yield running


@pytest.mark.timeout(1200)  # a 135M model on a busy 2-core machine: minutes, not seconds
async def test_the_triage_example_files_a_report_of_the_folder_on_the_embedded_model(
        dev_env: WorkflowEnvironment, example: Space, record: LocalRecord,
        worker: Worker) -> None:
    item_id = await start(dev_env, record, example, "bug-triage")
    row = await until(record, item_id, lambda r: r.status in (
        "waiting for approval", "failed", "waiting for a person"), timeout=900)
    assert (row.status, row.stage) == ("waiting for approval", "File"), row.reason
    await asyncio.to_thread(decide, item_id, approve=True, request_id=None, reason=None)
    assert await result(dev_env, item_id) == "done"
    picked = json.loads((Path(row.run_folder) / "Triage" / "pick.json").read_text())["bug"]
    filed = json.loads((example.root / "tracker" / "filed.json").read_text())
    assert [issue["bug"] for issue in filed] == [picked]
    assert picked in {"BUG-1", "BUG-2", "BUG-3", "BUG-4", "BUG-5"}
    assert [j["action"] for j in item_journal(item_id)][-1] == "tracker.file"

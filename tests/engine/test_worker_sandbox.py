"""The worker's workflow sandbox (issue 29, point 4): Bees' workflow modules are passed
through, so an item's run does not execute them again; the saved histories still replay under
the full sandbox (``test_replay.py``), which keeps its checks on the same code."""

from __future__ import annotations

import sys
from pathlib import Path
from types import CodeType

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import _worker

from bees_cli.engine import worker
from bees_cli.engine.client import EngineGateway
from bees_cli.engine.models import task_queue
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.local import LocalRecord
from bees_cli.usecases.items import create_item
from bees_cli.usecases.run import start_pending
from tests.engine.conftest import Space

ENGINE = Path(worker.__file__).resolve().parent
EXECUTED: list[str] = []
"""While a test listens (``LISTENING``), the engine modules whose code ``exec`` ran."""
LISTENING: list[bool] = []


def _audit(event: str, args: tuple[object, ...]) -> None:
    if LISTENING and event == "exec" and args and isinstance(args[0], CodeType):
        path = Path(args[0].co_filename)
        if path.parent == ENGINE:
            EXECUTED.append(path.stem)


sys.addaudithook(_audit)  # an audit hook cannot be removed: it only counts while listening

THREE = """\
stages:
  - {name: One, kind: work, agents: [noop]}
  - {name: Two, kind: work, agents: [noop]}
  - {name: Done, kind: done}
"""


async def test_an_items_run_does_not_execute_the_workflow_modules_again(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord) -> None:
    space.write("agents/noop.yaml", 'runner:\n  command: ["true"]\n')
    space.write("processes/p.yaml", THREE)
    here = Computer.load()
    ids = [create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=here).id for _ in range(2)]
    queue = task_queue(load_identity().machine_id)
    async with worker.make_worker(dev_env.client, queue, record, computer=here,
                                  heartbeat_every=0.5):
        EXECUTED.clear()
        LISTENING.append(True)
        try:
            assert await start_pending(EngineGateway(dev_env.client), AsyncRecord(record),
                                       here) == 2
            assert [await dev_env.client.get_workflow_handle(i).result() for i in ids] == [
                "done", "done"]
        finally:
            LISTENING.clear()
    assert sorted(set(EXECUTED)) == []
    assert [e.kind for e in record.events(ids[0])].count("stage_finished") == 2


def test_every_engine_module_of_workflow_code_is_passed_through() -> None:
    """A workflow module left out would still run per item (and import its own copies of
    the passed-through ones)."""
    from bees_cli.engine import workflows  # noqa: F401  (imports every workflow module)

    workflow_code = {name for name, module in sys.modules.items()
                     if name.startswith("bees_cli.engine.") and Path(
                         getattr(module, "__file__", None) or "-").stem.startswith(
                         ("workflow", "pieces", "model_loop", "stage_check", "fire_workflow"))}
    assert sorted(workflow_code) == sorted(worker.WORKFLOW_MODULES)
    assert set(worker.WORKFLOW_MODULES) <= worker.workflow_runner().restrictions.passthrough_modules


async def test_the_worker_names_its_build_without_hashing_every_loaded_module(
        dev_env: WorkflowEnvironment, record: LocalRecord,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """temporalio's default build id reads the code of every module in ``sys.modules`` (a
    third of a second as ``bees run`` starts); Bees names its build from its workflow code."""
    def hashing(**_: object) -> str:
        raise AssertionError("the default build id hashed every loaded module")

    monkeypatch.setattr(_worker, "load_default_build_id", hashing)
    made = worker.make_worker(dev_env.client, "bees-build-id-test", record,
                              computer=Computer.load())
    assert made.config()["build_id"] == worker.build_id()
    assert worker.build_id().startswith("bees-")


def test_the_worker_imports_no_http_client_until_bees_cloud_is_asked() -> None:
    """``bees run`` on a computer without Bees Cloud reaches its first stage without
    ``httpx`` (and the ``rich`` console httpx's own command line imports): ~0.1 s of CPU."""
    import subprocess

    code = ("import sys; import bees_cli.engine.worker, bees_cli.agents.mcp_sessions; "
            "print(sorted(m for m in ('httpx', 'rich.console') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"

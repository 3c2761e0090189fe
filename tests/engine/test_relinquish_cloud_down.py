"""``bees relinquish`` while Bees Cloud is down (issue 15's trial: it failed at once with
"cannot reach Bees Cloud" while the README says it waits). Against a real Bees Cloud that is
stopped, then started again on the same port: the command waits, saying so, and changes
nothing until the cloud answers (or ``--timeout`` ends it, nothing changed); once the cloud
is back the stage stops, the checkpoint is written and the item is free."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from bees_cli.cloud.login import Login, save_login
from bees_cli.cloud.server.app import asgi, bind
from bees_cli.cloud.server.storage import Storage
from bees_cli.engine.models import task_queue
from bees_cli.engine.worker import make_worker
from bees_cli.errors import CloudUnreachable
from bees_cli.handover.relinquish import Relinquished
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.machine.paths import data_dir
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import Status
from bees_cli.usecases.bees import Bees
from bees_cli.usecases.run import note_worker
from tests.e2e.conftest import Team, cloud, team  # noqa: F401 - fixtures
from tests.engine.conftest import Space, until
from tests.engine.test_handover_faults import sha, start_holding
from tests.servers import uvicorn_in_thread
from tests.support import wait


class Front:
    """The session Bees Cloud's database served on a port of its own, which the test stops
    (connections refused, as when the server is down) and starts again."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.sock: socket.socket | None = bind("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.serving: contextlib.ExitStack | None = None

    def start(self) -> None:
        """Serve again on the same port."""
        sock = self.sock or bind("127.0.0.1", self.port)
        self.sock = None
        self.serving = contextlib.ExitStack()
        self.serving.callback(sock.close)
        self.serving.enter_context(uvicorn_in_thread(asgi(self.storage), sock))

    def stop(self) -> None:
        """Stop serving: the port refuses connections."""
        assert self.serving is not None
        self.serving.close()
        self.serving = None


@pytest.fixture
def front(team: Team) -> Iterator[Front]:  # noqa: F811
    made = Front(team.cloud.storage)
    made.start()
    try:
        yield made
    finally:
        if made.serving is not None:
            made.stop()


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, record: LocalRecord, team: Team,  # noqa: F811
                 front: Front) -> AsyncIterator[None]:
    """This computer signed in to Bees Cloud through ``front``, its worker up."""
    set_identity(person=team.maya, computer="maya-laptop")
    save_login(Login(front.url, team.tokens[team.maya]))
    queue = task_queue(load_identity().machine_id)
    note_worker(data_dir(), dev_env.client.service_client.config.target_host, queue)
    async with make_worker(dev_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5):
        yield


def relinquish(item_id: str, said: list[str], **options: float) -> Relinquished:
    """``bees relinquish`` in a thread of its own (its own event loop), its news kept."""
    return asyncio.run(Bees(Computer.load(), say=said.append).relinquish(item_id, **options))


def unchanged(record: LocalRecord, item_id: str, run_folder: Path) -> tuple[object, ...]:
    row = record.item(item_id)
    return row.status, row.stage, row.wait, (run_folder / "checkpoint.json").exists()


@pytest.mark.timeout(180)
async def test_relinquish_waits_for_a_stopped_cloud_and_hands_over_once_it_is_back(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, front: Front,
        worker: None, tmp_path: Path) -> None:
    item = await start_holding(dev_env, space, record, tmp_path / "hold", "Week 11")
    running = unchanged(record, item.id, item.run_folder)
    assert running == (Status.RUNNING, "Draft", None, False)
    front.stop()

    # --timeout: gives up, nothing changed
    said: list[str] = []
    with pytest.raises(CloudUnreachable) as gave_up:
        await asyncio.to_thread(relinquish, item.id, said, timeout=1.5)
    assert gave_up.value.message.startswith(
        f"item {item.id} was not relinquished: Bees Cloud unreachable for ")
    assert gave_up.value.message.endswith("; nothing changed, it runs on here")
    assert gave_up.value.hint == f"bees relinquish {item.id} again once Bees Cloud answers"
    assert said and all(line.endswith(" s; nothing has changed yet (Ctrl-C stops)")
                        for line in said)
    assert said[0].startswith(f"relinquish {item.id}: waiting for Bees Cloud (unreachable: ")
    assert unchanged(record, item.id, item.run_folder) == running

    # no --timeout: waits until the cloud answers, changing nothing meanwhile
    said = []
    asked = asyncio.create_task(asyncio.to_thread(relinquish, item.id, said))
    await wait.until(lambda: len(said) >= 2 or asked.done(), "relinquish said no retry")
    assert not asked.done()
    assert [line.split("; trying again in ")[1] for line in said[:2]] == [
        "1.0 s; nothing has changed yet (Ctrl-C stops)",
        "2.0 s; nothing has changed yet (Ctrl-C stops)"]
    assert unchanged(record, item.id, item.run_folder) == running
    assert "holding Draft" in space.lines() and not asked.done()

    front.start()
    done = await asyncio.wait_for(asked, timeout=90)
    file = item.run_folder / "checkpoint.json"
    assert (done.item, done.stage, done.restart, done.released, done.checkpoint_sha256) == (
        item.id, "Draft", "Draft", True, sha(file))
    row = await until(record, item.id, lambda r: r.status == Status.FREE)
    assert (row.wait, row.status_text) == (None, "free, restarts at Draft")

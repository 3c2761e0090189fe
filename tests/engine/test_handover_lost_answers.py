"""Handover when Bees Cloud applied a request and its answer was lost (a tester's findings), on
the dev server with a real Bees Cloud: a continue whose claim answer was lost is finished by
running it again (the same claim, the same grant); ``bees relinquish --timeout`` bounds the
whole command, while the release answers are lost and while the cloud does not answer."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

import bees_cli.cloud.client as client_module
import bees_cli.handover.continue_ as continue_module
from bees_cli.cloud.client import CloudClient, sync_cloud_for
from bees_cli.cloud.login import Login, save_login
from bees_cli.errors import CloudUnreachable, EngineError, Refused
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import Status, WaitKind
from bees_cli.usecases import Bees
from tests.e2e.conftest import Team, cloud, team  # noqa: F401 - fixtures
from tests.engine.conftest import Space, until
from tests.engine.test_handover import continue_item, relinquish_item
from tests.engine.test_handover_faults import LoseAnswers, lossy, sha, start_holding  # noqa: F401
from tests.support import wait


def owner_now(item_id: str) -> tuple[int, str, bool, str | None]:
    """The item's latest owner in Bees Cloud: epoch, machine id, held, released digest."""
    api = sync_cloud_for(Computer.load())
    assert api is not None
    with api:
        owner = api.get_owner(item_id)
    assert owner is not None
    digest = owner.release.checkpoint_sha256 if owner.release is not None else None
    return owner.epoch, owner.machine_id, owner.held, digest


@pytest.mark.timeout(180)
async def test_a_continue_whose_claim_answer_was_lost_is_finished_by_running_it_again(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        lossy: LoseAnswers, tmp_path: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    lossy.lose = 0
    hold = tmp_path / "hold"
    item = await start_holding(dev_env, space, record, hold, "Week 12")
    done = await asyncio.to_thread(relinquish_item, item.id)
    hold.unlink()

    def through_lossy(computer: Computer, *, retries: int = 0,
                      timeout: float = 5.0) -> CloudClient | None:
        assert computer.login is not None
        return CloudClient(computer.login.url, computer.login.token, retries=retries,
                           timeout=timeout, backoff=0.01, transport=lossy)

    monkeypatch.setattr(continue_module, "sync_cloud_for", through_lossy)
    monkeypatch.setattr(client_module, "sync_cloud_for", through_lossy)  # the owner claim
    # the proxy loses every answer to the claim: the client's three tries
    lossy.ending, lossy.releases, lossy.lose = "/v1/owners/claim", 0, 3
    with pytest.raises(CloudUnreachable) as lost:
        await asyncio.to_thread(continue_item, item.id, workspace_path=space.root)
    assert lost.value.message.endswith(": ReadError: the answer was lost")
    assert lost.value.hint == (f"run bees continue {item.id} again once Bees Cloud answers: "
                               "a claim it took is granted again, to this computer")
    assert lossy.releases == 3
    machine = load_identity().machine_id
    # the server applied the first claim: this machine holds the next generation
    assert owner_now(item.id) == (2, machine, True, None)
    assert record.item(item.id).status == Status.FREE

    lossy.lose = 0  # healed: the same continue again is granted the same claim
    cont = await asyncio.to_thread(continue_item, item.id, workspace_path=space.root)
    assert (cont.stage, cont.run, cont.checkpoint_sha256) == ("Draft", 2,
                                                             done.checkpoint_sha256)
    assert lossy.releases == 4
    assert owner_now(item.id) == (2, machine, True, None)
    assert await dev_env.client.get_workflow_handle(item.id).result() == "done"
    assert [e.data["run"] for e in record.events(item.id) if e.kind == "continued"] == [2]
    # the item is owned and present here: a further continue is refused, as before
    with pytest.raises(Refused) as again:
        await asyncio.to_thread(continue_item, item.id, workspace_path=space.root)
    assert again.value.message == f"item {item.id} was already continued here (run 2)"


@pytest.mark.timeout(180)
async def test_relinquish_timeout_ends_the_command_while_release_answers_are_lost(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        lossy: LoseAnswers, tmp_path: Path) -> None:  # noqa: F811
    lossy.lose = 10**6  # every answer to a release is lost, until healed
    hold = tmp_path / "hold"
    item = await start_holding(dev_env, space, record, hold, "Week 13")

    def relinquish_within(seconds: float) -> object:
        return asyncio.run(Bees(Computer.load()).relinquish(item.id, timeout=seconds))

    began = time.monotonic()
    with pytest.raises(EngineError) as waited:
        # without the bound the command waits for the run's answer for 600 s
        await asyncio.wait_for(asyncio.to_thread(relinquish_within, 8.0), timeout=30)
    assert 8.0 <= time.monotonic() - began < 20.0
    # which of the two the command saw depends on how far the run got in 8 s (under load
    # the stage may still be stopping): both say it is not handed over and goes on
    assert (waited.value.message, waited.value.hint) in [
        (f"item {item.id} is not handed over yet: relinquishing: Bees Cloud unreachable, "
         "retrying",
         "it goes on by itself while bees run is up; bees status shows it free once Bees "
         "Cloud answers"),
        (f"item {item.id} is not handed over yet: --timeout 8 s ended the wait while its "
         "run stops and writes its checkpoint",
         "it goes on by itself while bees run is up; bees status shows it free once Bees "
         "Cloud took the release")]
    row = await until(record, item.id, lambda r: r.wait == WaitKind.RELEASE_PENDING,
                      timeout=60)
    assert row.status == Status.WAITING
    # the run tries again and again, every answer lost
    await wait.until(lambda: lossy.releases >= 3, lambda: f"only {lossy.releases} release tries")
    file = item.run_folder / "checkpoint.json"
    # the cloud applied the first release; nothing changed here until it says so
    assert owner_now(item.id)[1:] == (load_identity().machine_id, False, sha(file))
    assert record.item(item.id).wait == WaitKind.RELEASE_PENDING

    lossy.lose = 0  # healed: the next try is answered with the release it applied
    row = await until(record, item.id, lambda r: r.status == Status.FREE, timeout=60)
    assert (row.wait, row.status_text) == (None, "free, restarts at Draft")
    assert owner_now(item.id) == (1, load_identity().machine_id, False, sha(file))


@pytest.fixture
def silent_cloud(bees_home: Path, team: Team) -> Iterator[str]:  # noqa: F811
    """This computer signed in to a Bees Cloud that takes connections and never answers
    (a server stopped with SIGSTOP)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        set_identity(person=team.maya, computer="maya-laptop")
        save_login(Login(url, team.tokens[team.maya]))
        yield url


@pytest.mark.timeout(60)
async def test_relinquish_timeout_bounds_each_try_of_a_cloud_that_never_answers(
        silent_cloud: str) -> None:
    said: list[str] = []
    began = time.monotonic()
    with pytest.raises(CloudUnreachable) as waited:
        await Bees(Computer.load(), say=said.append).relinquish("01JH3QX5Z8", timeout=1.5)
    # before: three tries of 5 s each, whatever the timeout
    assert 1.5 <= time.monotonic() - began < 4.0
    assert waited.value.message.startswith(
        "item 01JH3QX5Z8 was not relinquished: Bees Cloud unreachable for 2 s (")
    assert waited.value.hint == "bees relinquish 01JH3QX5Z8 again once Bees Cloud answers"

"""Handover under faults (issue 12, point 2, point 4 and a tester finding), on the dev server:
a handover step retried after a lost answer from Bees Cloud writes its checkpoint once and
ends with a continuable item; a checkpoint that disagrees with the release is named with both
digests and repaired by ``bees relinquish --repair``; a relinquish refused by the limits
leaves the item running with its attempts; ``bees continue --from DIR`` runs from a copy."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

import bees_cli.handover.checkpoint as checkpoint_module
import bees_cli.handover.continue_ as continue_module
from bees_cli.cloud.client import sync_cloud_for
from bees_cli.cloud.login import Login, save_login
from bees_cli.engine.client import EngineGateway
from bees_cli.engine.models import task_queue
from bees_cli.engine.worker import make_worker
from bees_cli.errors import Refused
from bees_cli.handover import checkpoint as checkpoints
from bees_cli.handover.continue_ import Continued, DigestDisagrees
from bees_cli.handover.store import kept_handover
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.machine.paths import data_dir
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import Status
from bees_cli.usecases import Bees
from bees_cli.usecases import handover as handover_usecases
from bees_cli.usecases.items import create_item
from bees_cli.usecases.run import note_worker, start_pending
from tests.e2e.conftest import Team, cloud, team  # noqa: F401 - fixtures
from tests.engine.conftest import Space, until
from tests.engine.test_handover import (  # noqa: F401 - worker is a fixture
    continue_item,
    lines,
    relinquish_item,
    worker,
    write_space,
)
from tests.support import wait


class LoseAnswers(httpx.AsyncBaseTransport, httpx.BaseTransport):
    """Sends every request to Bees Cloud; drops the answer of the first ``lose`` requests
    whose path ends with ``ending`` after the server applied them (a lost answer). Serves
    the async client (the worker's) and the blocking one (the CLI's)."""

    def __init__(self, lose: int, ending: str = "/release") -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.sync = httpx.HTTPTransport()
        self.lose = lose
        self.ending = ending
        self.releases = 0  # requests whose path ends with ``ending``

    def _lost(self, request: httpx.Request) -> bool:
        if not request.url.path.endswith(self.ending):
            return False
        self.releases += 1
        return self.releases <= self.lose

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if self._lost(request):
            await response.aread()
            await response.aclose()
            raise httpx.ReadError("the answer was lost", request=request)
        return response

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.sync.handle_request(request)
        if self._lost(request):
            response.read()
            response.close()
            raise httpx.ReadError("the answer was lost", request=request)
        return response

    async def aclose(self) -> None:
        """Kept open: each try of the activity makes a client over this one transport."""

    def close(self) -> None:
        """Kept open: each command makes a client over this one transport."""


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def start_holding(env: WorkflowEnvironment, space: Space, record: LocalRecord,
                        hold: Path, title: str) -> Any:
    """Create the item, start it, wait until Draft sent its mail and holds."""
    write_space(space, hold)
    hold.touch()
    item = create_item(space.root, "report", title=title, agents=[], folders=[],
                       record=record, computer=Computer.load())
    assert await start_pending(EngineGateway(env.client), AsyncRecord(record), Computer.load()) == 1
    await wait.until(lambda: "holding Draft" in space.lines(), lambda: f"{space.lines()}")
    return item


@pytest_asyncio.fixture
async def lossy(dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
                team: Team) -> AsyncIterator[LoseAnswers]:  # noqa: F811
    """This computer signed in to a real Bees Cloud; its worker's cloud calls go through a
    transport that loses the answers of the first three releases (one try of the handover
    activity: the client's own three attempts)."""
    set_identity(person=team.maya, computer="maya-laptop")
    save_login(Login(team.cloud.url, team.tokens[team.maya]))
    transport = LoseAnswers(lose=3)
    here = dataclasses.replace(Computer.load(), transport=transport)
    queue = task_queue(load_identity().machine_id)
    note_worker(data_dir(), dev_env.client.service_client.config.target_host, queue)
    async with make_worker(dev_env.client, queue, record, computer=here,
                           heartbeat_every=0.5):
        yield transport
    await transport.inner.aclose()


async def test_a_handover_retried_after_a_lost_answer_writes_one_checkpoint_and_continues(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        lossy: LoseAnswers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[str] = []
    real_write = checkpoint_module.write_checkpoint

    def counted(folder: Path, **options: Any) -> Any:
        info = real_write(folder, **options)
        writes.append(info.sha256)
        return info

    monkeypatch.setattr(checkpoint_module, "write_checkpoint", counted)
    hold = tmp_path / "hold"
    item = await start_holding(dev_env, space, record, hold, "Week 5")
    done = await asyncio.to_thread(relinquish_item, item.id)
    # the first try's three releases lost their answers; the second try was answered
    assert lossy.releases == 4
    history = await dev_env.client.get_workflow_handle(item.id).fetch_history()
    tries = [e.activity_task_started_event_attributes.attempt for e in history.events
             if e.HasField("activity_task_started_event_attributes")
             and e.activity_task_started_event_attributes.attempt > 1]
    assert tries == [2]
    file = item.run_folder / "checkpoint.json"
    assert writes == [sha(file)]
    assert (done.released, done.checkpoint_sha256) == (True, sha(file))
    api = sync_cloud_for(Computer.load())
    assert api is not None
    with api:
        owner = api.get_owner(item.id)
    assert owner is not None and owner.release is not None
    assert owner.release.checkpoint_sha256 == sha(file)
    kept = kept_handover(data_dir(), item.id)
    assert kept is not None and kept["checkpoint_sha256"] == sha(file)

    hold.unlink()
    cont = await asyncio.to_thread(continue_item, item.id, workspace_path=space.root)
    assert (cont.stage, cont.run, cont.checkpoint_sha256) == ("Draft", 2, sha(file))
    assert await dev_env.client.get_workflow_handle(item.id).result() == "done"
    addon = (space.root.parent / "addon.log").read_text().splitlines()
    assert addon == ['mail.send {"to": "boss"}']


async def test_a_checkpoint_that_disagrees_with_the_release_is_named_and_repaired(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        lossy: LoseAnswers, tmp_path: Path, team: Team) -> None:  # noqa: F811
    lossy.lose = 0
    hold = tmp_path / "hold"
    item = await start_holding(dev_env, space, record, hold, "Week 6")
    done = await asyncio.to_thread(relinquish_item, item.id)
    file = item.run_folder / "checkpoint.json"
    released = done.checkpoint_sha256
    assert sha(file) == released
    # what a retried handover did before: a second checkpoint of the same folder, a new time
    document = json.loads(file.read_text())
    checkpoints.write_checkpoint(
        item.run_folder, item_id=item.id, workspace=document["workspace"],
        process_digest=document["process_digest"], restart_stages=document["restart_stages"],
        computer=document["computer"], machine_id=document["machine_id"],
        journal=document["journal"], now=datetime(2030, 1, 1, tzinfo=UTC))
    rewritten = sha(file)
    assert rewritten != released
    hold.unlink()

    with pytest.raises(DigestDisagrees) as disagree:
        await asyncio.to_thread(continue_item, item.id, workspace_path=space.root)
    assert disagree.value.message == (
        f"{file} has SHA-256 {rewritten}, but Bees Cloud holds {released}, released by "
        "maya-laptop: the run folder's checkpoint and the release disagree")
    assert disagree.value.hint == (
        f"if this run folder holds the work to continue, run bees relinquish {item.id} "
        "--repair on maya-laptop: it verifies the folder and re-sends the release with its "
        "digest; else put back the checkpoint.json that was released")
    assert (disagree.value.exit_code, disagree.value.code) == (3, "checkpoint_digest_disagrees")
    assert record.item(item.id).status_text == "free, restarts at Draft"

    fixed = await Bees(Computer.load()).repair_release(item.id)
    assert (fixed.before, fixed.checkpoint_sha256, fixed.changed, fixed.released,
            fixed.restart_stages) == (released, rewritten, True, True, {"main": "Draft"})
    again = await Bees(Computer.load()).repair_release(item.id)
    assert (again.before, again.changed) == (rewritten, False)

    cont = await asyncio.to_thread(continue_item, item.id, workspace_path=space.root)
    assert (cont.run, cont.checkpoint_sha256) == (2, rewritten)
    assert await dev_env.client.get_workflow_handle(item.id).result() == "done"
    with pytest.raises(Refused) as held:
        await Bees(Computer.load()).repair_release(item.id)
    assert held.value.message == (
        f"item {item.id} is held by maya-laptop ({team.maya}): there is no release to repair")


def on_disk(folder: Path) -> int:
    return sum(1 for path in folder.rglob("*") if path.is_file())


def retry_item(item_id: str) -> object:
    """``bees retry`` in a thread of its own (its own event loop)."""
    return asyncio.run(Bees(Computer.load()).retry(item_id))


@pytest.mark.usefixtures("worker")
async def test_a_relinquish_over_the_file_limit_is_refused_and_the_item_runs_on(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    item = await start_holding(dev_env, space, record, hold, "Week 7")
    junk = item.run_folder / "Draft" / "junk"
    junk.mkdir()
    for number in range(1000):
        (junk / f"{number:04}.txt").write_text("x")
    # the handover adds snapshot.json and item.json to what is there
    count = on_disk(item.run_folder) + 2
    with pytest.raises(Refused) as refused:
        await asyncio.to_thread(relinquish_item, item.id)
    assert refused.value.message == (
        f"item {item.id} was not relinquished: {count:,} files to hand over; "
        "the limit is 1,000 files")
    assert refused.value.hint == (
        "it goes on running here, untouched; make its run folder fit (at most 1,000 files, "
        f"20 MB each, 250 MB in all, no symlinks), then bees relinquish {item.id} again")
    assert refused.value.exit_code == 3
    # nothing stopped: the same attempt still holds, nothing was written, no event
    await asyncio.sleep(1)
    assert lines(space) == ["run Draft writer 1", "mail.send 0 done 1 | ", "holding Draft"]
    row = record.item(item.id)
    assert (row.status, row.stage) == ("running", "Draft")
    assert not (item.run_folder / "checkpoint.json").exists()
    assert [e.kind for e in record.events(item.id)].count("stage_failed") == 0

    shutil.rmtree(junk)
    done = await asyncio.to_thread(relinquish_item, item.id)
    assert done.stage == "Draft"
    hold.unlink()
    cont = await asyncio.to_thread(continue_item, item.id, workspace_path=space.root)
    assert (cont.stage, cont.run) == ("Draft", 2)
    assert await dev_env.client.get_workflow_handle(item.id).result() == "done"
    # the attempt the relinquish stopped was the first: the continued run's is the second
    assert lines(space)[3] == "run Draft writer 2"
    assert (item.run_folder / "logs" / "Draft-r1-a2.stdout").exists()


@pytest.mark.usefixtures("worker")
async def test_a_handover_refused_after_the_stop_keeps_attempts_and_previous_stages(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the folder grows past the limit between the check and the stop: the check is skipped
    monkeypatch.setattr(handover_usecases, "check_fits", lambda bees, row: None)
    hold = tmp_path / "hold"
    item = await start_holding(dev_env, space, record, hold, "Week 8")
    junk = item.run_folder / "Draft" / "junk"
    junk.mkdir()
    for number in range(1000):
        (junk / f"{number:04}.txt").write_text("x")
    with pytest.raises(Refused) as refused:
        await asyncio.to_thread(relinquish_item, item.id)
    assert refused.value.message.startswith(
        f"item {item.id} was not relinquished: cannot write the checkpoint: 1,0")
    row = await until(record, item.id, lambda r: r.status == "failed")
    assert (row.stage, row.reason) == ("Draft", refused.value.message.split(": ", 1)[1])
    shutil.rmtree(junk)
    hold.unlink()
    await asyncio.to_thread(retry_item, item.id)
    assert await dev_env.client.get_workflow_handle(item.id).result() == "done"
    # the stopped attempt was 1: the retry is attempt 2 of the same round
    assert lines(space)[3:] == ["run Draft writer 2", "mail.send 0 done 1 | mail.send: "
                                f"answered from the journal (it ran at "
                                f"{record.journal(item.id)[0]['at']}); not run again",
                                "end Draft", "run Review reviewer 1", "end Review"]
    assert (item.run_folder / "logs" / "Draft-r1-a2.stdout").exists()


@pytest.mark.usefixtures("worker")
async def test_continue_from_a_copy_runs_from_its_own_copy_and_survives_deleting_it(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hold = tmp_path / "hold"
    item = await start_holding(dev_env, space, record, hold, "Week 9")
    done = await asyncio.to_thread(relinquish_item, item.id)
    usb = tmp_path / "usb" / item.id
    shutil.copytree(item.run_folder, usb)
    # this computer's own run folder of the item holds something else now
    (item.run_folder / "stray.txt").write_text("not in the checkpoint")
    hold.unlink()
    before = sorted(p.name for p in item.run_folder.parent.iterdir())

    def lost_claim(_: Computer, item_id: str) -> None:
        raise Refused(f"item {item_id} is owned by ana-desktop (Ana): it continued there first")

    said: list[str] = []
    with monkeypatch.context() as patch, pytest.raises(Refused) as lost:
        patch.setattr(continue_module, "claim_here", lost_claim)
        await asyncio.to_thread(continue_item, item.id, workspace_path=space.root,
                                from_dir=usb, say=said.append)
    # the loser of the claim leaves the disk as it was, and never said the copy is used
    assert lost.value.message == (
        f"item {item.id} is owned by ana-desktop (Ana): it continued there first")
    assert said == []
    assert sorted(p.name for p in item.run_folder.parent.iterdir()) == before
    assert (item.run_folder / "stray.txt").read_text() == "not in the checkpoint"
    assert record.item(item.id).status == Status.FREE
    cont = await asyncio.to_thread(continue_item, item.id, workspace_path=space.root,
                                   from_dir=usb, say=said.append)
    shutil.rmtree(usb)
    assert (cont.run_folder, cont.run, cont.checkpoint_sha256) == (
        str(item.run_folder), 2, done.checkpoint_sha256)
    [aside] = [p for p in item.run_folder.parent.iterdir()
               if p.name.startswith(f"{item.id}.before-")]
    assert (aside / "stray.txt").read_text() == "not in the checkpoint"
    assert said[:2] == [
        f"{item.run_folder} held another run folder of this item: moved aside to {aside}",
        f"{item.id}: copied {usb} to {item.run_folder}; the copy verified, and the run "
        "uses it"]
    assert await dev_env.client.get_workflow_handle(item.id).result() == "done"
    assert not (item.run_folder / "stray.txt").exists()
    assert (item.run_folder / "Review" / "verdict.json").exists()
    assert record.item(item.id).run_folder == str(item.run_folder)


@pytest.mark.usefixtures("worker")
async def test_without_a_cloud_a_rewritten_checkpoint_is_named_and_repair_keeps_its_digest(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    item = await start_holding(dev_env, space, record, hold, "Week 10")
    done = await asyncio.to_thread(relinquish_item, item.id)
    file = item.run_folder / "checkpoint.json"
    document = json.loads(file.read_text())
    checkpoints.write_checkpoint(
        item.run_folder, item_id=item.id, workspace=document["workspace"],
        process_digest=document["process_digest"], restart_stages=document["restart_stages"],
        computer=document["computer"], machine_id=document["machine_id"],
        journal=document["journal"], now=datetime(2030, 1, 1, tzinfo=UTC))
    rewritten = sha(file)
    hold.unlink()
    with pytest.raises(DigestDisagrees) as disagree:
        await asyncio.to_thread(continue_item, item.id, workspace_path=space.root)
    assert disagree.value.message == (
        f"{file} has SHA-256 {rewritten}, but this computer kept {done.checkpoint_sha256} "
        "when it relinquished the item: the run folder's checkpoint and the kept digest "
        "disagree")
    assert disagree.value.hint == (
        f"if this run folder holds the work to continue, run bees relinquish {item.id} "
        "--repair here: it verifies the folder and keeps its digest")

    fixed = await Bees(Computer.load()).repair_release(item.id)
    assert (fixed.before, fixed.checkpoint_sha256, fixed.released) == (
        done.checkpoint_sha256, rewritten, False)
    kept = kept_handover(data_dir(), item.id)
    assert kept is not None and kept["checkpoint_sha256"] == rewritten
    cont = await asyncio.to_thread(continue_item, item.id, workspace_path=space.root)
    assert cont.checkpoint_sha256 == rewritten
    assert await dev_env.client.get_workflow_handle(item.id).result() == "done"


@pytest.mark.usefixtures("worker")
async def test_two_continues_at_once_on_one_computer_continue_the_item_once(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    item = await start_holding(dev_env, space, record, hold, "Week 11")
    await asyncio.to_thread(relinquish_item, item.id)
    hold.unlink()
    results = await asyncio.gather(
        asyncio.to_thread(continue_item, item.id, workspace_path=space.root),
        asyncio.to_thread(continue_item, item.id, workspace_path=space.root),
        return_exceptions=True)
    [cont] = [r for r in results if isinstance(r, Continued)]
    [refused] = [r for r in results if isinstance(r, Refused)]
    assert (cont.run, cont.run_folder) == (2, str(item.run_folder))
    # refused at once while the first holds the lock, or after it, as continued here
    assert refused.message in (f"a continue of item {item.id} is under way here",
                               f"item {item.id} was already continued here (run 2)")
    assert await dev_env.client.get_workflow_handle(item.id).result() == "done"
    with pytest.raises(Refused) as again:
        await asyncio.to_thread(continue_item, item.id, workspace_path=space.root)
    assert (again.value.message, again.value.hint) == (
        f"item {item.id} was already continued here (run 2)",
        f"bees item show {item.id} shows it")
    assert [e.data["run"] for e in record.events(item.id) if e.kind == "continued"] == [2]
    assert [p.name for p in item.run_folder.parent.iterdir()
            if p.name.startswith(item.id)] == [item.id]

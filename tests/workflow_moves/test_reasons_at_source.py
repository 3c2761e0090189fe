"""A failure's fact stores the reason its producer handed over (issue 24, point 3): the
agent runner, the model loop, a denied finish, a busy agent's slot and a piece hand a
:class:`~bees_cli.why.Reason`, and the run stores it as it is. The reader of sentences
(:func:`~bees_cli.record.reasons.read_reason`) is left for outputs an older history
carries, without their ``why``.

Stand-in activities on the time-skipping server, as in test_item_moves.py; a spy on
``read_reason`` says whether the run read a sentence back.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from temporalio import activity
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.engine.models import (
    AWAIT_ELIGIBLE_ACTIVITY,
    AWAIT_SLOT_ACTIVITY,
    CHECK_ACTIVITY,
    DECIDE_UPDATE,
    RECORD_ACTIVITY,
    RELEASE_ACTIVITY,
    RUN_ACTIVITY,
    CheckInput,
    CheckOutput,
    DecideInput,
    ItemInput,
    RecordInput,
    ReleaseInput,
    SlotInput,
    SlotOutput,
    StageInput,
    StageOutput,
)
from bees_cli.engine.piece_models import (
    PIECE_ELIGIBLE_ACTIVITY,
    PIECE_RECORD_ACTIVITY,
    PIECE_RUN_ACTIVITY,
    PIECE_SLOT_ACTIVITY,
    PieceCheckOutput,
    PieceInput,
    PieceOutput,
    PieceRecordInput,
    PieceRunInput,
)
from bees_cli.engine.pieces import PieceWorkflow
from bees_cli.engine.snapshot import AgentView, EngineSnapshot, LoopView, ProcessView, StageView
from bees_cli.engine.workflows import ItemWorkflow
from bees_cli.record import reasons
from bees_cli.why import Reason

DRAFT = StageView(name="Draft", kind="work")
DONE = StageView(name="Done", kind="done")
BUSY = Reason(code="agent_busy", agent="writer", busy=1, cap=1, items=["01OTHER"])
EXIT = Reason(code="agent_exit", exit_code=3, said="no key for the mail add-on")


@pytest.fixture
def read_back(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every sentence the run read back as a code (a spy on the regular expressions of
    ``read_reason``, looked up when called, so a name bound by ``from … import`` is
    covered too; it still reads)."""
    seen: list[str] = []
    real = reasons._coded

    def spy(text: str) -> Reason | None:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(reasons, "_coded", spy)
    return seen


@dataclass
class Stand:
    """Stand-in activities: the stage's scripted output, the slot's answer; the facts."""

    output: StageOutput | None = None
    slot: SlotOutput | None = None
    piece: PieceOutput | None = None
    check: PieceCheckOutput = field(
        default_factory=lambda: PieceCheckOutput(ok=True, agent="writer"))
    facts: list[RecordInput | PieceRecordInput] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def activities(self) -> list[Callable[..., object]]:
        @activity.defn(name=CHECK_ACTIVITY)
        async def check(check: CheckInput) -> CheckOutput:
            return CheckOutput(ok=True, agent="writer")

        @activity.defn(name=AWAIT_ELIGIBLE_ACTIVITY)
        async def await_eligible(check: CheckInput) -> CheckOutput:
            return CheckOutput(ok=True, agent="writer")

        @activity.defn(name=AWAIT_SLOT_ACTIVITY)
        async def await_slot(ask: SlotInput) -> SlotOutput:
            assert self.slot is not None
            return self.slot

        @activity.defn(name=RUN_ACTIVITY)
        async def run_stage(given: StageInput) -> StageOutput:
            assert self.output is not None
            return self.output

        @activity.defn(name=RECORD_ACTIVITY)
        async def record(fact: RecordInput) -> None:
            self.facts.append(fact)
            self.changed.set()

        @activity.defn(name=RELEASE_ACTIVITY)
        async def release(given: ReleaseInput) -> None:
            return None

        @activity.defn(name=PIECE_ELIGIBLE_ACTIVITY)
        async def piece_eligible(piece: PieceInput) -> PieceCheckOutput:
            return self.check

        @activity.defn(name=PIECE_SLOT_ACTIVITY)
        async def piece_slot(ask: SlotInput) -> SlotOutput:
            assert self.slot is not None
            return self.slot

        @activity.defn(name=PIECE_RUN_ACTIVITY)
        async def piece_run(run: PieceRunInput) -> PieceOutput:
            assert self.piece is not None
            return self.piece

        @activity.defn(name=PIECE_RECORD_ACTIVITY)
        async def piece_record(entry: PieceRecordInput) -> None:
            self.facts.append(entry)
            self.changed.set()

        return [check, await_eligible, await_slot, run_stage, record, release, piece_eligible,
                piece_slot, piece_run, piece_record]

    async def until(self, kind: str) -> RecordInput | PieceRecordInput:
        """Wait until a fact of ``kind`` is written; return it."""
        async def seen() -> RecordInput | PieceRecordInput:
            while True:
                found = [f for f in self.facts if f.kind == kind]
                if found:
                    return found[0]
                self.changed.clear()
                await self.changed.wait()
        return await asyncio.wait_for(seen(), timeout=20)


Begin = Callable[..., Awaitable[Any]]


@pytest.fixture
async def begin(skip_env: WorkflowEnvironment) -> AsyncIterator[Begin]:
    """``await begin(stand, workflow_run, given)``: start a run on a worker with ``stand``."""
    workers: list[Worker] = []

    async def go(stand: Stand, run: Any, given: ItemInput | PieceInput) -> Any:
        queue = f"why-{uuid.uuid4().hex[:8]}"
        worker = Worker(skip_env.client, task_queue=queue,
                        workflows=[ItemWorkflow, PieceWorkflow], activities=stand.activities())
        workers.append(worker)
        asyncio.get_running_loop().create_task(worker.run())
        wid = given.item_id if isinstance(given, ItemInput) else given.workflow_id
        return await skip_env.client.start_workflow(run, given, id=wid, task_queue=queue)

    yield go
    for worker in workers:
        await worker.shutdown()


def item(*stages: StageView, writer: AgentView | None = None) -> ItemInput:
    snapshot = EngineSnapshot(process_name="p", process=ProcessView(stages=list(stages)),
                              agents={"writer": writer or AgentView()})
    return ItemInput(item_id=f"item-{uuid.uuid4().hex[:8]}", title="T", run_folder="/runs/T",
                     snapshot=snapshot)


def piece() -> PieceInput:
    wid = f"piece-{uuid.uuid4().hex[:8]}"
    return PieceInput(item_id="01ITEM", title="T", run_folder="/runs/T", stage="Draft",
                      seq=1, piece="r1-a1-p1", chain=["writer"], named="helper",
                      task="sum it up", ask_digest="d", workflow_id=wid,
                      folder="/runs/T/Draft/pieces/r1-a1-p1")


async def test_an_agent_failure_stores_the_runners_reason_as_it_is(
        begin: Begin, read_back: list[str]) -> None:
    stand = Stand(output=StageOutput(ok=False, reason=EXIT.words(), why=EXIT, output_dir="out",
                                     exit_code=3))
    handle = await begin(stand, ItemWorkflow.run, item(DRAFT, DONE))

    fail = await stand.until("stage_failed")
    assert (fail.status, fail.reason, fail.data) == (
        "failed", "exit 3: no key for the mail add-on",
        {"reason": {"code": "agent_exit", "exit_code": 3,
                    "said": "no key for the mail add-on"}})
    assert read_back == []
    await handle.cancel()


async def test_an_output_of_an_older_history_without_its_why_is_read_back(
        begin: Begin, read_back: list[str]) -> None:
    stand = Stand(output=StageOutput(ok=False, reason=EXIT.words(), output_dir="out",
                                     exit_code=3))
    handle = await begin(stand, ItemWorkflow.run, item(DRAFT, DONE))

    fail = await stand.until("stage_failed")
    assert fail.data == {"reason": {"code": "agent_exit", "exit_code": 3,
                                    "said": "no key for the mail add-on"}}
    assert read_back == ["exit 3: no key for the mail add-on"]
    await handle.cancel()


async def test_a_model_loop_failure_stores_agent_failed_with_its_words(
        begin: Begin, read_back: list[str]) -> None:
    stand = Stand()
    handle = await begin(stand, ItemWorkflow.run,
                         item(DRAFT, DONE, writer=AgentView(loop=LoopView(max_turns=0))))

    fail = await stand.until("stage_failed")
    assert (fail.reason, fail.data) == (
        "agent writer: the turn limit of 0 model calls was reached",
        {"reason": {"code": "agent_failed", "agent": "writer",
                    "said": "the turn limit of 0 model calls was reached"}})
    assert read_back == []
    await handle.cancel()


async def test_a_denied_finish_stores_who_denied_it_and_their_words(
        begin: Begin, read_back: list[str]) -> None:
    publish = StageView(name="Publish", kind="work", approval="required")
    stand = Stand(output=StageOutput(ok=True, output_dir="out"))
    handle = await begin(stand, ItemWorkflow.run, item(publish, DONE))

    await stand.until("approval_asked")
    await handle.execute_update(DECIDE_UPDATE, DecideInput(
        approve=False, who="ann", at="2026-01-05T10:00:00Z", reason="wrong figures"),
        result_type=list[int])
    fail = await stand.until("stage_failed")
    assert (fail.reason, fail.data) == (
        "finish denied by ann: wrong figures",
        {"reason": {"code": "finish_denied", "who": "ann", "said": "wrong figures"}})
    assert read_back == []
    await handle.cancel()


async def test_ten_minutes_busy_stores_busy_too_long_with_the_slots_holders(
        begin: Begin, read_back: list[str]) -> None:
    stand = Stand(slot=SlotOutput(granted=False, reason=BUSY.words(), why=BUSY, position=1))
    handle = await begin(stand, ItemWorkflow.run,
                         item(DRAFT, DONE, writer=AgentView(max_concurrent_runs=1)))

    fail = await stand.until("stage_failed")
    assert (fail.reason, fail.data) == (
        "waiting for agent writer: 1 of 1 busy (items 01OTHER) for 10 minutes",
        {"reason": {"code": "busy_too_long", "agent": "writer", "busy": 1, "cap": 1,
                    "items": ["01OTHER"], "minutes": 10}})
    assert read_back == []
    await handle.cancel()


async def test_a_failed_command_piece_stores_the_runners_reason(
        begin: Begin, read_back: list[str]) -> None:
    stand = Stand(piece=PieceOutput(status="failed", agent="writer", reason=EXIT.words(),
                                    why=EXIT, exit_code=3))
    handle = await begin(stand, PieceWorkflow.run, piece())

    assert (await handle.result()).why == EXIT
    fail = await stand.until("piece_failed")
    assert fail.data["reason"] == {"code": "agent_exit", "exit_code": 3,
                                   "said": "no key for the mail add-on"}
    assert read_back == []


async def test_a_model_piece_and_a_busy_piece_store_their_codes(
        begin: Begin, read_back: list[str]) -> None:
    model = Stand(check=PieceCheckOutput(ok=True, agent="writer", loop=LoopView(max_turns=0)))
    await (await begin(model, PieceWorkflow.run, piece())).result()
    assert (await model.until("piece_failed")).data["reason"] == {
        "code": "agent_failed", "agent": "writer",
        "said": "the turn limit of 0 model calls was reached"}

    busy = Stand(check=PieceCheckOutput(ok=True, agent="writer", cap=1),
                 slot=SlotOutput(granted=False, reason=BUSY.words(), why=BUSY, position=1))
    await (await begin(busy, PieceWorkflow.run, piece())).result()
    assert (await busy.until("piece_failed")).data["reason"] == {
        "code": "busy_too_long", "agent": "writer", "busy": 1, "cap": 1,
        "items": ["01OTHER"], "minutes": 10}
    assert read_back == []

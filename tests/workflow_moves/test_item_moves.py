"""The item workflow carries out the process's moves (DESIGN.md, Rules: moving, approvals),
shown with stand-in activities on the time-skipping server: a review sends the item back, the
third request for changes stops it for a person, a failure waits for a person's retry, a
finish on an ``approval: required`` stage holds until a person decides.

The stand-ins answer the workflow's activity names with scripted results (the stage's
output, a passing check) and keep what they were given, so each test asserts the exact
stages run (stage, round, attempt, comments) and the exact facts written.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest
from temporalio import activity
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.engine.models import (
    ACCEPT_UPDATE,
    AWAIT_ELIGIBLE_ACTIVITY,
    CHECK_ACTIVITY,
    DECIDE_UPDATE,
    RECORD_ACTIVITY,
    RELEASE_ACTIVITY,
    RETRY_UPDATE,
    RUN_ACTIVITY,
    STATE_QUERY,
    CheckInput,
    CheckOutput,
    DecideInput,
    ItemInput,
    PersonInput,
    RecordInput,
    ReleaseInput,
    RunView,
    StageInput,
    StageOutput,
)
from bees_cli.engine.snapshot import AgentView, EngineSnapshot, ProcessView, StageView
from bees_cli.engine.workflows import ItemWorkflow

DRAFT = StageView(name="Draft", kind="work")
REVIEW = StageView(name="Review", kind="review", reviews="Draft")
DONE = StageView(name="Done", kind="done")
AGENTS = {"Draft": "writer", "Review": "reviewer", "Publish": "writer"}
ANN = PersonInput(who="ann", at="2026-01-05T10:00:00Z")

Ran = tuple[str, int, int, tuple[str, ...]]
"""A stage the stand-in ran: (stage, round, first attempt, comments it was given)."""


def ok(verdict: str | None = None, comments: tuple[str, ...] = ()) -> StageOutput:
    """A finished stage (a review's ``verdict`` with its ``comments``)."""
    return StageOutput(ok=True, verdict=verdict, comments=list(comments), output_dir="out")


def failed(reason: str) -> StageOutput:
    return StageOutput(ok=False, reason=reason, output_dir="out", exit_code=1)


@dataclass
class Script:
    """Stand-in activities: each stage's next scripted output, and what the run asked."""

    outputs: dict[str, list[StageOutput]]
    ran: list[Ran] = field(default_factory=list)
    facts: list[RecordInput] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def activities(self) -> list[Callable[..., object]]:
        @activity.defn(name=CHECK_ACTIVITY)
        async def check(check: CheckInput) -> CheckOutput:
            return CheckOutput(ok=True, agent=AGENTS[check.stage])

        @activity.defn(name=AWAIT_ELIGIBLE_ACTIVITY)
        async def await_eligible(check: CheckInput) -> CheckOutput:
            return CheckOutput(ok=True, agent=AGENTS[check.stage])

        @activity.defn(name=RUN_ACTIVITY)
        async def run_stage(given: StageInput) -> StageOutput:
            self.ran.append((given.stage, given.round, given.attempt_base,
                             tuple(given.comments)))
            out = self.outputs[given.stage].pop(0)
            return out.model_copy(update={"attempt": given.attempt_base})

        @activity.defn(name=RECORD_ACTIVITY)
        async def record(fact: RecordInput) -> None:
            self.facts.append(fact)
            self.changed.set()

        @activity.defn(name=RELEASE_ACTIVITY)
        async def release(given: ReleaseInput) -> None:
            return None

        return [check, await_eligible, run_stage, record, release]

    def said(self) -> list[tuple[str | None, str, str | None]]:
        """Return the facts written: (status, kind, stage)."""
        return [(f.status, f.kind, f.stage) for f in self.facts]

    async def until(self, kind: str, count: int = 1) -> RecordInput:
        """Wait until the ``count``-th fact of ``kind`` is written; return it."""
        async def seen() -> RecordInput:
            while True:
                found = [f for f in self.facts if f.kind == kind]
                if len(found) >= count:
                    return found[count - 1]
                self.changed.clear()
                await self.changed.wait()
        return await asyncio.wait_for(seen(), timeout=20)


@dataclass
class Run:
    handle: WorkflowHandle[ItemWorkflow, str]
    script: Script

    async def view(self) -> RunView:
        return await self.handle.query(STATE_QUERY, result_type=RunView)


Start = Callable[..., Awaitable[Run]]
"""``await start(script, *stages)``: the item's run on a worker with ``script``'s stand-ins."""


def item(*stages: StageView) -> ItemInput:
    snapshot = EngineSnapshot(
        process_name="p", process=ProcessView(stages=list(stages)),
        agents={"writer": AgentView(), "reviewer": AgentView()})
    return ItemInput(item_id=f"item-{uuid.uuid4().hex[:8]}", title="T", run_folder="/runs/T",
                     snapshot=snapshot)


@pytest.fixture
async def start(skip_env: WorkflowEnvironment) -> AsyncIterator[Start]:
    """Start an item's run on a worker with stand-in activities: ``await start(script,
    *stages)`` returns the :class:`Run`."""
    workers: list[Worker] = []

    async def begin(script: Script, *stages: StageView) -> Run:
        queue = f"moves-{uuid.uuid4().hex[:8]}"
        worker = Worker(skip_env.client, task_queue=queue, workflows=[ItemWorkflow],
                        activities=script.activities())
        workers.append(worker)
        asyncio.get_running_loop().create_task(worker.run())
        given = item(*stages)
        handle = await skip_env.client.start_workflow(
            ItemWorkflow.run, given, id=given.item_id, task_queue=queue)
        return Run(handle, script)

    yield begin
    for worker in workers:
        await worker.shutdown()


async def test_a_review_asking_for_changes_sends_the_item_back(start: Start) -> None:
    script = Script({"Draft": [ok(), ok()],
                     "Review": [ok("changes_requested", ("tighten the intro",)), ok("approve")]})
    run = await start(script, DRAFT, REVIEW, DONE)

    assert await run.handle.result() == "done"
    assert script.ran == [("Draft", 1, 1, ()), ("Review", 1, 1, ()),
                          ("Draft", 2, 1, ("tighten the intro",)), ("Review", 2, 1, ())]
    assert script.said()[-1] == ("done", "done", "Done")


async def test_the_third_request_for_changes_stops_the_item_until_a_person_accepts(
        start: Start) -> None:
    asked = [ok("changes_requested", (f"fix {n}",)) for n in (1, 2, 3)]
    script = Script({"Draft": [ok(), ok(), ok()], "Review": asked})
    run = await start(script, DRAFT, REVIEW, DONE)

    limit = await script.until("review_limit")
    assert (limit.status, limit.stage, limit.round, limit.key) == (
        "waiting for a person", "Review", 3, "Review:3:limit")
    assert limit.reason == "Review asked for changes 3 times"
    assert limit.data == {"rounds": [["fix 1"], ["fix 2"], ["fix 3"]]}
    view = await run.view()
    assert (view.state, view.stage, view.round, view.reason) == (
        "waiting for a person", "Review", 3, "Review asked for changes 3 times")

    assert await run.handle.execute_update(ACCEPT_UPDATE, ANN, result_type=str) == "Review"
    assert await run.handle.result() == "done"
    assert [r[:2] for r in script.ran] == [("Draft", 1), ("Review", 1), ("Draft", 2),
                                           ("Review", 2), ("Draft", 3), ("Review", 3)]
    accepted = await script.until("accepted")
    assert (accepted.status, accepted.stage, accepted.round, accepted.data) == (
        "starting", "Review", 3, {"who": "ann", "asked_at": "2026-01-05T10:00:00Z"})
    assert script.said()[-1] == ("done", "done", "Done")


async def test_a_retry_at_the_review_limit_redoes_the_work_with_the_last_comments(
        start: Start) -> None:
    asked = [ok("changes_requested", (f"fix {n}",)) for n in (1, 2, 3)]
    script = Script({"Draft": [ok(), ok(), ok(), ok()], "Review": [*asked, ok("approve")]})
    run = await start(script, DRAFT, REVIEW, DONE)

    await script.until("review_limit")
    assert await run.handle.execute_update(RETRY_UPDATE, ANN, result_type=str) == "Review"
    assert await run.handle.result() == "done"
    assert script.ran[-2:] == [("Draft", 4, 1, ("fix 3",)), ("Review", 4, 1, ())]


async def test_a_failed_stage_waits_for_a_retry_then_runs_again_as_its_next_attempt(
        start: Start) -> None:
    script = Script({"Draft": [failed("agent exited with 1"), ok()]})
    run = await start(script, DRAFT, DONE)

    fail = await script.until("stage_failed")
    assert (fail.status, fail.stage, fail.round, fail.reason, fail.data) == (
        "failed", "Draft", 1, "agent exited with 1",
        {"reason": {"code": "other", "text": "agent exited with 1"}})
    view = await run.view()
    assert (view.state, view.stage, view.reason) == ("failed", "Draft", "agent exited with 1")
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await run.handle.execute_update(ACCEPT_UPDATE, ANN, result_type=str)
    assert str(refused.value.cause) == (
        "Refused: it is failed at Draft: only an item stopped at the review limit can be accepted")

    assert await run.handle.execute_update(RETRY_UPDATE, ANN, result_type=str) == "Draft"
    assert await run.handle.result() == "done"
    assert script.ran == [("Draft", 1, 1, ()), ("Draft", 1, 2, ())]
    assert [s for s in script.said() if s[1] in ("stage_failed", "retried", "done")] == [
        ("failed", "stage_failed", "Draft"), ("starting", "retried", "Draft"),
        ("done", "done", "Done")]


async def test_an_approval_stage_holds_its_finish_until_a_person_approves(start: Start) -> None:
    publish = StageView(name="Publish", kind="work", approval="required")
    script = Script({"Publish": [ok()]})
    run = await start(script, publish, DONE)

    asked = await script.until("approval_asked")
    assert (asked.status, asked.stage, asked.round, asked.reason) == (
        "waiting for approval", "Publish", 1, "finish Publish: output out")
    view = await run.view()
    assert (view.state, view.stage, view.reason) == (
        "waiting for approval", "Publish", "finish Publish: output out")
    assert [(r.id, r.kind, r.status) for r in view.requests] == [(1, "finish", "waiting")]

    decided = DecideInput(approve=True, who="ann", at="2026-01-05T10:00:00Z")
    assert await run.handle.execute_update(DECIDE_UPDATE, decided,
                                           result_type=list[int]) == [1]
    assert await run.handle.result() == "done"
    assert script.ran == [("Publish", 1, 1, ())]
    # the decision's fact and the run's next step are written side by side: any order
    assert sorted(s[1] for s in script.said()) == ["approval_asked", "approved", "done"]


async def test_a_denied_finish_fails_the_stage_with_the_reason(start: Start) -> None:
    publish = StageView(name="Publish", kind="work", approval="required")
    script = Script({"Publish": [ok(), ok()]})
    run = await start(script, publish, DONE)

    await script.until("approval_asked")
    denied = DecideInput(approve=False, who="ann", at="2026-01-05T10:00:00Z",
                         reason="wrong figures")
    await run.handle.execute_update(DECIDE_UPDATE, denied, result_type=list[int])
    fail = await script.until("stage_failed")
    assert (fail.status, fail.stage, fail.reason) == (
        "failed", "Publish", "finish denied by ann: wrong figures")
    assert (await run.view()).state == "failed"

    await run.handle.execute_update(RETRY_UPDATE, ANN, result_type=str)
    await script.until("approval_asked", count=2)
    assert (await run.view()).state == "waiting for approval"
    await run.handle.cancel()

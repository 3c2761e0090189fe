"""This computer's worker: the item workflow and its activities on queue ``bees-<machine_id>``."""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Awaitable, Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from bees_cli.agents.action_call import ActionRunner
from bees_cli.engine.activities import BeesActivities
from bees_cli.engine.fire_workflow import FireWorkflow
from bees_cli.engine.handover import HandoverActivities
from bees_cli.engine.model_activities import DelegateRunner, ModelActivities
from bees_cli.engine.piece_activities import PieceActivities
from bees_cli.engine.pieces import PieceWorkflow
from bees_cli.engine.workflows import ItemWorkflow
from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord

if TYPE_CHECKING:
    from bees_cli.agents.mcp_sessions import McpSessions
    from bees_cli.engine.schedules import FireActivities

Starter = Callable[[str], Awaitable[int]]

WORKFLOW_MODULES = (
    "bees_cli.engine.fire_workflow", "bees_cli.engine.model_loop", "bees_cli.engine.pieces",
    "bees_cli.engine.stage_check", "bees_cli.engine.workflow_checks",
    "bees_cli.engine.workflow_gate", "bees_cli.engine.workflow_memory",
    "bees_cli.engine.workflow_policies", "bees_cli.engine.workflow_state",
    "bees_cli.engine.workflow_waits", "bees_cli.engine.workflows")
"""Bees' workflow code, passed through the worker's sandbox (issue 29, point 4).

The sandbox would otherwise execute these modules again for every run (temporalio's
``workflow.defn`` checks of each workflow class, ``inspect``-heavy): about a third of an item's
CPU with no-op stages. Passed through, they are imported once, with the worker. What that
gives up: isolation of module state between runs (these modules keep none: constants,
functions and classes; each run's state is its workflow object's) and the sandbox's proxies of
restricted modules inside their code (``time``, ``random``, ``datetime.now``…; the sandbox's
builtins restrictions still apply). Those checks still run on the same code where histories
replay: ``tests/engine/test_replay.py`` replays every saved history under the full sandbox.
"""


@cache
def build_id() -> str:
    """Return this worker's build id: ``bees-VERSION-DIGEST``, DIGEST the first 16 hex digits
    of the SHA-256 of the sources of :data:`WORKFLOW_MODULES` (so it changes with the
    workflow code).

    temporalio's default reads the code of every module loaded (``load_default_build_id``:
    over a thousand in ``bees run``, about a third of a second of a worker's start; issue 29,
    point 4). Bees uses no worker versioning; the id only names the build in the engine.
    """
    from bees_cli import __version__

    digest = hashlib.sha256()
    for name in WORKFLOW_MODULES:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, name
        with open(spec.origin, "rb") as source:
            digest.update(source.read())
    return f"bees-{__version__}-{digest.hexdigest()[:16]}"


def workflow_runner() -> SandboxedWorkflowRunner:
    """Return the sandbox Bees' worker runs workflows in: Temporal's default restrictions,
    :data:`WORKFLOW_MODULES` passed through."""
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*WORKFLOW_MODULES))


class BeesWorker(Worker):
    """Temporal's worker, closing what the model activities keep for its life (one HTTP
    client per model server, issue 29 point 4) when it stops, however it is stopped
    (``async with``, or :meth:`shutdown` of a task running :meth:`run`)."""

    def __init__(self, *args: Any, models: ModelActivities, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.models = models

    async def run(self) -> None:
        """Run until shut down, then close the model activities' clients."""
        try:
            await super().run()
        finally:
            await self.models.aclose()


def make_worker(client: Client, task_queue: str, record: LocalRecord, *, computer: Computer,
                start: Starter | None = None, heartbeat_every: float = 2.0,
                fires: FireActivities | None = None, act: ActionRunner | None = None,
                models: ModelActivities | None = None,
                delegate: DelegateRunner | None = None,
                mcp_sessions: McpSessions | None = None) -> BeesWorker:
    """Return a worker running :class:`ItemWorkflow` and :class:`BeesActivities` on ``task_queue``,
    and the schedule fire workflow with its activity.

    Args:
        client: a client made by :func:`bees_cli.engine.client.connect`.
        task_queue: this computer's queue (:func:`bees_cli.engine.models.task_queue`).
        record: the local record the activities write.
        computer: this computer (owner claims, the home its stages' programs get).
        start: starts a just-fired item's run (``bees run`` passes the use case), or None
            (the item is left pending: ``bees run``'s next pass starts it).
        heartbeat_every: seconds between heartbeats of a running stage.
        fires: the fire activities (default: this computer's, starting with ``start``).
        act: runs a model agent's add-on tool, as a typed call, through ``bees action``'s
            gate (the use case ``call_action``; None: such tools are refused).
        models: the model loop's activities (default: this computer's, with ``act``).
        delegate: runs a model agent's ``delegate`` tool as ``bees delegate`` (the use case
            ``run_delegate``; None: the tool is not offered).
        mcp_sessions: the local MCP servers ``act`` holds for the stages; the stage's end,
            a cancel and a handover stop them (None: none are held).

    Each stage's program gets ``BEES_TEMPORAL_ADDRESS`` (this client's server) and the
    computer's ``BEES_HOME`` (when it has one), so ``bees action`` reaches this computer's
    run and journal, whatever ``BEES_HOME`` this process has.
    """
    from bees_cli.agents.groups import groups_dir
    from bees_cli.engine.schedules import FireActivities

    engine_env = {"BEES_TEMPORAL_ADDRESS": client.service_client.config.target_host,
                  **computer.process_env()}
    activities = BeesActivities(record, heartbeat_every=heartbeat_every, engine_env=engine_env,
                                groups=groups_dir(computer.data_dir), mcp_sessions=mcp_sessions)
    fires = fires or FireActivities(lambda: computer, start=start)
    models = models or ModelActivities(record, act=act, engine_env=engine_env,
                                       heartbeat_every=heartbeat_every, delegate=delegate)
    pieces = PieceActivities(record, engine_env=engine_env, heartbeat_every=heartbeat_every)
    return BeesWorker(
        client,
        models=models,
        task_queue=task_queue,
        workflows=[ItemWorkflow, FireWorkflow, PieceWorkflow],
        workflow_runner=workflow_runner(),
        build_id=build_id(),
        activities=(activities.all() + fires.all()
                    + HandoverActivities(record, computer, mcp_sessions).all()
                    + models.all() + pieces.all()),
    )

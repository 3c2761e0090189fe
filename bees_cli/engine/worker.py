"""This computer's worker: the item workflow and its activities on queue ``bees-<machine_id>``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from temporalio.client import Client
from temporalio.worker import Worker

from bees_cli.engine.activities import BeesActivities
from bees_cli.engine.handover import HandoverActivities
from bees_cli.engine.workflows import ItemWorkflow
from bees_cli.record.local import LocalRecord

if TYPE_CHECKING:
    from bees_cli.engine.schedules import FireActivities
    from bees_cli.machine.computer import Computer


def make_worker(client: Client, task_queue: str, record: LocalRecord, *,
                heartbeat_every: float = 2.0, computer: Computer | None = None,
                fires: FireActivities | None = None) -> Worker:
    """Return a worker running :class:`ItemWorkflow` and :class:`BeesActivities` on ``task_queue``,
    and the schedule fire workflow with its activity.

    Args:
        client: a client made by :func:`bees_cli.engine.client.connect`.
        task_queue: this computer's queue (:func:`bees_cli.engine.models.task_queue`).
        record: the local record the activities write.
        heartbeat_every: seconds between heartbeats of a running stage.
        computer: this computer for owner claims (default: the one ``BEES_HOME`` describes).
        fires: the fire activities (default: this computer's, starting claimed items).

    Each stage's program gets ``BEES_TEMPORAL_ADDRESS`` (this client's server) and
    ``BEES_HOME`` (when set here), so ``bees action`` reaches this computer's run.
    """
    import os

    engine_env = {"BEES_TEMPORAL_ADDRESS": client.service_client.config.target_host}
    if os.environ.get("BEES_HOME"):
        engine_env["BEES_HOME"] = os.environ["BEES_HOME"]
    activities = BeesActivities(record, heartbeat_every=heartbeat_every, engine_env=engine_env)
    from bees_cli.engine.fire_workflow import FireWorkflow
    from bees_cli.engine.schedules import FireActivities
    from bees_cli.engine.service import start_pending

    async def start(item_id: str) -> int:
        return await start_pending(client, record, only=item_id, computer=computer)

    fires = fires or FireActivities(start=start)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[ItemWorkflow, FireWorkflow],
        activities=activities.all() + fires.all() + HandoverActivities(record, computer).all(),
    )

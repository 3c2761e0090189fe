"""This computer's worker: the item workflow and its activities on queue ``bees-<machine_id>``."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.worker import Worker

from bees_cli.engine.activities import BeesActivities
from bees_cli.engine.workflows import ItemWorkflow
from bees_cli.record.local import LocalRecord


def make_worker(client: Client, task_queue: str, record: LocalRecord, *,
                heartbeat_every: float = 2.0) -> Worker:
    """Return a worker running :class:`ItemWorkflow` and :class:`BeesActivities` on ``task_queue``.

    Args:
        client: a client made by :func:`bees_cli.engine.client.connect`.
        task_queue: this computer's queue (:func:`bees_cli.engine.models.task_queue`).
        record: the local record the activities write.
        heartbeat_every: seconds between heartbeats of a running stage.

    Each stage's program gets ``BEES_TEMPORAL_ADDRESS`` (this client's server) and
    ``BEES_HOME`` (when set here), so ``bees action`` reaches this computer's run.
    """
    import os

    engine_env = {"BEES_TEMPORAL_ADDRESS": client.service_client.config.target_host}
    if os.environ.get("BEES_HOME"):
        engine_env["BEES_HOME"] = os.environ["BEES_HOME"]
    activities = BeesActivities(record, heartbeat_every=heartbeat_every, engine_env=engine_env)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[ItemWorkflow],
        activities=activities.all(),
    )

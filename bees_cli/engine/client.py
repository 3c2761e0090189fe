"""Temporal client helpers: connect with the pydantic converter, start an item's run."""

from __future__ import annotations

import asyncio
import functools

from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

from bees_cli.engine.models import WORKFLOW_NAME, ItemInput
from bees_cli.errors import EngineError

CONNECT_TIMEOUT = 15.0
"""Seconds to keep trying to reach a Temporal server that is starting."""


@functools.cache
def quiet_runtime() -> Runtime:
    """Return this process's Temporal runtime, its core logging only errors (made once).

    Why: the SDK core warns on stderr about routine events after a restart (a workflow
    task that timed out while no worker ran), which reads like a failure to a user.
    """
    logging = LoggingConfig(filter=TelemetryFilter(core_level="ERROR", other_level="ERROR"))
    return Runtime(telemetry=TelemetryConfig(logging=logging))


async def connect(address: str, *, timeout: float = CONNECT_TIMEOUT) -> Client:
    """Connect to the Temporal server at ``address`` (``host:port``), namespace ``default``.

    Retries for up to ``timeout`` seconds (a dev server answers 0.1–0.2 s after it starts).

    Raises:
        EngineError: the server did not answer in time.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            return await Client.connect(
                address, data_converter=pydantic_data_converter, runtime=quiet_runtime()
            )
        except Exception as error:  # noqa: BLE001 - any connection failure is retried
            if loop.time() > deadline:
                raise EngineError(f"cannot reach the Temporal engine at {address}: {error}",
                                  hint="is `bees run` up? see temporal.log in the data dir"
                                  ) from error
            await asyncio.sleep(0.1)


async def start_item(client: Client, item: ItemInput, task_queue: str) -> bool:
    """Start the run of ``item`` as workflow ``item.item_id`` on ``task_queue``.

    An id already used (started by another process, or finished) is never started again,
    except by a continued run (``item.run`` > 1, after a handover): the workflow id stays the
    item's id and the relinquished run, which has ended, is followed by a new one
    (``ALLOW_DUPLICATE``; a run still open with that id is never started twice).

    Returns:
        True when this call started it, False when it was already started.
    """
    try:
        handle: WorkflowHandle[object, object] = await client.start_workflow(
            WORKFLOW_NAME, item, id=item.item_id, task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE if item.run > 1
            else WorkflowIDReusePolicy.REJECT_DUPLICATE,
        )
    except WorkflowAlreadyStartedError:
        return False
    del handle
    return True

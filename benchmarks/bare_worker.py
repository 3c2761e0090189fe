"""The floor of ``run_start.py``: a bare ``temporalio`` worker process that starts, starts one
workflow eagerly and runs its one activity, which writes a marker file.

Run: ``python bare_worker.py ADDRESS QUEUE MARKER`` (``run_start.py`` starts it and stops it
once the marker exists).
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker


@activity.defn(name="bench.mark")
async def mark(path: str) -> str:
    """Write the marker: the floor's first stage ran."""
    Path(path).touch()
    return "ok"


@workflow.defn(name="bench.first")
class First:
    """One activity, as a first stage."""

    @workflow.run
    async def run(self, path: str) -> str:
        """Run the activity."""
        return await workflow.execute_activity(mark, path,
                                               start_to_close_timeout=timedelta(seconds=30))


async def main(address: str, queue: str, marker: str) -> None:
    """Connect, start the worker and the workflow, and wait (stopped from outside)."""
    client = await Client.connect(address)
    async with Worker(client, task_queue=queue, workflows=[First], activities=[mark]):
        await client.start_workflow(First.run, marker, id=queue, task_queue=queue,
                                    request_eager_start=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))

"""The floor of ``engine.py``: a bare workflow of three no-op activities, in a module of its
own, as a plain ``temporalio`` user writes one.

The workflow sandbox imports a workflow's module again for each run. Defined in
``engine.py`` itself (``__main__``), the sandbox ran that whole script again from source
for every bare run, a cost a bare worker does not pay; here it runs this small module from
its bytecode (``engine.py`` compiles it first).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn(name="bench.noop")
async def noop(_: str) -> str:
    """A bare activity: returns at once."""
    return "ok"


@workflow.defn(name="bench.three")
class ThreeActivities:
    """A bare workflow: three no-op activities in a row, like three stages; started eagerly
    (``request_eager_start``) as Bees starts items."""

    @workflow.run
    async def run(self, name: str) -> str:
        """Run the three activities."""
        for _ in range(3):
            await workflow.execute_activity(noop, name,
                                            start_to_close_timeout=timedelta(seconds=30))
        return "done"

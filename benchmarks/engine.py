"""Measure the engine: items per second through a three-stage process of no-op command agents,
and Bees' per-stage overhead beside a bare Temporal activity round trip, in the same run.

Run: ``.venv/bin/python benchmarks/engine.py [--items 30] [--sequential 3] [--rounds 5]``
(``--quick``: one round of one item, a smoke run). Uses
a temporary ``BEES_HOME`` and a dev server of its own (the ``temporal`` binary of this
environment). The per-stage overhead and the bare activity are measured in interleaved rounds
(Bees then bare, ``--rounds`` times) and reported as median (min–max) over the rounds, in
wall time and in this process's CPU time (the worker and the client; steadier than wall time
on a loaded machine; the dev server's CPU is not counted).

With ``--spawn both``, each round runs the Bees items twice, once starting each stage's
program through ``setpriv`` (vfork, :mod:`bees_cli.agents.spawn`) and once with the
``preexec_fn`` (CPython forks the worker; the way before, and the fallback where ``setpriv``
is missing), and reports both against the same bare rounds.

The ``bees_cli`` package imported is byte-compiled first, as ``pip install`` leaves it: with
``PYTHONDONTWRITEBYTECODE`` set and no ``__pycache__``, the workflow sandbox compiles the
workflow modules from source for every item's run, a cost an installed Bees does not pay.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from engine_floor import ThreeActivities, noop  # this folder (the script's) is on sys.path

PROCESS = """\
stages:
  - {name: One, kind: work, agents: [noop]}
  - {name: Two, kind: work, agents: [noop]}
  - {name: Three, kind: work, agents: [noop]}
  - {name: Done, kind: done}
"""


def make_workspace(root: Path) -> None:
    """Write a workspace with one no-op agent (``true``) and a three-stage process."""
    (root / "agents").mkdir(parents=True)
    (root / "processes").mkdir()
    (root / "bees.yaml").write_text("name: bench\n")
    (root / "agents" / "noop.yaml").write_text('runner:\n  command: ["true"]\n')
    (root / "processes" / "three.yaml").write_text(PROCESS)


def byte_compile() -> None:
    """Write the bytecode of the imported ``bees_cli`` package and of the floor's module
    (``compileall`` writes it even when ``PYTHONDONTWRITEBYTECODE`` is set)."""
    import compileall

    import bees_cli

    compileall.compile_dir(Path(bees_cli.__file__).parent, quiet=1)
    compileall.compile_file(Path(__file__).with_name("engine_floor.py"), quiet=1)


def spread(values: list[float], scale: float = 1.0, unit: str = "") -> str:
    """Return ``median (min–max)`` of ``values`` times ``scale``, one decimal."""
    return (f"{statistics.median(values) * scale:.1f}{unit} ({min(values) * scale:.1f}–"
            f"{max(values) * scale:.1f}{unit})")


def use_spawn(way: str) -> None:
    """Make stages start their programs ``way``: ``setpriv``, ``preexec_fn`` or ``default``
    (whatever :mod:`bees_cli.agents.spawn` finds here)."""
    from bees_cli.agents import runner, spawn

    if way == "preexec_fn":
        runner.fast_launch = lambda *_: None  # the fallback: the runner's preexec_fn
    else:
        runner.fast_launch = spawn.fast_launch
        if way == "setpriv":
            assert spawn.fast_launch(["true"], Path.cwd(), dict(os.environ)) is not None, \
                "setpriv or /bin/sh missing, the chain fails, or a name sh cannot pass on"


async def main(items: int, sequential: int, rounds: int, ways: list[str]) -> None:
    """Run the measures and print them."""
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment
    from temporalio.worker import Worker

    from bees_cli.engine.client import EngineGateway
    from bees_cli.engine.models import task_queue
    from bees_cli.engine.worker import make_worker
    from bees_cli.machine.computer import Computer
    from bees_cli.record.aio import AsyncRecord
    from bees_cli.record.local import LocalRecord
    from bees_cli.usecases.items import create_item
    from bees_cli.usecases.run import start_pending

    temporal = Path(sys.executable).parent / "temporal"
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal), data_converter=pydantic_data_converter,
        dev_server_log_level="error")
    workspace = Path(os.environ["BEES_HOME"]) / "ws"
    make_workspace(workspace)
    here = Computer.load()
    record = LocalRecord(here.record_path)
    aio = AsyncRecord(record)
    queue = task_queue(here.machine_id)
    engine = EngineGateway(env.client)

    async def bees_items(count: int, *, one_by_one: bool) -> tuple[float, float]:
        ids = [create_item(workspace, "three", title="b", agents=[], folders=[],
                           record=record, computer=here).id for _ in range(count)]
        start, cpu = time.perf_counter(), time.process_time()
        if one_by_one:
            for item_id in ids:
                await start_pending(engine, aio, here, only=item_id)
                await env.client.get_workflow_handle(item_id).result()
        else:
            await start_pending(engine, aio, here)
            await asyncio.gather(*(env.client.get_workflow_handle(i).result() for i in ids))
        return time.perf_counter() - start, time.process_time() - cpu

    runs = [0]

    async def bare(count: int) -> tuple[float, float]:
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(count):
            runs[0] += 1  # eager start, as Bees starts items (EngineGateway.start)
            handle = await env.client.start_workflow(
                ThreeActivities.run, "b", id=f"bare-{runs[0]}", task_queue="bench-bare",
                request_eager_start=True)
            await handle.result()
        return time.perf_counter() - start, time.process_time() - cpu

    try:
        async with make_worker(env.client, queue, record, computer=here,
                               heartbeat_every=5.0), Worker(
                env.client, task_queue="bench-bare", workflows=[ThreeActivities],
                activities=[noop]):
            await bees_items(1, one_by_one=True)  # warm up
            await bare(1)
            many = (await bees_items(items, one_by_one=False))[0] if items else 0.0
            stages: dict[str, list[float]] = {way: [] for way in ways}
            bares: list[float] = []
            stage_cpu: dict[str, list[float]] = {way: [] for way in ways}
            bare_cpu: list[float] = []
            loads: list[float] = []
            for index in range(rounds):  # interleaved: both sides see the same load
                for way in ways if index % 2 == 0 else ways[::-1]:
                    use_spawn(way)
                    wall, cpu = await bees_items(sequential, one_by_one=True)
                    stages[way].append(wall / (sequential * 3))
                    stage_cpu[way].append(cpu / (sequential * 3))
                wall, cpu = await bare(sequential)
                bares.append(wall / (sequential * 3))
                bare_cpu.append(cpu / (sequential * 3))
                loads.append(os.getloadavg()[0])
    finally:
        await env.shutdown()
    def tag(way: str) -> str:
        return "" if way == "default" else f" ({way})"

    width = max(len(f"ratio Bees stage / bare activity{tag(way)}: ") for way in ways)
    if items:
        print(f"items/s (3 stages, {items} items at once): {items / many:.2f}")
    print(f"median (min-max) over {rounds} interleaved rounds of {sequential} items each, "
          f"load {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores:")
    for title, bees, base in (("wall time", stages, bares),
                              ("CPU of this process (worker and client; not the dev server)",
                               stage_cpu, bare_cpu)):
        print(f"{title}, per stage:")
        for way in ways:
            print(f"{'Bees per stage' + tag(way) + ':':{width}}{spread(bees[way], 1000, ' ms')}")
        print(f"{'bare Temporal activity round trip:':{width}}{spread(base, 1000, ' ms')}")
        for way in ways:
            ratios = [stage / floor for stage, floor in zip(bees[way], base, strict=True)]
            print(f"{'ratio Bees stage / bare activity' + tag(way) + ':':{width}}"
                  f"{spread(ratios, 1, 'x')}")
        if len(ways) == 2:  # the two ways in the same round, against each other
            paired = [one / two for one, two in zip(bees[ways[0]], bees[ways[1]], strict=True)]
            print(f"{f'ratio {ways[0]} / {ways[1]}, same round:':{width}}"
                  f"{spread(paired, 1, 'x')}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=30, help="items run at once")
    parser.add_argument("--sequential", type=int, default=3,
                        help="items run one after another in each round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--quick", action="store_true",
                        help="one round of one item, none at once (a smoke run)")
    parser.add_argument("--spawn", choices=["default", "setpriv", "preexec_fn", "both"],
                        default="default", help="how stages start their programs (both: "
                        "setpriv and preexec_fn in each round)")
    options = parser.parse_args()
    if options.quick:
        options.items, options.sequential, options.rounds = 0, 1, 1
    byte_compile()
    with tempfile.TemporaryDirectory() as home:
        os.environ["BEES_HOME"] = home
        asyncio.run(main(options.items, options.sequential, options.rounds,
                         ["setpriv", "preexec_fn"] if options.spawn == "both"
                         else [options.spawn]))
    sys.stdout.flush()
    os._exit(0)

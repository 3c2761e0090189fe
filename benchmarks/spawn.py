"""Measure starting a stage's program from a big worker: ``preexec_fn`` (fork) against setpriv.

Run: ``.venv/bin/python benchmarks/spawn.py [--spawns 50] [--rounds 5] [--ballast-mb 170]``
(``--quick``: one round of 5 starts, a smoke run).
The process first fills ``--ballast-mb`` MB (a worker's resident size), then starts ``true``
``--spawns`` times in a row each way, in interleaved rounds, as the runner does
(:func:`~bees_cli.agents.runner.run_command_stage`): with
:func:`~bees_cli.agents.groups.die_with_parent` as ``preexec_fn`` (CPython forks the whole
process), through :func:`~bees_cli.agents.spawn.fast_launch` (vfork, then ``setpriv`` and
``sh``, the environment in the process environment), and bare (vfork of ``true`` with no
parent-death signal: the floor). Reports the median (min–max) per start of wall time, of
this process's CPU time, and of this process's plus its children's CPU time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import time
from pathlib import Path
from typing import Literal

from bees_cli.agents.groups import die_with_parent
from bees_cli.agents.spawn import fast_launch

Way = Literal["preexec_fn", "setpriv", "bare"]
WAYS: tuple[Way, ...] = ("preexec_fn", "setpriv", "bare")


async def start(way: Way, env: dict[str, str], cwd: Path) -> None:
    """Start ``true`` one way and wait for it."""
    if way == "setpriv":
        launch = fast_launch(["true"], cwd, env)
        assert launch is not None, "setpriv or sh missing, or a name sh cannot pass on"
        proc = await asyncio.create_subprocess_exec(*launch.argv, cwd=cwd, env=launch.env,
                                                    stdin=subprocess.DEVNULL,
                                                    start_new_session=True)
    else:
        proc = await asyncio.create_subprocess_exec(
            "true", cwd=cwd, env=env, stdin=subprocess.DEVNULL, start_new_session=True,
            preexec_fn=die_with_parent() if way == "preexec_fn" else None)
    assert await proc.wait() == 0


def cpu_with_children() -> float:
    """Return the CPU seconds of this process and its reaped children."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


async def batch(way: Way, spawns: int) -> tuple[float, float, float]:
    """Return ms per start: wall, this process's CPU, CPU with children."""
    env, cwd = dict(os.environ), Path.cwd()
    wall, own, total = time.perf_counter(), time.process_time(), cpu_with_children()
    for _ in range(spawns):
        await start(way, env, cwd)
    return ((time.perf_counter() - wall) / spawns * 1e3,
            (time.process_time() - own) / spawns * 1e3,
            (cpu_with_children() - total) / spawns * 1e3)


async def main(spawns: int, rounds: int) -> None:
    """Run the interleaved rounds and print the figures."""
    found: dict[Way, list[tuple[float, float, float]]] = {way: [] for way in WAYS}
    for _ in range(rounds):
        for way in WAYS:
            found[way].append(await batch(way, spawns))
    print(f"resident {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB, "
          f"load {os.getloadavg()[0]:.1f}; median (min-max) ms per start over {rounds} rounds")
    for way in WAYS:
        cells = []
        for index, label in enumerate(("wall", "CPU", "CPU+children")):
            values = [row[index] for row in found[way]]
            cells.append(f"{label} {statistics.median(values):6.2f} "
                         f"({min(values):.2f}-{max(values):.2f})")
        print(f"{way:11} " + "   ".join(cells))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spawns", type=int, default=50, help="starts per way and round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--ballast-mb", type=int, default=170, help="resident MB to hold")
    parser.add_argument("--quick", action="store_true",
                        help="one round of 5 starts from 20 MB (a smoke run)")
    args = parser.parse_args()
    if args.quick:
        args.spawns, args.rounds, args.ballast_mb = 5, 1, 20
    ballast = [bytearray(os.urandom(1 << 20)) for _ in range(args.ballast_mb)]
    asyncio.run(main(args.spawns, args.rounds))

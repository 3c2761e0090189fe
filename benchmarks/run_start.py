"""Measure how long ``bees run`` takes to reach its first stage, against a bare Temporal
worker process starting and running one no-op activity on the same dev server (issue 29,
point 4).

Run: ``.venv/bin/python benchmarks/run_start.py [--rounds 5] [--base-path DIR]``
(``--quick``: one round, a smoke run). One Temporal dev server (the ``temporal`` binary of
this environment) is shared by every process; rounds interleave Bees and the floor (and the
base tree's Bees with ``--base-path``, e.g. a ``git archive`` of main), so each sees the
same load.

Bees: a fresh ``BEES_HOME`` with one pending item of a one-stage process whose command agent
is ``touch MARKER``; ``python -m bees_cli run -w WS --temporal-address ADDR`` is started and
timed until the marker exists (the stage's program ran), then stopped. Floor: a fresh
``python bare_worker.py ADDR QUEUE MARKER`` (this folder): it connects, starts a
``temporalio`` worker with one workflow and one activity, starts the workflow eagerly (as
Bees starts items), and the activity writes the marker. Both are measured alike: wall time
from the process's start to the marker, and the process's CPU (user + system, all its
threads, from ``/proc/PID/stat``) at that moment.

Both run with the checkout first on ``PYTHONPATH`` and ``bees_cli`` byte-compiled, as a
``pip install`` leaves it (an editable install's import hook would add to Bees only).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
TEMPORAL = Path(sys.executable).parent / "temporal"
TICK = os.sysconf("SC_CLK_TCK")

PROCESS = """\
stages:
  - {name: Work, kind: work, agents: [marker]}
  - {name: Done, kind: done}
"""


def cpu_of(pid: int) -> float:
    """Return the seconds of CPU (user + system, every thread) process ``pid`` used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def time_to_marker(argv: list[str], env: dict[str, str], marker: Path,
                   log: Path) -> tuple[float, float]:
    """Start ``argv``; return (wall seconds, CPU seconds) until ``marker`` exists; stop it."""
    with open(log, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    try:
        deadline = start + 120
        while not marker.exists():
            if proc.poll() is not None or time.perf_counter() > deadline:
                raise RuntimeError(f"{argv[:4]} never reached the marker:\n"
                                   + log.read_text(errors="replace")[-3000:])
            time.sleep(0.002)
        wall = time.perf_counter() - start
        cpu = cpu_of(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return wall, cpu


def byte_compile(tree: Path) -> None:
    """Write the bytecode of ``tree``'s ``bees_cli``, as ``pip install`` leaves it."""
    import compileall

    compileall.compile_dir(tree / "bees_cli", quiet=1)


class Bench:
    """The shared dev server's address, a scratch folder, and a count of runs."""

    def __init__(self, root: Path, address: str) -> None:
        self.root, self.address, self.runs = root, address, 0

    def bees(self, tree: Path) -> tuple[float, float]:
        """Time ``bees run`` (of ``tree``) from its start to its first stage's program."""
        self.runs += 1
        home, folder = self.root / f"home-{self.runs}", self.root / f"ws-{self.runs}"
        marker = self.root / f"bees-{self.runs}.marker"
        for relative, text in {
                "bees.yaml": "name: bench\n",
                "agents/marker.yaml": f'runner:\n  command: ["touch", "{marker}"]\n',
                "processes/one.yaml": PROCESS}.items():
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_text(text)
        env = {**os.environ, "BEES_HOME": str(home), "PYTHONPATH": str(tree)}
        subprocess.run(  # the pending item, made by the tree's own Bees
            [PYTHON, "-c", "import sys; from pathlib import Path; "
             "from bees_cli.machine.computer import Computer; "
             "from bees_cli.record.local import LocalRecord; "
             "from bees_cli.usecases.items import create_item; here = Computer.load(); "
             "create_item(Path(sys.argv[1]), 'one', title='first', agents=[], folders=[], "
             "record=LocalRecord(here.record_path), computer=here)", str(folder)],
            env=env, check=True)
        return time_to_marker(
            [PYTHON, "-m", "bees_cli", "run", "-w", str(folder), "--temporal-address",
             self.address], env, marker, self.root / f"bees-{self.runs}.log")

    def bare(self) -> tuple[float, float]:
        """Time the bare worker process from its start to its activity."""
        self.runs += 1
        marker = self.root / f"bare-{self.runs}.marker"
        return time_to_marker(
            [PYTHON, str(HERE / "bare_worker.py"), self.address, f"bare-{self.runs}",
             str(marker)], dict(os.environ), marker, self.root / f"bare-{self.runs}.log")


def spread(values: list[float], scale: float = 1.0, unit: str = "") -> str:
    """Return ``median (min–max)`` of ``values`` times ``scale``."""
    return (f"{statistics.median(values) * scale:.1f}{unit} ({min(values) * scale:.1f}–"
            f"{max(values) * scale:.1f}{unit})")


async def main(rounds: int, trees: dict[str, Path]) -> None:
    """Run the rounds and print the figures."""
    from temporalio.testing import WorkflowEnvironment

    env = await WorkflowEnvironment.start_local(dev_server_existing_path=str(TEMPORAL),
                                                dev_server_log_level="error")
    walls: dict[str, list[float]] = {name: [] for name in [*trees, "bare"]}
    cpus: dict[str, list[float]] = {name: [] for name in [*trees, "bare"]}
    loads: list[float] = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            bench = Bench(Path(folder), env.client.service_client.config.target_host)
            for tree in trees.values():  # warm up: page cache, the server's namespaces
                await asyncio.to_thread(bench.bees, tree)
            await asyncio.to_thread(bench.bare)
            order = [*trees, "bare"]
            for index in range(rounds):
                for name in order if index % 2 == 0 else order[::-1]:
                    wall, cpu = await asyncio.to_thread(
                        bench.bare if name == "bare" else bench.bees, *(
                            [] if name == "bare" else [trees[name]]))
                    walls[name].append(wall)
                    cpus[name].append(cpu)
                loads.append(os.getloadavg()[0])
    finally:
        await env.shutdown()
    print(f"median (min-max) over {rounds} interleaved rounds, load {min(loads):.1f}-"
          f"{max(loads):.1f} on {os.cpu_count()} cores:")
    for title, figures in (("wall time to the first stage", walls),
                           ("CPU of the process until then", cpus)):
        print(f"{title}:")
        for name, values in figures.items():
            print(f"  {name:8s} {spread(values, 1000, ' ms')}")
        for name in trees:
            ratios = [one / floor for one, floor in zip(figures[name], figures["bare"],
                                                          strict=True)]
            print(f"  ratio {name} / bare: {spread(ratios, 1, 'x')}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--base-path", type=Path, default=None,
                        help="another checkout (e.g. main's) measured in the same rounds")
    parser.add_argument("--quick", action="store_true", help="one round (a smoke run)")
    options = parser.parse_args()
    trees = {"bees": HERE.parent}
    if options.base_path is not None:
        trees = {"base": options.base_path.resolve(), **trees}
    for tree in trees.values():
        byte_compile(tree)
    asyncio.run(main(1 if options.quick else options.rounds, trees))
    sys.stdout.flush()
    os._exit(0)  # as engine.py: the engine's native threads may crash a finalizing interpreter

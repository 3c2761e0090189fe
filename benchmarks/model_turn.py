"""Measure one turn of the model loop beside a bare Temporal turn doing the same work.

Run: ``.venv/bin/python benchmarks/model_turn.py [--rounds 7] [--turns 10]``, or ``--quick``
(one round of 2 turns, a smoke run). Uses a temporary ``BEES_HOME``, a dev server of its own
(the ``temporal`` binary of this environment) and the tests' scripted chat-completions server
(``tests/agents/model_server.py``), which answers at once.

Bees: an item whose model stage takes ``turns`` tool calls of ``write_file`` and a final
answer, less one that answers at once, divided by ``turns``: a loop turn is one
``bees.model_call`` and one ``bees.tool_call`` activity, the transcript's durable writes and
the workflow tasks between them. The floor (issue 26, "Done when"; issue 29, "Fair floors")
is the least a design of two durable steps per turn does: a bare workflow whose turn is one
activity doing the same HTTP call (the body Bees sent, the same headers, to the same server)
and appending the transcript lines Bees appended after it, and one activity writing the same
file and appending the tool call's lines, each line synced as Bees syncs it. It replays the
turns Bees made in the warm-up, so it follows whatever Bees sends and writes, measured the
same way (long less short, over ``turns``), started with eager start as Bees starts items.

Rounds are interleaved (Bees, floor, Bees, floor…). Prints per round and the median with the
spread (min–max) of wall time and CPU time per turn, and of the ratio Bees / floor. CPU is
this process's (the workers and the client), less the scripted server's thread (``psutil``);
the dev server's is not counted. The load (``os.getloadavg()``) is printed with each round.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio import activity, workflow

if TYPE_CHECKING:
    from temporalio.client import Client

    from tests.agents.model_server import Received

PROCESS = """\
stages:
  - {name: Draft, kind: work, agents: [writer]}
  - {name: Done, kind: done}
"""
STAGE = "Draft"
FLOOR_QUEUE = "bench-floor"
HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}
"""The headers Bees' model client sends (no key: the scripted server needs none)."""
TOOL_CALL = ("c", "write_file", '{"path": "n.md", "content": "x"}')
STEP = timedelta(seconds=60)


@dataclass(frozen=True)
class Turn:
    """One turn of a Bees model stage as it went: the body it POSTed, the transcript lines
    its model call appended, and (a tool call) the file it wrote, relative to the stage's
    folder, with the transcript lines of the tool call; ``path`` None: a final answer."""

    request: str
    replied: list[str]
    path: str | None = None
    content: str = ""
    tooled: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Stage:
    """What the floor replays: the turns, the server, where its folder and transcript are."""

    url: str
    folder: str
    transcript: str
    turns: list[Turn]


@dataclass(frozen=True)
class Call:
    """One floor model call: POST ``request`` to ``url``, then append ``lines``."""

    url: str
    request: str
    transcript: str
    lines: list[str]


@dataclass(frozen=True)
class Write:
    """One floor tool call: write ``content`` to ``target``, then append ``lines``."""

    target: str
    content: str
    transcript: str
    lines: list[str]


_http: list[Any] = []
"""The floor's one HTTP client, made at its first call (a bare design keeps one)."""


def append(transcript: str, lines: list[str]) -> None:
    """Append each line and sync it, one open each, as Bees' ``append_entry`` does."""
    path = Path(transcript)
    path.parent.mkdir(parents=True, exist_ok=True)
    for line in lines:
        with path.open("a", encoding="utf-8") as out:
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())


@activity.defn(name="bench.model_call")
async def floor_model_call(call: Call) -> str:
    """POST the body, then append the reply's lines; return the reply."""
    import httpx

    if not _http:
        _http.append(httpx.AsyncClient(timeout=30))
    answer = await _http[0].post(call.url, content=call.request.encode(), headers=HEADERS)
    answer.raise_for_status()
    await asyncio.to_thread(append, call.transcript, call.lines)
    return str(answer.text)


def _write(write: Write) -> None:
    target = Path(write.target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(write.content, encoding="utf-8")
    append(write.transcript, write.lines)


@activity.defn(name="bench.write_file")
async def floor_write_file(write: Write) -> str:
    """Write the file, then append the tool call's lines."""
    await asyncio.to_thread(_write, write)
    return "ok"


@workflow.defn(name="bench.turns")
class FloorTurns:
    """A bare model stage: per turn, the model call, then the tool call if there is one."""

    @workflow.run
    async def run(self, stage: Stage) -> int:
        """Run the turns in order; return how many."""
        for turn in stage.turns:
            await workflow.execute_activity(
                floor_model_call, Call(stage.url, turn.request, stage.transcript, turn.replied),
                start_to_close_timeout=STEP)
            if turn.path is not None:
                await workflow.execute_activity(
                    floor_write_file, Write(f"{stage.folder}/{turn.path}", turn.content,
                                            stage.transcript, turn.tooled),
                    start_to_close_timeout=STEP)
        return len(stage.turns)


def recorded(received: list[Received], transcript: Path) -> list[Turn]:
    """Return the turns of one Bees stage from the requests the server got for it (in order)
    and the lines of its transcript (each entry names its turn and kind)."""
    lines = transcript.read_text(encoding="utf-8").splitlines()
    entries = [(line, json.loads(line)) for line in lines]
    turns = []
    for number, got in enumerate(received, 1):
        mine = [(line, entry) for line, entry in entries if entry["turn"] == number]
        tools = [(line, entry) for line, entry in mine if entry["kind"] == "tool"]
        arguments = tools[0][1]["arguments"] if tools else {}
        turns.append(Turn(json.dumps(got.body), [line for line, e in mine if e["kind"] != "tool"],
                          arguments.get("path"), arguments.get("content", ""),
                          [line for line, _ in tools]))
    return turns


def make_workspace(root: Path, base_url: str, turns: int) -> None:
    """Write a workspace with one model agent at ``base_url`` and a one-stage process."""
    (root / "agents").mkdir(parents=True)
    (root / "processes").mkdir()
    (root / "bees.yaml").write_text("name: bench\n")
    (root / "agents" / "writer.yaml").write_text(
        "instructions: write it\nrunner:\n  model:\n"
        f"    base_url: {base_url}\n    name: scripted\n  max_turns: {turns + 5}\n")
    (root / "processes" / "one.yaml").write_text(PROCESS)


class Bench:
    """Runs Bees items and floor stages on one client whose workers poll in this process.

    Args:
        client: the engine's client (the workers' too: eager start needs it).
        home: ``BEES_HOME`` (the workspace and the floor's folders go there).
        server: the scripted model server (:func:`tests.agents.model_server.serve`).
        turns: the most tool-call turns an item will take.
        skip: thread ids whose CPU is not counted (the scripted server's).
    """

    def __init__(self, client: Client, home: Path, server: Any, turns: int,
                 skip: set[int]) -> None:
        import psutil

        from bees_cli.engine.client import EngineGateway
        from bees_cli.machine.computer import Computer
        from bees_cli.record.aio import AsyncRecord
        from bees_cli.record.local import LocalRecord

        self.client, self.home, self.server, self.skip = client, home, server, skip
        self.here = Computer.load()
        self.record = LocalRecord(self.here.record_path)
        self.engine = EngineGateway(client)
        self.aio = AsyncRecord(self.record)
        self.workspace = home / "ws"
        self.process = psutil.Process()
        self.runs = 0
        make_workspace(self.workspace, server.base_url, turns)

    def workers(self) -> tuple[Any, Any]:
        """Return Bees' worker and the floor's, to run together (``async with``)."""
        from temporalio.worker import Worker

        from bees_cli.engine.models import task_queue
        from bees_cli.engine.worker import make_worker

        return (make_worker(self.client, task_queue(self.here.machine_id), self.record,
                            computer=self.here, heartbeat_every=5.0),
                Worker(self.client, task_queue=FLOOR_QUEUE, workflows=[FloorTurns],
                       activities=[floor_model_call, floor_write_file]))

    def cpu(self) -> float:
        """CPU seconds of this process so far (``time.process_time``: psutil's process
        times count 10 ms ticks), less the threads in ``skip`` (psutil's, per thread)."""
        skipped = sum(t.user_time + t.system_time for t in self.process.threads()
                      if t.id in self.skip)
        return time.process_time() - skipped

    async def bees(self, tool_calls: int) -> tuple[float, float, Stage]:
        """Run one item whose stage makes ``tool_calls`` tool calls, then answers; return its
        wall and CPU seconds, start to result, and its turns for the floor."""
        from bees_cli.usecases.items import create_item
        from bees_cli.usecases.run import start_pending
        from tests.agents.model_server import Answer

        model = self.server.model
        model.push(*[Answer.tool_calls(TOOL_CALL)] * tool_calls, Answer.reply("ok"))
        seen = len(model.received)
        made = create_item(self.workspace, "one", title="b", agents=[], folders=[],
                           record=self.record, computer=self.here)
        start, cpu = time.perf_counter(), self.cpu()
        await start_pending(self.engine, self.aio, self.here, only=made.id)
        await self.client.get_workflow_handle(made.id).result()
        wall, cpu = time.perf_counter() - start, self.cpu() - cpu
        from bees_cli.engine.transcript import transcript_path

        transcript = transcript_path(str(made.run_folder), STAGE)
        return wall, cpu, Stage(f"{self.server.base_url}/chat/completions",
                                str(made.run_folder / STAGE), str(transcript),
                                recorded(model.received[seen:], transcript))

    async def floor(self, turns: list[Turn]) -> tuple[float, float, Stage]:
        """Run the floor workflow over ``turns`` in a fresh folder; return its wall and CPU
        seconds, start to result, and what it ran."""
        from tests.agents.model_server import Answer

        self.runs += 1
        folder = self.home / "floor" / str(self.runs)
        stage = Stage(f"{self.server.base_url}/chat/completions", str(folder / STAGE),
                      str(folder / "logs" / f"{STAGE}.transcript.jsonl"), turns)
        self.server.model.push(*[Answer.tool_calls(TOOL_CALL)] * (len(turns) - 1),
                               Answer.reply("ok"))
        start, cpu = time.perf_counter(), self.cpu()
        handle = await self.client.start_workflow(
            FloorTurns.run, stage, id=f"floor-{self.runs}", task_queue=FLOOR_QUEUE,
            request_eager_start=True)
        await handle.result()
        return time.perf_counter() - start, self.cpu() - cpu, stage


async def main(rounds: int, turns: int) -> None:
    """Run the interleaved rounds and print the measures."""
    import psutil
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment

    from benchmarks.engine import spread
    from tests.agents.model_server import serve

    temporal = Path(sys.executable).parent / "temporal"
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal), data_converter=pydantic_data_converter,
        dev_server_log_level="error")
    before = {t.id for t in psutil.Process().threads()}
    wall: dict[str, list[float]] = {"bees": [], "floor": []}
    cpu: dict[str, list[float]] = {"bees": [], "floor": []}
    loads: list[float] = []
    try:
        with serve() as server:
            skip = {t.id for t in psutil.Process().threads()} - before
            bench = Bench(env.client, Path(os.environ["BEES_HOME"]), server, turns, skip)
            bees_worker, floor_worker = bench.workers()
            async with bees_worker, floor_worker:
                *_, short = await bench.bees(0)  # warm up, and the turns the floor replays
                *_, long = await bench.bees(turns)
                await bench.floor(long.turns)
                for n in range(rounds):  # interleaved: both sides see the same load
                    for side in ("bees", "floor"):
                        if side == "bees":
                            one, one_cpu, _ = await bench.bees(0)
                            many, many_cpu, _ = await bench.bees(turns)
                        else:
                            one, one_cpu, _ = await bench.floor(short.turns)
                            many, many_cpu, _ = await bench.floor(long.turns)
                        wall[side].append((many - one) / turns)
                        cpu[side].append((many_cpu - one_cpu) / turns)
                    loads.append(os.getloadavg()[0])
                    print(f"round {n + 1}: turn Bees {wall['bees'][-1] * 1000:.1f} ms "
                          f"(CPU {cpu['bees'][-1] * 1000:.1f}), floor "
                          f"{wall['floor'][-1] * 1000:.1f} ms (CPU "
                          f"{cpu['floor'][-1] * 1000:.1f}), load {loads[-1]:.1f}", flush=True)
    finally:
        await env.shutdown()
    print(f"median (min-max) over {rounds} interleaved rounds of {turns} turns, load "
          f"{min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores:")
    for title, values in (("wall time", wall), ("CPU of this process", cpu)):
        ratios = [b / f for b, f in zip(values["bees"], values["floor"], strict=True)]
        print(f"{title} per turn: Bees {spread(values['bees'], 1000, ' ms')}, bare Temporal "
              f"turn {spread(values['floor'], 1000, ' ms')}, ratio {spread(ratios, 1, 'x')}")


if __name__ == "__main__":
    import argparse
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks.engine import byte_compile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (>= 5)")
    parser.add_argument("--turns", type=int, default=10, help="tool-call turns per long item")
    parser.add_argument("--quick", action="store_true",
                        help="one round of 2 turns (a smoke run: the figures mean little)")
    options = parser.parse_args()
    if options.quick:
        options.rounds, options.turns = 1, 2
    elif options.rounds < 5:
        parser.error("--rounds must be at least 5")
    byte_compile()
    with tempfile.TemporaryDirectory() as home:
        os.environ["BEES_HOME"] = home
        asyncio.run(main(options.rounds, options.turns))
    sys.stdout.flush()
    os._exit(0)

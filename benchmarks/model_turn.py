"""Measure the model loop's per-turn overhead beside a bare HTTP round trip to the same server.

Run: ``.venv/bin/python benchmarks/model_turn.py [--rounds 7] [--turns 10]``. Uses a temporary
``BEES_HOME``, a dev server of its own (the ``temporal`` binary of this environment) and the
tests' scripted chat-completions server (``tests/agents/model_server.py``), which answers at
once. Each round, interleaved so load drifts hit all three alike: one item whose model stage
takes 1 turn (a final answer), one whose stage takes ``turns + 1`` (``turns`` tool calls of
``write_file``, then a final answer), and ``turns`` bare ``POST /v1/chat/completions`` with
``httpx``. A loop turn is ``(long - short) / turns``: one ``bees.model_call`` and one
``bees.tool_call`` activity, the transcript's durable writes and the workflow tasks between
them. Prints per round and the median with the spread (min–max) over rounds. Issue 13,
"Done when": the per-turn overhead as a ratio to a bare round trip.
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

ROOT = Path(__file__).resolve().parent.parent
PROCESS = """\
stages:
  - {name: Draft, kind: work, agents: [writer]}
  - {name: Done, kind: done}
"""


def make_workspace(root: Path, base_url: str, turns: int) -> None:
    """Write a workspace with one model agent at ``base_url`` and a one-stage process."""
    (root / "agents").mkdir(parents=True)
    (root / "processes").mkdir()
    (root / "bees.yaml").write_text("name: bench\n")
    (root / "agents" / "writer.yaml").write_text(
        "instructions: write it\nrunner:\n  model:\n"
        f"    base_url: {base_url}\n    name: scripted\n  max_turns: {turns + 5}\n")
    (root / "processes" / "one.yaml").write_text(PROCESS)


def spread(values: list[float], scale: float = 1.0, unit: str = "") -> str:
    """``median (min–max)`` of ``values`` times ``scale``, one decimal."""
    low, mid, high = (scale * v for v in (min(values), statistics.median(values), max(values)))
    return f"{mid:.1f}{unit} ({low:.1f}–{high:.1f})"


async def main(rounds: int, turns: int) -> None:
    """Run the interleaved rounds and print the measures."""
    import httpx
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment

    from bees_cli.engine.client import EngineGateway
    from bees_cli.engine.models import task_queue
    from bees_cli.engine.worker import make_worker
    from bees_cli.machine.computer import Computer
    from bees_cli.record.local import LocalRecord
    from bees_cli.usecases.items import create_item
    from bees_cli.usecases.run import start_pending

    sys.path.insert(0, str(ROOT))
    from tests.agents.model_server import Answer, serve

    temporal = Path(sys.executable).parent / "temporal"
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal), data_converter=pydantic_data_converter)
    here = Computer.load()
    record = LocalRecord(here.record_path)
    engine = EngineGateway(env.client)
    workspace = Path(os.environ["BEES_HOME"]) / "ws"
    tool_call = ("c", "write_file", '{"path": "n.md", "content": "x"}')

    with serve() as server:
        make_workspace(workspace, server.base_url, turns)

        async def item(tool_calls: int) -> float:
            """Seconds from start to done of one item whose stage makes these tool calls."""
            server.model.push(*[Answer.tool_calls(tool_call)] * tool_calls, Answer.reply("ok"))
            item_id = create_item(workspace, "one", title="b", agents=[], folders=[],
                                  record=record, computer=here).id
            start = time.perf_counter()
            await start_pending(engine, record, here, only=item_id)
            await env.client.get_workflow_handle(item_id).result()
            return time.perf_counter() - start

        async def bare(client: httpx.AsyncClient) -> float:
            """Seconds of one bare chat-completions round trip to the same server."""
            server.model.push(Answer.reply("ok"))
            body = {"model": "scripted", "messages": [{"role": "user", "content": "hi"}]}
            start = time.perf_counter()
            answer = await client.post(f"{server.base_url}/chat/completions", json=body)
            answer.raise_for_status()
            return time.perf_counter() - start

        per_turn: list[float] = []
        round_trip: list[float] = []
        ratio: list[float] = []
        try:
            async with make_worker(env.client, task_queue(here.machine_id), record,
                                   computer=here, heartbeat_every=5.0), httpx.AsyncClient(
                    timeout=30) as client:
                await item(1)  # warm up
                await bare(client)
                for n in range(rounds):
                    short = await item(0)
                    long = await item(turns)
                    trips = [await bare(client) for _ in range(turns)]
                    turn, trip = (long - short) / turns, statistics.median(trips)
                    per_turn.append(turn)
                    round_trip.append(trip)
                    ratio.append(turn / trip)
                    print(f"round {n + 1}: loop turn {turn * 1000:.1f} ms, bare round trip "
                          f"{trip * 1000:.2f} ms, ratio {turn / trip:.1f}x", flush=True)
        finally:
            await env.shutdown()
    print(f"loop turn (model call + tool call), {rounds} rounds of {turns} turns: "
          f"{spread(per_turn, 1000, ' ms')}")
    print(f"bare HTTP round trip to the same server:            "
          f"{spread(round_trip, 1000, ' ms')}")
    print(f"ratio loop turn / bare round trip:                  {spread(ratio, unit='x')}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (>= 5)")
    parser.add_argument("--turns", type=int, default=10, help="tool-call turns per long item")
    options = parser.parse_args()
    if options.rounds < 5:
        parser.error("--rounds must be at least 5")
    with tempfile.TemporaryDirectory() as home:
        os.environ["BEES_HOME"] = home
        asyncio.run(main(options.rounds, options.turns))
    sys.stdout.flush()
    os._exit(0)

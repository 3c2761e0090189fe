"""The floor of ``benchmarks/model_turn.py`` stays fair: its bare Temporal turn makes the same
HTTP call as a Bees model turn and writes the same files (issue 26, "Done when")."""

from __future__ import annotations

import json
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from benchmarks.model_turn import Bench
from tests.agents.model_server import serve


async def test_the_floor_sends_what_bees_sends_and_writes_what_bees_writes(
        dev_env: WorkflowEnvironment, bees_home: Path) -> None:
    with serve() as server:
        bench = Bench(dev_env.client, bees_home, server, turns=2, skip=set())
        bees_worker, floor_worker = bench.workers()
        async with bees_worker, floor_worker:
            *_, bees = await bench.bees(2)
            bees_got = server.model.received[-3:]
            *_, floor = await bench.floor(bees.turns)
            floor_got = server.model.received[-3:]
        assert len(server.model.received) == 6

    assert [t.path for t in bees.turns] == ["n.md", "n.md", None]
    assert [(got.path, got.headers, got.body) for got in floor_got] == [
        (got.path, got.headers, got.body) for got in bees_got]
    assert [len(got.body["messages"]) for got in floor_got] == [2, 4, 6]
    written = Path(bees.transcript).read_bytes()
    assert Path(floor.transcript).read_bytes() == written
    assert [(e["turn"], e["kind"]) for e in map(json.loads, written.splitlines())] == [
        (1, "opening"), (1, "reply"), (1, "tool"), (2, "reply"), (2, "tool"), (3, "reply")]
    assert (Path(bees.folder) / "n.md").read_text() == "x"
    assert (Path(floor.folder) / "n.md").read_text() == "x"
    assert floor.folder != bees.folder

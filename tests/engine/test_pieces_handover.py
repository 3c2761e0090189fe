"""Relinquish and continue with pieces (issue 14, point 3).

A relinquish mid-piece stops every live piece (nested ones too) and the caller, waits until
each has stopped, and writes each restart point. The post's handover example extended:
Maya relinquishes while Draft has a piece running; the laptop stops it and the writer and
writes each restart point (checkpoint, Bees Cloud's owner history); the desktop (a second
``BEES_HOME``) continues: Draft restarts from the top, the finished piece is answered from
the checkpoint and not run again, the unfinished one runs again. That one runs on one real
Bees Cloud and two computers each running ``bees run`` against the session's dev server,
their run folders in one linked folder; every command is the real CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.cloud.client import cloud_for
from bees_cli.engine.handover_models import RELINQUISH_UPDATE, HandoverOutput
from bees_cli.engine.models import PersonInput
from bees_cli.record.local import LocalRecord
from bees_cli.record.pieces import PieceResult, PieceStatus
from tests.agents.model_server import Answer, serve
from tests.e2e.conftest import Team, cloud, team  # noqa: F401 - fixtures
from tests.engine.conftest import Space
from tests.engine.test_handover_e2e import machine
from tests.engine.test_pieces import DRAFT, piece_agent
from tests.engine.test_rules import (
    log_lines,
    start,
    worker,  # noqa: F401 - the fixture
)
from tests.support.wait import until

HERE = Path(__file__).resolve().parent

PROCESS = """\
title: Weekly report
stages:
  - name: Draft
    kind: work
    agents: [writer]
  - name: Done
    kind: done
"""


def agent(log: Path, hold: Path, **env: object) -> str:
    """An agent running ``piece_agent.py`` (a piece holds while ``hold`` exists)."""
    lines = ["instructions: test", "tools: []", "runner:",
             f'  command: ["${{BEES_PYTHON}}", "{HERE / "piece_agent.py"}"]', "  env:",
             f'    AGENT_LOG: "{log}"', f'    HOLD: "{hold}"']
    lines += [f"    {key}: '{json.dumps(value)}'" for key, value in env.items()]
    return "\n".join(lines) + "\n"


def write_workspace(root: Path, log: Path, hold: Path) -> Path:
    """Draft's writer hands ``figures`` to alpha and ``quotes`` to beta, at once."""
    files = {
        "bees.yaml": "name: maya-space\nrun_folder: shared\n",
        "folders/shared.yaml": "description: run folders, synced between computers\n",
        "processes/weekly-report.yaml": PROCESS,
        "agents/writer.yaml": agent(log, hold, DELEGATE=[["alpha", "figures", {"week": 48}],
                                                         ["beta", "quotes", {}]]),
        "agents/alpha.yaml": agent(log, hold.with_name("never")),
        "agents/beta.yaml": agent(log, hold),
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


async def test_relinquish_stops_every_live_piece_and_waits_and_writes_each_restart_point(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,  # noqa: F811
        tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    hold.touch()
    # writer -> alpha -> gamma (depth 2), writer -> beta: gamma and beta hold
    piece_agent(space, "writer", DELEGATE=[["alpha", "dig", {}], ["beta", "quotes", {}]])
    piece_agent(space, "alpha", DELEGATE=[["gamma", "deeper", {}]])
    piece_agent(space, "beta", HOLD=str(hold))
    piece_agent(space, "gamma", HOLD=str(hold))
    space.write("processes/p.yaml", DRAFT.format(approval="none"))
    item_id = await start(dev_env, record, space, "p")
    await until(lambda: sum(ln.startswith("holding") for ln in log_lines(space)) == 2,
                f"the pieces did not hold: {log_lines(space)}")
    handle = dev_env.client.get_workflow_handle(item_id)
    handed = await handle.execute_update(
        RELINQUISH_UPDATE, PersonInput(who="maya@example.com", at="2026-01-05T09:30:00Z"),
        result_type=HandoverOutput)
    assert handed.ok, handed.reason
    names = {p.named: p.piece for p in record.pieces(item_id)}
    assert sorted(names) == ["alpha", "beta", "gamma"]
    # every piece stopped before the answer: none ended its work, none is live
    assert not [ln for ln in log_lines(space) if ln.startswith("end")]
    assert {p.named: (p.status, p.depth) for p in record.pieces(item_id)} == {
        "alpha": (PieceStatus.STOPPED, 1), "beta": (PieceStatus.STOPPED, 1),
        "gamma": (PieceStatus.STOPPED, 2)}
    assert record.live_pieces() == {}
    restarts = {"main": "Draft", **{name: "Draft" for name in names.values()}}
    assert handed.restart_stages == restarts
    assert await handle.result() == "relinquished: restarts at Draft"
    checkpoint = json.loads((Path(record.item(item_id).run_folder) / "checkpoint.json")
                            .read_text())
    assert (checkpoint["format"], checkpoint["restart_stages"]) == (3, restarts)
    assert sorted((p["named"], p["status"], p["restart_stage"], p["result"])
                  for p in checkpoint["pieces"]) == [
        ("alpha", "stopped", "Draft", None), ("beta", "stopped", "Draft", None),
        ("gamma", "stopped", "Draft", None)]
    row = record.item(item_id)
    assert (row.status, row.status_text) == ("free", "free, restarts at Draft")
    hold.unlink()


async def test_maya_relinquishes_mid_piece_and_the_desktop_runs_only_the_unfinished_piece(
        dev_env: WorkflowEnvironment, tmp_path: Path, team: Team,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    log, hold = tmp_path / "agents.log", tmp_path / "hold"
    workspace = write_workspace(tmp_path / "ws", log, hold)
    desktop_ws = write_workspace(tmp_path / "ws-desktop", log, hold).resolve()
    shared = tmp_path / "Dropbox" / "bees-runs"
    shared.mkdir(parents=True)
    url, token = team.cloud.url, team.tokens[team.maya]
    laptop = machine(monkeypatch, tmp_path, "maya-laptop", team.maya, url, token, shared)
    desktop = machine(monkeypatch, tmp_path, "maya-desktop", team.maya, url, token, shared)
    address = dev_env.client.service_client.config.target_host

    def lines() -> list[str]:
        return log.read_text().splitlines() if log.exists() else []

    try:
        for computer in (laptop, desktop):
            computer.start(workspace, address)
        for computer in (laptop, desktop):
            await until(lambda c=computer: (c.home / "data" / "worker.json").exists(),
                        f"bees run did not start: {computer.home / 'run.log'}")
        hold.touch()
        created = laptop.bees("item", "create", "weekly-report", "--title", "Week 48 report",
                              "-w", str(workspace))
        assert created.returncode == 0, created.stderr
        item = created.stdout.strip()
        run_folder = shared / item
        # alpha's piece finishes and answers the writer; beta's piece holds
        await until(lambda: any(ln.startswith("delegate alpha 0") for ln in lines())
                    and any(ln.startswith("holding beta") for ln in lines()),
                    f"the pieces did not get going: {lines()}")
        first = {p.named: p for p in laptop.record.pieces(item)}
        alpha, beta = first["alpha"].piece, first["beta"].piece
        assert sorted([alpha, beta]) == ["r1-a1-p1", "r1-a1-p2"]

        # step 8, with a piece running: the writer and both pieces stop before it answers
        done = laptop.bees("relinquish", item)
        assert done.returncode == 0, done.stderr
        sha = done.stdout.strip()
        assert sorted(lines()) == sorted([
            "run writer -", f"run alpha {alpha}", f"run beta {beta}", "end alpha",
            f"holding beta {beta}", "delegate alpha 0 alpha found: figures | "])
        stopped = {p.named: (p.status, p.restart_stage, p.restart_piece)
                   for p in laptop.record.pieces(item)}
        assert stopped == {"alpha": (PieceStatus.FINISHED, "Draft", None),
                           "beta": (PieceStatus.STOPPED, "Draft", beta)}
        assert laptop.record.live_pieces() == {}
        restarts = {"main": "Draft", beta: "Draft"}
        checkpoint = json.loads((run_folder / "checkpoint.json").read_text())
        assert (checkpoint["format"], checkpoint["restart_stages"]) == (3, restarts)
        assert [(p["piece"], p["named"], p["status"], p["restart_stage"], p["result"])
                for p in checkpoint["pieces"]] == sorted([
                    (alpha, "alpha", "finished", None,
                     {"text": "alpha found: figures\n", "files": ["alpha.md"]}),
                    (beta, "beta", "stopped", "Draft", None)])
        paths = {f["path"] for f in checkpoint["files"]}
        assert f"Draft/pieces/{alpha}/alpha.md" in paths
        # Bees Cloud's owner history shows the restart point of every piece
        async with cloud_for(laptop.computer) as api:  # type: ignore[union-attr]
            history = await api.owner_history(item)
        assert [(o.computer_name, o.release.restart_stages if o.release else None,
                 o.release.checkpoint_sha256 if o.release else None) for o in history] == [
            ("maya-laptop", restarts, sha)]
        mine = json.loads(laptop.bees("status", "--json", "--mine").stdout)["items"]
        assert [(r["item_id"], r["status"], r["stage"], r["reason"]) for r in mine] == [
            (item, "free", "Draft", "restarts at Draft")]

        # step 9: the desktop continues; Draft restarts from the top
        hold.unlink()
        going = desktop.bees("continue", item, "-w", str(desktop_ws))
        assert going.returncode == 0, going.stderr
        await until(lambda: desktop.record.item(item).status == "done",
                    f"not done: {lines()}")
        again = {p.piece: p for p in desktop.record.pieces(item)}
        # alpha is answered from the checkpoint; only beta runs again, as attempt 2's piece
        second = lines()[6:]
        assert (second[0], second[-1]) == ("run writer -", "end writer")
        assert sorted(second[1:-1]) == sorted([
            "run beta r1-a2-p1", "end beta", "delegate alpha 0 alpha found: figures | ",
            "delegate beta 0 beta found: quotes | "])
        assert [ln for ln in lines() if ln.startswith("run alpha")] == [f"run alpha {alpha}"]
        assert {name: (p.named, p.status) for name, p in again.items()} == {
            alpha: ("alpha", PieceStatus.FINISHED), beta: ("beta", PieceStatus.STOPPED),
            "r1-a2-p1": ("beta", PieceStatus.FINISHED)}
        assert again[alpha].result == PieceResult(text="alpha found: figures\n",
                                                  files=["alpha.md"])
        assert again[alpha].folder == str(run_folder / "Draft" / "pieces" / alpha)
        assert (run_folder / "Draft" / "draft.md").read_text() == (
            "alpha found: figures\nbeta found: quotes\n")
        async with cloud_for(desktop.computer) as api:  # type: ignore[union-attr]
            history = await api.owner_history(item)
        assert [(o.computer_name, o.epoch) for o in history] == [
            ("maya-laptop", 1), ("maya-desktop", 2)]
    finally:
        for computer in (laptop, desktop):
            computer.stop()
    assert "never retrieved" not in (laptop.home / "run.log").read_text()



def write_deep_workspace(root: Path, log: Path, hold: Path, model_url: str) -> Path:
    """Draft's writer (a model agent) hands ``dig`` to alpha, a command agent whose piece
    hands ``deeper`` to gamma (depth 2, held while ``hold`` exists) and checks gamma's answer
    (else exits 5)."""
    files = {
        "bees.yaml": "name: maya-space\nrun_folder: shared\n",
        "folders/shared.yaml": "description: run folders, synced between computers\n",
        "processes/weekly-report.yaml": PROCESS,
        "agents/writer.yaml": (f"instructions: writer\nrunner:\n  model:\n"
                               f"    base_url: {model_url}\n    name: scripted\n"),
        "agents/alpha.yaml": agent(log, hold.with_name("never"),
                                   DELEGATE=[["gamma", "deeper", {}]],
                                   EXPECT=["gamma found: deeper"]),
        "agents/gamma.yaml": agent(log, hold),
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


async def test_a_continued_stage_waits_for_the_new_run_of_its_pieces_never_the_old_end(
        dev_env: WorkflowEnvironment, tmp_path: Path, team: Team,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23, point 3: relinquished while a depth-2 piece runs, continued on a second
    computer: every caller there gets the answer of its piece's new run (never the laptop's
    "stopped with its run"), the pieces run anew under new names (the laptop's rows stay as
    history), and the item is done only once no piece runs."""
    log, hold = tmp_path / "agents.log", tmp_path / "hold"
    shared = tmp_path / "Dropbox" / "bees-runs"
    shared.mkdir(parents=True)
    url, token = team.cloud.url, team.tokens[team.maya]
    laptop = machine(monkeypatch, tmp_path, "maya-laptop", team.maya, url, token, shared)
    desktop = machine(monkeypatch, tmp_path, "maya-desktop", team.maya, url, token, shared)
    address = dev_env.client.service_client.config.target_host
    delegate = Answer.tool_calls(("c1", "delegate", json.dumps(
        {"agent": "alpha", "task": "dig", "input": {}})))

    def lines() -> list[str]:
        return log.read_text().splitlines() if log.exists() else []

    with serve() as server:
        workspace = write_deep_workspace(tmp_path / "ws", log, hold, server.base_url)
        desktop_ws = write_deep_workspace(tmp_path / "ws-desktop", log, hold,
                                          server.base_url).resolve()
        # the laptop's writer delegates; on the desktop Draft restarts from the top: the
        # writer delegates again, then answers
        server.model.push(delegate, delegate, Answer.reply("draft done"))
        try:
            for computer in (laptop, desktop):
                computer.start(workspace, address)
            for computer in (laptop, desktop):
                await until(lambda c=computer: (c.home / "data" / "worker.json").exists(),
                            f"bees run did not start: {computer.home / 'run.log'}")
            hold.touch()
            created = laptop.bees("item", "create", "weekly-report", "--title",
                                  "Week 48 report", "-w", str(workspace))
            assert created.returncode == 0, created.stderr
            item = created.stdout.strip()
            await until(lambda: any(ln.startswith("holding gamma") for ln in lines()),
                        f"the depth-2 piece did not get going: {lines()}")
            done = laptop.bees("relinquish", item)
            assert done.returncode == 0, done.stderr
            old = {p.named: (p.piece, p.depth, p.status) for p in laptop.record.pieces(item)}
            assert old == {"alpha": ("r1-a1-p1", 1, PieceStatus.STOPPED),
                           "gamma": ("r1-a1-p2", 2, PieceStatus.STOPPED)}
            first = len(lines())

            hold.unlink()
            going = desktop.bees("continue", item, "-w", str(desktop_ws))
            assert going.returncode == 0, going.stderr
            await until(lambda: desktop.record.item(item).status in ("done", "failed"),
                        f"the desktop did not end Draft: {lines()}")
            second = lines()[first:]
            pieces = [(p.piece, p.named, p.depth, p.status)
                      for p in desktop.record.pieces(item)]
            # the writer's tool call got alpha's new answer, not the laptop's stopped piece
            tool_results = [m["content"] for m in server.model.received[-1].body["messages"]
                            if m["role"] == "tool"]
            assert [text.splitlines()[0] for text in tool_results] == ["alpha found: dig"], (
                second, pieces)
            # alpha checked gamma's answer from gamma's new run
            assert second == ["run alpha r1-a2-p1", "run gamma r1-a2-p2", "end gamma",
                              "delegate gamma 0 gamma found: deeper | ", "end alpha"]
            row = desktop.record.item(item)
            assert (row.status, row.reason) == ("done", None)
            assert pieces == [
                ("r1-a1-p1", "alpha", 1, PieceStatus.STOPPED),
                ("r1-a1-p2", "gamma", 2, PieceStatus.STOPPED),
                ("r1-a2-p1", "alpha", 1, PieceStatus.FINISHED),
                ("r1-a2-p2", "gamma", 2, PieceStatus.FINISHED)]
            assert desktop.record.live_pieces() == {}
        finally:
            for computer in (laptop, desktop):
                computer.stop()

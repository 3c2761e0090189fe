"""Pieces on a real dev server (issue 14): a writer hands two research pieces to two agents
and uses both results; a cycle of agents and the depth limit are refused; a failed piece
fails the caller's call with the reason; a piece's gated action is held for approval."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.record.local import LocalRecord
from bees_cli.record.pieces import PieceResult, PieceStatus
from tests.engine.conftest import Space, until
from tests.engine.test_rules import (
    HERE,
    decide,
    log_lines,
    mail_addon,
    start,
    waiting_approvals,
    worker,  # noqa: F401 - the fixture
)

DRAFT = """\
stages:
  - name: Draft
    kind: work
    agents: [writer]
    approval: {approval}
  - name: Done
    kind: done
"""


def piece_agent(space: Space, name: str, *, tools: list[str] | None = None,
                **env: object) -> None:
    """Declare agent ``name`` running ``piece_agent.py`` with ``env`` (lists as JSON)."""
    lines = ["instructions: test", f"tools: [{', '.join(tools or [])}]", "runner:",
             f'  command: ["${{BEES_PYTHON}}", "{HERE / "piece_agent.py"}"]', "  env:",
             f'    AGENT_LOG: "{space.log}"', f"    ADDON_LOG: '{space.root.parent / 'addon.log'}'"]
    lines += [f"    {key}: '{value if isinstance(value, str) else json.dumps(value)}'"
              for key, value in env.items()]
    space.write(f"agents/{name}.yaml", "\n".join(lines) + "\n")


async def test_a_writer_hands_two_research_pieces_to_two_agents_and_uses_both(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker) -> None:  # noqa: F811
    piece_agent(space, "writer", DELEGATE=[["alpha", "figures", {"week": 2}],
                                           ["beta", "quotes", {}]])
    piece_agent(space, "alpha")
    piece_agent(space, "beta")
    space.write("processes/p.yaml", DRAFT.format(approval="none"))
    item_id = await start(dev_env, record, space, "p")
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    lines = log_lines(space)
    # the two pieces run at once (their numbers in the order their asks arrived)
    names = {p.agent: p.piece for p in record.pieces(item_id)}
    assert sorted(names.values()) == ["r1-a1-p1", "r1-a1-p2"]
    assert (lines[0], lines[-1]) == ("run writer -", "end writer")
    assert sorted(lines[1:-1]) == sorted([
        f"run alpha {names['alpha']}", "end alpha", f"run beta {names['beta']}", "end beta",
        "delegate alpha 0 alpha found: figures | ", "delegate beta 0 beta found: quotes | "])
    assert [ln for ln in lines if ln.startswith("delegate")] == [
        "delegate alpha 0 alpha found: figures | ", "delegate beta 0 beta found: quotes | "]
    run = Path(record.item(item_id).run_folder)
    assert (run / "Draft" / "draft.md").read_text() == ("alpha found: figures\n"
                                                        "beta found: quotes\n")
    pieces = record.pieces(item_id)
    assert {(p.named, p.agent, p.pick_reason, p.status, p.exit_code, p.depth, p.parent,
             tuple(p.chain)) for p in pieces} == {
        ("alpha", "alpha", "named by the caller", PieceStatus.FINISHED, 0, 1, None,
         ("writer",)),
        ("beta", "beta", "named by the caller", PieceStatus.FINISHED, 0, 1, None,
         ("writer",))}
    alpha = next(p for p in pieces if p.agent == "alpha")
    assert alpha.result == PieceResult(text="alpha found: figures\n", files=["alpha.md"])
    assert Path(alpha.folder) == run / "Draft" / "pieces" / alpha.piece
    assert (Path(alpha.folder) / "alpha.md").read_text() == 'figures {"week": 2}\n'
    assert alpha.restart_piece is None and alpha.restart_stage == "Draft"
    assert record.live_pieces() == {}
    kinds = [e.kind for e in record.events(item_id) if e.kind.startswith("piece_")]
    assert sorted(kinds) == sorted(["piece_started", "piece_picked", "piece_finished"] * 2)


async def test_a_cycle_and_the_depth_limit_are_refused_and_a_failed_piece_fails_the_call(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker) -> None:  # noqa: F811
    space.write("bees.yaml", "name: test-space\nmax_piece_depth: 2\n")
    # writer -> alpha -> beta (depth 2) -> gamma (depth 3: refused); alpha -> writer (cycle)
    piece_agent(space, "writer", DELEGATE=[["alpha", "dig", {}], ["gamma", "fail", {}]])
    piece_agent(space, "alpha", DELEGATE=[["writer", "back", {}], ["beta", "deeper", {}]])
    piece_agent(space, "beta", DELEGATE=[["gamma", "deepest", {}]])
    piece_agent(space, "gamma", FAIL="1")
    space.write("processes/p.yaml", DRAFT.format(approval="none"))
    item_id = await start(dev_env, record, space, "p")
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    lines = log_lines(space)
    cycle = next(ln for ln in lines if ln.startswith("delegate writer"))
    assert cycle == ("delegate writer 3  | item " + item_id + ": cycle: agent writer is "
                     "already in the chain of callers (writer -> alpha -> writer)")
    deep = next(ln for ln in lines if ln.startswith("delegate gamma") and "depth" in ln)
    assert deep == ("delegate gamma 3  | item " + item_id + ": depth limit: a piece of "
                    "depth 3 would pass the workspace's max_piece_depth of 2 (writer -> alpha "
                    "-> beta -> gamma)")
    failed = [ln for ln in lines if ln.startswith("delegate gamma 1")]
    assert len(failed) == 1 and failed[0].endswith(
        "(gamma) failed: exit 4: no sources")
    pieces = {(p.named, p.depth, p.parent is not None, p.status) for p in record.pieces(item_id)}
    assert pieces == {("alpha", 1, False, PieceStatus.FINISHED),
                      ("gamma", 1, False, PieceStatus.FAILED),
                      ("beta", 2, True, PieceStatus.FINISHED)}


async def test_a_pieces_send_on_an_approval_stage_is_held_and_approved(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker) -> None:  # noqa: F811
    addon_log = mail_addon(space)
    piece_agent(space, "writer", DELEGATE=[["mailer", "send it", {}]])
    piece_agent(space, "mailer", tools=["mail.send"], ACTIONS=[["mail.send", {"to": "team"}]])
    space.write("processes/p.yaml", DRAFT.format(approval="required"))
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "waiting for approval")
    assert row.status_text == 'waiting for approval: mail.send {"to": "team"}'
    assert not addon_log.exists()
    assert [(w["action"], w["stage"]) for w in waiting_approvals()] == [("mail.send", "Draft")]
    assert (await asyncio.to_thread(decide, item_id, approve=True, request_id=None,
                                    reason=None))["decided"] == [1]
    # the stage's finish is held too; the person approved a held action of this round
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    assert addon_log.read_text().splitlines() == ['mail.send {"to": "team"}']
    assert "mail.send 0" in log_lines(space)


async def test_a_stage_that_ends_stops_its_pieces_before_the_item_moves_on(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker, tmp_path: Path) -> None:  # noqa: F811
    """Issue 23, point 3: a caller that ends without waiting for its piece (here the stage's
    writer) leaves no piece running: the stage's live pieces are stopped before the item
    moves on, so it is never ``done`` while a piece runs."""
    hold = tmp_path / "hold"
    hold.touch()
    piece_agent(space, "writer", DELEGATE=[["alpha", "figures", {}]], DETACH="1")
    piece_agent(space, "alpha", HOLD=str(hold))
    space.write("processes/p.yaml", DRAFT.format(approval="none"))
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "done")
    pieces = [(p.named, p.status, p.reason) for p in record.pieces(item_id)]
    assert (row.stage, pieces) == ("Done", [("alpha", PieceStatus.STOPPED,
                                             "stopped with its run")])
    assert record.live_pieces() == {}
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    lines = log_lines(space)
    assert lines[:2] == ["run writer -", f"run alpha {record.pieces(item_id)[0].piece}"]
    assert "detached" in lines and not any(ln.startswith("end alpha") for ln in lines)
    hold.unlink()

"""A runner killed mid-stage, retired by an admin, its item finished by another (issue 27,
point 4; DESIGN.md, Runners: "an admin may retire a runner that is gone ..., which offers its
items back, with open action intents held for a person").

Maya makes an item offered to pool ``build`` from the start. runner-1 (a real
``bees run --runner build``, its own ``BEES_HOME`` and its own engine) claims it; its stage's
``mail.send`` delivers, then the machine dies (kill -9 of ``bees run``, its engine and the
stage's processes) with the send's intent open in the run folder's journal. An admin retires
runner-1: fenced, its item offered back. runner-2 claims it although the run folder holds
runner-1's unfinished work (the rule of :mod:`bees_cli.handover.takeover`: kept aside, the
journal's copy in place), restarts the stage, and the send is held as "may already have run"
for a person, never sent again by itself; a person says it ran and the item finishes with
one delivery. runner-1's later sync and start are refused.

One real Bees Cloud (HTTP, SQLite); each runner starts its own Temporal dev server.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
from pathlib import Path

import pytest

from bees_cli.cloud.client import CloudClient
from bees_cli.cloud.login import Login
from bees_cli.engine.server import pid_alive
from bees_cli.errors import CloudUnauthorized
from tests.e2e.conftest import Team, cloud, team  # noqa: F401 - fixtures
from tests.engine.test_cli import engine_json
from tests.engine.test_runners_e2e import Box, _box
from tests.support.wait import until

HERE = Path(__file__).resolve().parent
MAIL = {"to": "team@example.com"}
PROCESS = """\
stages:
  - name: Send
    kind: work
    agents: [sender]
  - name: Done
    kind: done
"""

pytestmark = pytest.mark.slow


def _workspace(root: Path, *, log: Path, outbox: Path, block: Path,
               wait: Path | None = None) -> Path:
    addon = f'["${{BEES_PYTHON}}", "{HERE / "outbox_addon.py"}"]'
    agent = "\n".join([
        "instructions: sends", "tools: [mail.send]", "runner:",
        f'  command: ["${{BEES_PYTHON}}", "{HERE / "action_agent.py"}"]', "  env:",
        f'    AGENT_LOG: "{log}"', f"    ACTIONS: '{json.dumps([['mail.send', MAIL]])}'",
        f'    OUTBOX: "{outbox}"', f'    BLOCK_FILE: "{block}"']
        + ([f'    WAIT_FILE: "{wait}"'] if wait is not None else [])) + "\n"
    files = {
        "bees.yaml": "name: maya-space\nrun_folder: shared\n",
        "folders/shared.yaml": "description: run folders, shared with the runners\n",
        "processes/p.yaml": "title: Mail the team\n" + PROCESS,
        "addons/mail.yaml": f"actions:\n  send: {{kind: send, command: {addon}}}\n",
        "agents/sender.yaml": agent,
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _kill_9(box: Box, addon_pid: int) -> None:
    """The machine dies: ``bees run``, its engine and the stage's processes, kill -9."""
    info = engine_json(box.home)
    assert info is not None and box.proc is not None
    engine = int(info["pid"])  # type: ignore[arg-type]
    stage_group = os.getpgid(addon_pid)
    assert stage_group != os.getpgid(0)
    box.proc.kill()
    os.kill(engine, signal.SIGKILL)
    os.killpg(stage_group, signal.SIGKILL)
    box.proc.wait(timeout=10)


async def test_a_runner_killed_mid_stage_is_retired_and_another_finishes_its_item_holding_the_send(
        tmp_path: Path, team: Team, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    log, outbox, block = tmp_path / "agents.log", tmp_path / "outbox", tmp_path / "block"
    outbox.mkdir()
    workspace = _workspace(tmp_path / "ws", log=log, outbox=outbox, block=block)
    shared = tmp_path / "shared-runs"
    shared.mkdir()
    url, storage = team.cloud.url, team.cloud.storage
    laptop = _box(monkeypatch, tmp_path, "maya-laptop", person=team.maya,
                  login=Login(url, team.tokens[team.maya]), shared=shared, env={})
    tokens = {name: storage.add_runner(name, "build", team.name)
              for name in ("runner-1", "runner-2")}
    one, two = (_box(monkeypatch, tmp_path, name, person=None, login=None, shared=shared,
                     env={"BEES_CLOUD_URL": url, "BEES_TOKEN": tokens[name]})
                for name in ("runner-1", "runner-2"))
    runner_args = ("--runner", "build", "--runner-every", "0.3", "-w", str(workspace))
    boxes = [one, two]
    try:
        created = laptop.bees("item", "create", "p", "--on", "build", "-w", str(workspace))
        assert created.returncode == 0, created.stderr
        item = created.stdout.strip()
        folder = shared / item
        block.write_text("")
        one.start(*runner_args)
        await until(lambda: block.read_text() != "",
                    lambda: f"runner-1 never ran the send: {one.log()}")
        addon_pid = int(block.read_text())
        _kill_9(one, addon_pid)
        await until(lambda: not pid_alive(addon_pid), "the add-on outlived the kill")
        block.unlink()  # the add-on no longer blocks after the restart
        assert len(list(outbox.iterdir())) == 1  # it delivered before the machine died
        journal = [json.loads(line) for line in
                   (folder / "journal" / "actions.jsonl").read_text().splitlines()]
        assert [(j["type"], j["stage"], j["action"]) for j in journal] == [
            ("intent", "Send", "mail.send")]  # open: no end

        retired = storage.retire_runner("runner-1", team.name)
        assert (retired.offered, retired.not_offered) == ([item], [])

        # fenced: runner-1's later sync and start are refused
        with CloudClient(url, tokens["runner-1"], retries=0) as fenced, \
                pytest.raises(CloudUnauthorized) as later:
            fenced.runner_heard("runner-1-machine")
        assert later.value.code == "runner_retired"
        again = one.bees("run", *runner_args)
        assert again.returncode != 0
        assert "runner runner-1 was retired: Bees Cloud refuses what it sends" in (
            again.stderr), again.stderr

        two.start(*runner_args)
        await until(lambda: [r.status for r in two.record.items()] == [
            "waiting for approval"],
                    lambda: f"runner-2 did not hold the send: {two.record.items()} "
                            f"{log.read_text()} {two.log()}")
        waiting = json.loads(two.bees("approvals", "--json").stdout)["approvals"]
        assert [(w["item_id"], w["action"], w["kind"], w["interrupted_at"] is not None)
                for w in waiting] == [(item, "mail.send", "send", True)]
        assert len(list(outbox.iterdir())) == 1  # held, not sent again
        aside = sorted(p.relative_to(folder).as_posix()
                       for p in (folder / "retired").rglob("*") if p.is_file())
        stamp = retired.retired_at.strftime("%Y%m%dT%H%M%SZ")
        assert aside == [f"retired/runner-1-{stamp}/logs/Send-r1-a1.{name}"
                         for name in ("context.json", "stderr", "stdout")]
        # the journal's copy stayed where it was, its intent still open
        assert (folder / "journal" / "actions.jsonl").read_text().splitlines() == [
            json.dumps(journal[0], sort_keys=True)]
        shown = two.bees("item", "show", item).stdout.splitlines()
        assert [line.split(": ", 1)[1] for line in shown if "continued here" in line] == [
            "continued here as run 2 from maya-laptop; restarts at Send; checkpoint "
            f"{hashlib.sha256((folder / 'checkpoint.json').read_bytes()).hexdigest()[:12]} "
            "(2 files); offered back by retiring runner-1: its unfinished work (3 files) "
            f"kept in retired/runner-1-{stamp}/ of the run folder"]

        ran = two.bees("approve", item, "--ran")
        assert ran.returncode == 0, ran.stderr
        await until(lambda: [r.status for r in two.record.items()] == ["done"],
                    lambda: f"runner-2 did not finish it: {two.log()}")
        assert len(list(outbox.iterdir())) == 1
        # runner-1's attempt died in the send; runner-2's restart was answered from the journal
        assert log.read_text().splitlines() == [
            "run Send sender 1 1", "run Send sender 1 1",
            f"mail.send 0  | mail.send: answered from the journal (it ran at {journal[0]['at']}); "
            "not run again", "end Send 1"]
    finally:
        for box in boxes:
            box.stop()
        for box in boxes:  # each runner's own engine
            info = engine_json(box.home)
            if info is not None and pid_alive(int(info["pid"])):  # type: ignore[arg-type]
                os.kill(int(info["pid"]), signal.SIGTERM)  # type: ignore[arg-type]


async def test_a_live_runner_that_learns_it_was_retired_stops_at_once(
        tmp_path: Path, team: Team, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """A person retired a runner that was still alive: the moment its sync is refused with
    ``runner_retired``, its ``bees run --runner`` cancels its running stage (the stage's
    programs killed), starts nothing more and exits non-zero saying why; the item it held
    is not finished there."""
    log, outbox, block = tmp_path / "agents.log", tmp_path / "outbox", tmp_path / "block"
    outbox.mkdir()
    workspace = _workspace(tmp_path / "ws", log=log, outbox=outbox, block=block)
    shared = tmp_path / "shared-runs"
    shared.mkdir()
    url, storage = team.cloud.url, team.cloud.storage
    laptop = _box(monkeypatch, tmp_path, "maya-laptop", person=team.maya,
                  login=Login(url, team.tokens[team.maya]), shared=shared, env={})
    token = storage.add_runner("runner-1", "build", team.name)
    one = _box(monkeypatch, tmp_path, "runner-1", person=None, login=None, shared=shared,
               env={"BEES_CLOUD_URL": url, "BEES_TOKEN": token})
    try:
        created = laptop.bees("item", "create", "p", "--on", "build", "-w", str(workspace))
        assert created.returncode == 0, created.stderr
        item = created.stdout.strip()
        block.write_text("")
        one.start("--runner", "build", "--runner-every", "0.3", "-w", str(workspace))
        await until(lambda: block.read_text() != "",
                    lambda: f"runner-1 never ran the send: {one.log()}")
        addon_pid = int(block.read_text())

        retired = storage.retire_runner("runner-1", team.name)
        assert retired.offered == [item]
        assert one.proc is not None
        await until(lambda: one.proc is not None and one.proc.poll() is not None,
                    lambda: f"runner-1 kept running after its retire: {one.log()}")
        assert one.proc.returncode == 1
        assert ("error: runner runner-1 was retired: Bees Cloud refuses what it sends"
                in one.log()), one.log()
        await until(lambda: not pid_alive(addon_pid), "the stage's add-on outlived the stop")
        block.unlink()
        assert [r.status for r in one.record.items()] != ["done"]
        assert log.read_text().splitlines() == ["run Send sender 1 1"]
    finally:
        one.stop()
        info = engine_json(one.home)
        if info is not None and pid_alive(int(info["pid"])):  # type: ignore[arg-type]
            os.kill(int(info["pid"]), signal.SIGTERM)  # type: ignore[arg-type]


async def test_a_retired_runner_refuses_a_send_before_it_learns(
        tmp_path: Path, team: Team, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """Between a retire and the runner's next sync the runner does not know it was retired:
    before a gated action (send, post, delete, pay) runs there, the runner asks Bees Cloud
    whether it still owns the item, and a retired one refuses the send: nothing delivered."""
    log, outbox, block = tmp_path / "agents.log", tmp_path / "outbox", tmp_path / "block"
    wait = tmp_path / "go"
    outbox.mkdir()
    workspace = _workspace(tmp_path / "ws", log=log, outbox=outbox, block=block, wait=wait)
    shared = tmp_path / "shared-runs"
    shared.mkdir()
    url, storage = team.cloud.url, team.cloud.storage
    laptop = _box(monkeypatch, tmp_path, "maya-laptop", person=team.maya,
                  login=Login(url, team.tokens[team.maya]), shared=shared, env={})
    token = storage.add_runner("runner-1", "build", team.name)
    one = _box(monkeypatch, tmp_path, "runner-1", person=None, login=None, shared=shared,
               env={"BEES_CLOUD_URL": url, "BEES_TOKEN": token})
    started = Path(str(wait) + ".started")
    try:
        created = laptop.bees("item", "create", "p", "--on", "build", "-w", str(workspace))
        assert created.returncode == 0, created.stderr
        item = created.stdout.strip()
        one.start("--runner", "build", "--runner-every", "0.3", "-w", str(workspace))
        await until(started.exists, lambda: f"runner-1 never started the stage: {one.log()}")
        retired = storage.retire_runner("runner-1", team.name)
        assert retired.offered == [item]
        wait.write_text("")  # the agent asks for the send now, before runner-1's next sync
        # the owner check is refused with runner_retired: the send is not run, and runner-1
        # learns it was retired and stops (its stage, the agent, killed)
        assert one.proc is not None
        await until(lambda: one.proc is not None and one.proc.poll() is not None,
                    lambda: f"runner-1 kept running after its retire: {one.log()}")
        assert one.proc.returncode == 1
        assert ("runner runner-1 was retired: Bees Cloud refuses what it sends: stopping its "
                "running stages") in one.log(), one.log()
        assert list(outbox.iterdir()) == []  # nothing sent
        # the agent, when it outlived the stop long enough to say so, was told why
        asked = [line for line in log.read_text().splitlines() if "mail.send" in line]
        assert asked in ([], [
            "mail.send 3  | error: runner runner-1 was retired: Bees Cloud refuses what it "
            f"sends: {item}'s mail.send (send) is not run here"])
    finally:
        one.stop()
        info = engine_json(one.home)
        if info is not None and pid_alive(int(info["pid"])):  # type: ignore[arg-type]
            os.kill(int(info["pid"]), signal.SIGTERM)  # type: ignore[arg-type]

"""The post's example, steps 8 to 10, end to end: Maya relinquishes the report during Draft on
her laptop and continues it on her desktop; Sam's computer watches every move.

One real Bees Cloud (HTTP, SQLite), three computers with their own ``BEES_HOME``; the laptop
and the desktop each run ``bees run`` against the session's dev server and link the same
directory as the workspace's run folder. Every command is the real CLI in a subprocess.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from bees_cli.cloud.client import cloud_for
from bees_cli.cloud.login import Login, save_login
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import set_identity
from bees_cli.machine.links import link_folder
from bees_cli.record.local import LocalRecord
from bees_cli.record.sync import Syncer, team_rows
from tests.e2e.conftest import Team, cloud, team  # noqa: F401 - fixtures
from tests.engine.conftest import DRAFT_REVIEW_DONE
from tests.support.wait import until

HERE = Path(__file__).resolve().parent

PROCESS = "title: Weekly report\n" + DRAFT_REVIEW_DONE


def agent(log: Path, addon_log: Path, hold: Path, actions: list[object]) -> str:
    return "\n".join([
        "instructions: drafts", "tools: [mail.send]", "runner:",
        f'  command: ["${{BEES_PYTHON}}", "{HERE / "handover_agent.py"}"]', "  env:",
        f'    AGENT_LOG: "{log}"', f"    ADDON_LOG: '{addon_log}'",
        f"    ACTIONS: '{json.dumps(actions)}'", f'    HOLD: "{hold}"']) + "\n"


def write_workspace(root: Path, log: Path, addon_log: Path, hold: Path) -> Path:
    """Maya's workspace: run folders live in the folder ``shared``; Draft sends one mail."""
    command = f'["{sys.executable}", "{HERE / "addon_script.py"}"]'
    files = {
        "bees.yaml": "name: maya-space\nrun_folder: shared\n",
        "folders/shared.yaml": "description: run folders, synced between computers\n",
        "processes/weekly-report.yaml": PROCESS,
        "addons/mail.yaml": f"actions:\n  send: {{kind: send, command: {command}}}\n",
        "agents/writer.yaml": agent(log, addon_log, hold,
                                    [["mail.send", {"to": "sam", "subject": "$TITLE"}]]),
        "agents/reviewer.yaml": agent(log, addon_log, hold, []),
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


class Machine:
    """One computer: its ``BEES_HOME``, its ``bees`` commands, its ``bees run``."""

    def __init__(self, home: Path, computer: Computer) -> None:
        self.home = home
        self.computer = computer
        self.run_process: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        return {**os.environ, "BEES_HOME": str(self.home)}

    def bees(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bees_cli", *args], env=self.env(),
                              capture_output=True, text=True, timeout=120, check=False)

    def start(self, workspace: Path, address: str) -> None:
        with open(self.home / "run.log", "wb") as out:
            self.run_process = subprocess.Popen(
                [sys.executable, "-m", "bees_cli", "run", "-w", str(workspace),
                 "--temporal-address", address], env=self.env(), stdout=out, stderr=out)

    def stop(self) -> None:
        if self.run_process is not None and self.run_process.poll() is None:
            self.run_process.terminate()
            self.run_process.wait(30)

    @property
    def record(self) -> LocalRecord:
        return LocalRecord(self.computer.record_path)

    async def sync(self) -> None:
        await Syncer(self.computer).sync_once()

    def sees(self) -> dict[str, str]:
        return {r["id"]: r["status_text"] for r in team_rows(self.computer.record_path, set())}


@contextmanager
def at_home(monkeypatch: pytest.MonkeyPatch, home: Path) -> Iterator[None]:
    with monkeypatch.context() as patch:
        patch.setenv("BEES_HOME", str(home))
        yield


def machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, person: str,
            url: str, token: str, shared: Path | None) -> Machine:
    home = tmp_path / name
    home.mkdir()
    with at_home(monkeypatch, home):
        set_identity(person=person, computer=name)
        save_login(Login(url, token))
        if shared is not None:
            link_folder("shared", shared, ["shared"])
        return Machine(home, Computer.load())


async def test_maya_relinquishes_on_the_laptop_and_continues_on_the_desktop(
        dev_env: WorkflowEnvironment, tmp_path: Path, team: Team,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    log, addon_log, hold = tmp_path / "agents.log", tmp_path / "addon.log", tmp_path / "hold"
    workspace = write_workspace(tmp_path / "ws", log, addon_log, hold)
    desktop_ws = write_workspace(tmp_path / "ws-desktop", log, addon_log, hold).resolve()
    shared = tmp_path / "Dropbox" / "bees-runs"
    shared.mkdir(parents=True)
    url, maya_token = team.cloud.url, team.tokens[team.maya]
    laptop = machine(monkeypatch, tmp_path, "maya-laptop", team.maya, url, maya_token, shared)
    desktop = machine(monkeypatch, tmp_path, "maya-desktop", team.maya, url, maya_token,
                      shared)
    sam = machine(monkeypatch, tmp_path, "sam-desktop", team.sam, url, team.tokens[team.sam],
                  None)
    address = dev_env.client.service_client.config.target_host

    def lines() -> list[str]:
        return log.read_text().splitlines() if log.exists() else []

    try:
        for computer in (laptop, desktop):
            computer.start(workspace, address)
        for computer in (laptop, desktop):
            await until(lambda c=computer: (c.home / "data" / "worker.json").exists(),
                        f"bees run did not start: {computer.home / 'run.log'}")

        # the report runs on the laptop; Draft sends its mail, then keeps working
        hold.touch()
        # a title of its own, not the process's: the mail's input names it
        created = laptop.bees("item", "create", "weekly-report", "--title", "Week 48 report",
                              "-w", str(workspace))
        assert created.returncode == 0, created.stderr
        item = created.stdout.strip()
        run_folder = shared / item
        await until(lambda: "holding Draft" in lines(), "Draft never held")
        await laptop.sync()
        await sam.sync()
        assert sam.sees() == {item: "Draft, running on maya-laptop"}

        # only the owner may relinquish
        refused = desktop.bees("relinquish", item)
        assert refused.returncode == 3
        assert refused.stderr.splitlines() == [
            f"error: item {item} is owned by maya-laptop ({team.maya}): only that computer "
            "can relinquish it",
            f"hint: run bees relinquish {item} on maya-laptop"]

        # step 8: Relinquish control on the laptop
        done = laptop.bees("relinquish", item)
        assert done.returncode == 0, done.stderr
        sha = done.stdout.strip()
        assert sha == hashlib.sha256((run_folder / "checkpoint.json").read_bytes()).hexdigest()
        assert lines() == ["run Draft writer 1", "mail.send 0 done 1 | ", "holding Draft"]
        async with cloud_for(laptop.computer) as api:  # type: ignore[union-attr]
            owner = await api.get_owner(item)
        assert owner is not None and owner.release is not None
        assert (owner.computer_name, owner.release.restart_stages,
                owner.release.checkpoint_sha256) == ("maya-laptop", {"main": "Draft"}, sha)
        mine = json.loads(laptop.bees("status", "--json", "--mine").stdout)["items"]
        assert [(r["item_id"], r["stage"], r["status"], r["reason"]) for r in mine] == [
            (item, "Draft", "free", "restarts at Draft")]
        await laptop.sync()
        await sam.sync()
        await desktop.sync()
        assert sam.sees() == {item: "free, restarts at Draft"}
        free = laptop.bees("approve", item)
        assert (free.returncode, free.stderr.splitlines()[0]) == (
            3, f"error: {item} is free, restarts at Draft: nothing waits here")
        seen = json.loads(desktop.bees("status", "--json").stdout)["items"]
        assert [(r["item_id"], r["status"], r["stage"], r["team"]) for r in seen] == [
            (item, "free", "Draft", True)]

        # refusals on the desktop leave the item free in Bees Cloud and change nothing
        notes = run_folder / "Draft" / "notes.txt"
        kept = notes.read_bytes()
        notes.write_bytes(kept.upper())
        tampered = desktop.bees("continue", item, "-w", str(workspace))
        assert tampered.returncode == 3
        assert tampered.stderr.splitlines() == [
            f"Draft/notes.txt: content changed (sha256 {hashlib.sha256(kept.upper()).hexdigest()}"
            f" expected {hashlib.sha256(kept).hexdigest()})",
            "error: checkpoint invalid: 1 problem",
            "hint: put each file named above back as it was handed over and move any file "
            "not in the checkpoint out of the run folder (keep it), then run bees continue "
            f"{item} again"]
        notes.write_bytes(kept)
        assert desktop.bees("unlink", "shared").returncode == 0
        unlinked = desktop.bees("continue", item, "-w", str(workspace))
        assert unlinked.returncode == 3
        assert unlinked.stderr.splitlines() == [
            f"error: cannot continue item {item} here: run folder shared: not linked on this "
            "computer (bees link shared PATH)",
            "hint: bees link shared PATH"]
        assert desktop.bees("link", "shared", str(shared), "-w", str(workspace)).returncode == 0
        wrong = desktop.bees("continue", item, "--digest", "0" * 64, "-w", str(workspace))
        assert wrong.returncode == 3
        assert wrong.stderr.splitlines() == [
            f"error: --digest {'0' * 64} does not match the checkpoint SHA-256 released to "
            f"Bees Cloud by maya-laptop ({sha})"]
        async with cloud_for(desktop.computer) as api:  # type: ignore[union-attr]
            still = await api.get_owner(item)
        assert still is not None and not still.held
        assert desktop.record.items() == []

        # step 9: Continue on this machine, on the desktop, in the desktop's own copy of the
        # workspace (the laptop's is still there: it is not used)
        going = desktop.bees("continue", item, "-w", str(desktop_ws))
        assert going.returncode == 0, going.stderr
        assert "started; bees run picks it up" in going.stderr
        continued = desktop.record.item(item)
        assert (continued.title, continued.workspace) == ("Week 48 report", str(desktop_ws))
        assert json.loads(continued.input)["snapshot"]["workspace_root"] == str(desktop_ws)
        await until(lambda: lines().count("holding Draft") == 2, "Draft did not restart")
        await desktop.sync()
        await sam.sync()
        assert sam.sees() == {item: "Draft, running on maya-desktop"}
        await laptop.sync()
        elsewhere = laptop.bees("deny", item, "--reason", "no")
        assert (elsewhere.returncode, elsewhere.stderr.splitlines()[0]) == (
            3, f"error: {item} runs on maya-desktop ({team.maya}): approve it there")
        async with cloud_for(desktop.computer) as api:  # type: ignore[union-attr]
            now = await api.get_owner(item)
        assert now is not None and (now.computer_name, now.held, now.epoch) == (
            "maya-desktop", True, 2)

        # step 10: the desktop finishes: Draft from the top, Review, Done; the mail is not
        # sent again
        hold.unlink()
        await until(lambda: desktop.record.item(item).status == "done", "not done")
        ran_at = desktop.record.journal(item)[0]["at"]
        assert lines() == [
            "run Draft writer 1", "mail.send 0 done 1 | ", "holding Draft",
            "run Draft writer 2",
            f"mail.send 0 done 1 | mail.send: answered from the journal (it ran at {ran_at}); "
            "not run again",
            "holding Draft", "end Draft", "run Review reviewer 1", "end Review"]
        assert addon_log.read_text().splitlines() == [
            'mail.send {"subject": "Week 48 report", "to": "sam"}']
        # the relinquished attempt's logs stay; the continued run wrote attempt 2
        assert (run_folder / "logs" / "Draft-r1-a1.stdout").exists()
        assert (run_folder / "logs" / "Draft-r1-a2.stdout").exists()
        await desktop.sync()
        await sam.sync()
        await laptop.sync()
        assert sam.sees() == {item: "Done, done on maya-desktop"}
        on_laptop = json.loads(laptop.bees("status", "--json").stdout)["items"]
        assert [(r["item_id"], r["title"], r["stage"], r["status"], r["computer"])
                for r in on_laptop] == [(item, "Week 48 report", "Done", "done", "maya-desktop")]
    finally:
        for computer in (laptop, desktop):
            computer.stop()
    # the relinquish's cancelled stage is expected: no traceback in the laptop's bees run
    assert "never retrieved" not in (laptop.home / "run.log").read_text()

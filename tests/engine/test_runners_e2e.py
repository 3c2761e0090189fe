"""Runners end to end (issue 27, points 1-3): Maya hands her report to the pool ``build``;
three runner computers (real ``bees run --runner build`` processes, each its own
``BEES_HOME``, signed in by ``BEES_CLOUD_URL`` and a runner's ``BEES_TOKEN``) ask for the
pool's offers. runner-1 lacks the secret the offer names and never claims; runner-2 has no
link to the shared run folder and leaves it saying so; runner-3 claims it and finishes it.
Maya sees each reason in the team's offers.

One real Bees Cloud (HTTP, SQLite) and the session's Temporal dev server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from temporalio.testing import WorkflowEnvironment

from bees_cli.cloud.client import CloudClient
from bees_cli.cloud.login import Login, save_login
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import set_identity
from bees_cli.machine.links import link_folder
from bees_cli.record.local import LocalRecord
from tests.e2e.conftest import Team, cloud, team  # noqa: F401 - fixtures
from tests.engine.conftest import DRAFT_REVIEW_DONE
from tests.support.wait import until

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def _agent(log: Path, hold: Path, tools: str) -> str:
    return "\n".join([
        "instructions: drafts", f"tools: {tools}", "runner:",
        f'  command: ["${{BEES_PYTHON}}", "{HERE / "handover_agent.py"}"]', "  env:",
        f'    AGENT_LOG: "{log}"', f'    HOLD: "{hold}"']) + "\n"


def _workspace(root: Path, log: Path, hold: Path) -> Path:
    command = f'["{sys.executable}", "{HERE / "addon_script.py"}"]'
    files = {
        "bees.yaml": "name: maya-space\nrun_folder: shared\n",
        "folders/shared.yaml": "description: run folders, shared with the runners\n",
        "processes/weekly-report.yaml": "title: Weekly report\n" + DRAFT_REVIEW_DONE,
        "addons/mail.yaml": ("connection:\n  env: [MAIL_TOKEN]\n"
                             f"actions:\n  send: {{kind: send, command: {command}}}\n"),
        "agents/writer.yaml": _agent(log, hold, "[mail.send]"),
        "agents/reviewer.yaml": _agent(log, hold, "[]"),
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


class Box:
    """One computer: its home, its environment, its ``bees run``."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home = home
        self.env = {**{k: v for k, v in os.environ.items() if k != "MAIL_TOKEN"},
                    "BEES_HOME": str(home), **env}
        self.proc: subprocess.Popen[bytes] | None = None

    def bees(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bees_cli", *args], env=self.env,
                              capture_output=True, text=True, timeout=120, check=False)

    def start(self, *args: str) -> None:
        with open(self.home / "run.log", "wb") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "bees_cli", "run", *args],
                                         env=self.env, stdout=out, stderr=out)

    def log(self) -> str:
        path = self.home / "run.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)

    @property
    def record(self) -> LocalRecord:
        return LocalRecord(self.home / "data" / "record.db")


def _box(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, *, person: str | None,
         login: Login | None, shared: Path | None, env: dict[str, str]) -> Box:
    home = tmp_path / name
    home.mkdir()
    with monkeypatch.context() as patch:
        patch.setenv("BEES_HOME", str(home))
        set_identity(person=person, computer=name)
        if login is not None:
            save_login(login)
        if shared is not None:
            link_folder("shared", shared, ["shared"])
        Computer.load()
    return Box(home, env)


async def test_a_person_hands_an_item_to_a_pool_and_one_eligible_runner_finishes_it(
        dev_env: WorkflowEnvironment, tmp_path: Path, team: Team,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    log, hold = tmp_path / "agents.log", tmp_path / "hold"
    workspace = _workspace(tmp_path / "ws", log, hold)
    shared = tmp_path / "shared-runs"
    shared.mkdir()
    url = team.cloud.url
    address = dev_env.client.service_client.config.target_host
    laptop = _box(monkeypatch, tmp_path, "maya-laptop", person=team.maya,
                  login=Login(url, team.tokens[team.maya]), shared=shared,
                  env={"MAIL_TOKEN": "maya-secret"})

    def runner(name: str, *, linked: bool, secret: bool) -> Box:
        token = team.cloud.storage.add_runner(name, "build", team.name)
        env = {"BEES_CLOUD_URL": url, "BEES_TOKEN": token}
        if secret:
            env["MAIL_TOKEN"] = f"{name}-secret"
        return _box(monkeypatch, tmp_path, name, person=None, login=None,
                    shared=shared if linked else None, env=env)

    boxes = [laptop]
    try:
        laptop.start("-w", str(workspace), "--temporal-address", address)
        await until(lambda: (laptop.home / "data" / "worker.json").exists(),
                    f"bees run did not start: {laptop.log()}")
        hold.touch()
        created = laptop.bees("item", "create", "weekly-report", "-w", str(workspace))
        assert created.returncode == 0, created.stderr
        item = created.stdout.strip()
        await until(lambda: "holding Draft" in (log.read_text() if log.exists() else ""),
                    "Draft never held")

        # a person hands it to the pool: released, with an offer naming its secret
        handed = laptop.bees("relinquish", item, "--to", "build")
        assert handed.returncode == 0, handed.stderr
        assert (f"{item}: offered to pool build (secrets by name: MAIL_TOKEN)"
                in handed.stderr.splitlines())
        hold.unlink()

        # a person's token cannot run as a runner
        wrong = laptop.bees("run", "--runner", "build", "-w", str(workspace))
        assert wrong.returncode == 2, wrong.stderr
        assert wrong.stderr.splitlines()[0] == (
            "error: this computer's token is a person's, not a runner's of pool build")

        one = runner("runner-1", linked=True, secret=False)
        two = runner("runner-2", linked=False, secret=True)
        boxes += [one, two]
        for box in (one, two):
            box.start("--runner", "build", "--runner-every", "0.3", "-w", str(workspace),
                      "--temporal-address", address)
        with CloudClient(url, team.tokens[team.maya], retries=0) as maya:
            def notes() -> dict[str, str]:
                [offer] = maya.offers()
                return {n.runner: n.reason for n in offer.notes}

            await until(lambda: len(notes()) == 2,
                        f"the runners did not leave the offer: {one.log()}\n{two.log()}")
            assert notes() == {
                "runner-1": "secret MAIL_TOKEN not set on this runner: it refuses rather "
                            "than run with another key",
                "runner-2": f"cannot continue item {item} here: run folder shared: not "
                            "linked on this computer (bees link shared PATH)",
            }
            assert f"runner-1: left {item}: secret MAIL_TOKEN not set" in one.log()
            shown = laptop.bees("offers").stdout.splitlines()
            # the reasons in the order the runners left it, which of the two looked first
            assert sorted(shown[1:]) == [
                "  runner-1: secret MAIL_TOKEN not set on this runner: it refuses rather than "
                "run with another key",
                f"  runner-2: cannot continue item {item} here: run folder shared: not linked "
                "on this computer (bees link shared PATH)"]
            assert shown[0].startswith(f"{item}  pool build  open  offered by {team.maya} at ")
            assert shown[0].endswith("  secrets: MAIL_TOKEN")
            assert one.record.items() == [] and two.record.items() == []

            three = runner("runner-3", linked=True, secret=True)
            boxes.append(three)
            three.start("--runner", "build", "--runner-every", "0.3", "-w", str(workspace),
                        "--temporal-address", address)
            await until(lambda: [r.status for r in three.record.items()] == ["done"],
                        f"runner-3 did not finish it: {three.log()}")
            [offer] = maya.offers(only_open=False)
            owner = maya.get_owner(item)
        assert (offer.open, offer.claimed_by, offer.secrets) == (False, "runner-3",
                                                                 ["MAIL_TOKEN"])
        assert owner is not None
        assert (owner.computer_name, owner.epoch, owner.person, owner.held) == (
            "runner-3", 2, "pool-build@runners.invalid", True)
        assert f"runner-3: claimed {item}" in three.log()
        assert one.record.items() == [] and two.record.items() == []
        ran = [line for line in log.read_text().splitlines() if line.startswith("run ")]
        assert ran == ["run Draft writer 1", "run Draft writer 2", "run Review reviewer 1"]
        listed = json.loads(laptop.bees("offers", "--all", "--json").stdout)
        schema = json.loads((REPO / "schemas" / "output" / "offers.json").read_text())
        jsonschema.validate(listed, schema)
        assert [(o["item_id"], o["open"], o["claimed_by"], len(o["notes"]))
                for o in listed["offers"]] == [(item, False, "runner-3", 2)]
        shown = json.loads(three.bees("item", "show", item, "--json").stdout)
        assert (shown["item"]["status"], shown["item"]["item_id"]) == ("done", item)
    finally:
        for box in boxes:
            box.stop()

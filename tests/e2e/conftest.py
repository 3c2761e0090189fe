"""Fixtures: a real Bees Cloud over HTTP (SQLite), a team, computers, a workspace with a schedule.

Each computer is a :class:`~bees_cli.machine.computer.Computer` with its own record file and
runs folder, so several live side by side in one test process (like two ``BEES_HOME``).
"""

from __future__ import annotations

import secrets
import socket
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from bees_cli.cloud.login import Login
from bees_cli.cloud.server.storage import Storage
from bees_cli.engine.schedules import fire_service
from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord
from bees_cli.schedules.fires import FireService
from tests.engine.conftest import agent_yaml
from tests.servers import uvicorn_in_thread


@dataclass
class Cloud:
    """A Bees Cloud serving the real app over HTTP from a thread, on a SQLite file."""

    url: str
    storage: Storage


@pytest.fixture(scope="session")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    """One real Bees Cloud for the session (uvicorn in a thread, SQLite, real clock)."""
    from bees_cli.cloud.server.app import asgi, bind

    folder = tmp_path_factory.mktemp("cloud")
    storage = Storage(f"sqlite:///{folder / 'cloud.db'}")
    with uvicorn_in_thread(asgi(storage), bind("127.0.0.1", 0)) as (_, port):
        yield Cloud(f"http://127.0.0.1:{port}", storage)
    storage.close()


@dataclass
class Team:
    """A fresh team on the session cloud: ``tokens`` by person email."""

    name: str
    cloud: Cloud
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def maya(self) -> str:
        """Maya's email in this team."""
        return f"maya@{self.name}.example"

    @property
    def sam(self) -> str:
        """Sam's email in this team."""
        return f"sam@{self.name}.example"


@pytest.fixture
def team(cloud: Cloud) -> Team:
    """A fresh team with Maya and Sam."""
    name = f"team-{secrets.token_hex(4)}"
    assert cloud.storage.add_team(name) is True
    made = Team(name, cloud)
    for person in (made.maya, made.sam):
        made.tokens[person] = cloud.storage.add_person(person, name)
    return made


def closed_url() -> str:
    """Return an http URL on a loopback port nothing listens on (refuses at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def make_computer(root: Path, name: str, person: str | None, *, url: str | None = None,
                  token: str | None = None) -> Computer:
    """Return a computer whose state lives under ``root/name`` (like its own BEES_HOME)."""
    home = root / name
    (home / "runs").mkdir(parents=True, exist_ok=True)
    login = Login(url, token) if url is not None and token is not None else None
    return Computer(machine_id=secrets.token_hex(16), computer=name, person=person,
                    login=login, record_path=home / "record.db", runs_dir=home / "runs")


def record_of(computer: Computer) -> LocalRecord:
    """Return the computer's local record."""
    return LocalRecord(computer.record_path)


def write_workspace(root: Path, owner: str, *, log: Path) -> Path:
    """Write Maya's weekly-report workspace (Draft, Review, Done; Mondays 9:00 Paris)."""
    files = {
        "bees.yaml": "name: maya-space\ndefault_agent: writer\n",
        "processes/weekly-report.yaml": """\
            title: Weekly report
            stages:
              - name: Draft
                kind: work
                agents: [writer]
              - name: Review
                kind: review
                reviews: Draft
                agents: [reviewer]
              - name: Done
                kind: done
            """,
        "schedules/monday-report.yaml": f"""\
            process: weekly-report
            owner: {owner}
            calendar:
              days: [monday]
              time: "9:00"
            timezone: Europe/Paris
            title: Weekly report {{date}}
            """,
        "agents/writer.yaml": agent_yaml(env={"AGENT_LOG": str(log)}),
        "agents/reviewer.yaml": agent_yaml(env={"AGENT_LOG": str(log)}),
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


class FixedClock:
    """A clock that reads ``at`` (aware, UTC) until moved."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        """Move the clock on by ``seconds``."""
        self.at += timedelta(seconds=seconds)


class Sleeps:
    """An async sleep that records each wait instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def service(computer: Computer, workspace: Path, at: datetime, **kwargs: object) -> FireService:
    """A fire service for ``computer`` whose clock reads ``at``."""
    return fire_service(computer, workspace, clock=FixedClock(at), **kwargs)

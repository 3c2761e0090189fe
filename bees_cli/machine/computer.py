"""One computer: the only door to its paths, identity, sign-in, record and engine address.

Why: :meth:`Computer.load` at the CLI edge is the one place that reads ``BEES_HOME`` (or
platformdirs); everything below takes this object, so a test can run two or three
"computers" side by side in one process.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

    from bees_cli.machine.signin import Login


@dataclass(frozen=True)
class Computer:
    """This computer's identity and where its state lives.

    Attributes:
        machine_id: random id made once (32 hex digits).
        computer: the computer's name, e.g. ``maya-laptop``.
        person: the signed-in person (email), or None when not set.
        login: the Bees Cloud sign-in, or None when no cloud is configured (then every
            cloud step is skipped: no keys, no owners, no shared record).
        record_path: the local record database (``record.db``).
        runs_dir: where run folders are made when the workspace names no run folder.
        data: the data folder (temporal.db, engine.json, worker.json, logs); default: the
            folder of ``record_path``.
        home: the ``BEES_HOME`` this computer was loaded from, handed to the programs it
            starts (stages, so ``bees action`` reaches this computer), or None (platformdirs).
        state: the folder of small state files (machine.json, links.json, cloud.json), or
            None when unknown (a computer made by a test).
        transport: an httpx async transport for the cloud client (tests), or None.
        cloud_sleep: how the cloud client waits between its own retries (tests), or None.
        workspace_env: the workspace ``BEES_WORKSPACE`` names (the default of ``-w``), or
            None; ``bees doctor`` says where its workspace came from.
    """

    machine_id: str
    computer: str
    person: str | None
    login: Login | None
    record_path: Path
    runs_dir: Path
    data: Path | None = None
    home: Path | None = None
    state: Path | None = None
    transport: httpx.AsyncBaseTransport | None = field(default=None, compare=False)
    cloud_sleep: Callable[[float], Awaitable[None]] | None = field(default=None, compare=False)
    workspace_env: Path | None = None

    @classmethod
    def load(cls, home: Path | None = None) -> Computer:
        """Return the computer whose home is ``home``, or this one as ``BEES_HOME`` (or
        platformdirs) describes it; the one place that reads them.

        Args:
            home: a computer's home folder (``state/`` and ``data/`` under it), or None.

        The sign-in is the saved one with ``BEES_CLOUD_URL`` and ``BEES_TOKEN`` over it
        (:func:`~bees_cli.machine.signin.effective_login`).

        Raises:
            UserError: the stored sign-in file is not valid, or only half of a sign-in is
                in the environment.
            StateFileInvalid: ``machine.json`` is not valid.
        """
        from bees_cli.machine.identity import load_identity
        from bees_cli.machine.paths import bees_home, data_dir, default_runs_dir, state_dir
        from bees_cli.machine.signin import effective_login

        home = home.resolve() if home is not None else bees_home()
        state = state_dir(home)
        identity = load_identity(state)
        data = data_dir(home)
        return cls(
            machine_id=identity.machine_id,
            computer=identity.computer,
            person=identity.person,
            login=effective_login(state),
            workspace_env=_workspace_env(),
            record_path=data / "record.db",
            runs_dir=default_runs_dir(home),
            data=data,
            home=home,
            state=state,
        )

    @property
    def data_dir(self) -> Path:
        """The data folder: databases, ``engine.json``, ``worker.json``, logs."""
        return self.data if self.data is not None else self.record_path.parent

    @property
    def temporal_db(self) -> Path:
        """The embedded engine's database (``temporal.db``)."""
        return self.data_dir / "temporal.db"

    @property
    def engine_log(self) -> Path:
        """The embedded engine's log (``temporal.log``)."""
        return self.data_dir / "temporal.log"

    @property
    def worker_lock(self) -> Path:
        """The lock one ``bees run`` holds on this computer (``worker.lock``)."""
        return self.data_dir / "worker.lock"

    @property
    def links_path(self) -> Path | None:
        """The folder links file (``links.json``), or None when the state folder is unknown."""
        return None if self.state is None else self.state / "links.json"

    def process_env(self) -> dict[str, str]:
        """Return what a program this computer starts must know to reach it again
        (``BEES_HOME`` when loaded from one), e.g. ``bees action`` inside a stage."""
        return {} if self.home is None else {"BEES_HOME": str(self.home)}

    @property
    def has_cloud(self) -> bool:
        """True when a Bees Cloud is configured (signed in) on this computer."""
        return self.login is not None


WORKSPACE_VARIABLE = "BEES_WORKSPACE"
"""The environment variable that gives the default workspace (``-w``) to every command."""


def _workspace_env() -> Path | None:
    import os

    value = os.environ.get(WORKSPACE_VARIABLE, "").strip()
    return Path(value).expanduser().resolve() if value else None

"""One computer as the engine sees it: identity, sign-in, record file, runs folder, passed around.

Why: the fire path and the sync loop take this object instead of reading ``BEES_HOME``
themselves, so a test can run two or three "computers" side by side in one process.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

    from bees_cli.cloud.client import AsyncCloudClient, CloudClient
    from bees_cli.cloud.login import Login


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
        transport: an httpx async transport for the cloud client (tests), or None.
        cloud_sleep: how the cloud client waits between its own retries (tests), or None.
    """

    machine_id: str
    computer: str
    person: str | None
    login: Login | None
    record_path: Path
    runs_dir: Path
    transport: httpx.AsyncBaseTransport | None = field(default=None, compare=False)
    cloud_sleep: Callable[[float], Awaitable[None]] | None = field(default=None, compare=False)

    @classmethod
    def load(cls) -> Computer:
        """Return this computer as ``BEES_HOME`` (or platformdirs) describes it.

        Raises:
            UserError: the stored sign-in file is not valid.
        """
        from bees_cli.cloud.login import load_login
        from bees_cli.machine.identity import load_identity
        from bees_cli.machine.paths import data_dir, default_runs_dir

        identity = load_identity()
        return cls(
            machine_id=identity.machine_id,
            computer=identity.computer,
            person=identity.person,
            login=load_login(),
            record_path=data_dir() / "record.db",
            runs_dir=default_runs_dir(),
        )

    @property
    def has_cloud(self) -> bool:
        """True when a Bees Cloud is configured (signed in) on this computer."""
        return self.login is not None

    def cloud(
        self, *, retries: int = 0, timeout: float = 5.0, backoff: float = 0.25
    ) -> AsyncCloudClient | None:
        """Return an async cloud client for the sign-in, or None without one.

        Args:
            retries: the client's own extra attempts (callers that count tries pass 0).
            timeout: seconds for connect, read and write.
            backoff: seconds before the client's first retry.
        """
        if self.login is None:
            return None
        from bees_cli.cloud.client import AsyncCloudClient

        kwargs: dict[str, Any] = {}
        if self.cloud_sleep is not None:
            kwargs["sleep"] = self.cloud_sleep
        return AsyncCloudClient(
            self.login.url,
            self.login.token,
            transport=self.transport,
            retries=retries,
            timeout=timeout,
            backoff=backoff,
            **kwargs,
        )

    def sync_cloud(self, *, retries: int = 0, timeout: float = 5.0) -> CloudClient | None:
        """Return a blocking cloud client for the sign-in (the CLI), or None without one."""
        if self.login is None:
            return None
        from bees_cli.cloud.client import CloudClient

        return CloudClient(self.login.url, self.login.token, retries=retries, timeout=timeout)

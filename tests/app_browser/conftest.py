"""Fixtures for the browser tests: Chromium (Debian's) through Playwright, computers that run
real ``bees run`` workers and real ``bees app`` processes, the weekly-report example with gates.

One Chromium serves the whole session (a fresh context per page). Each computer is its own
``BEES_HOME``; its worker talks to the session's Temporal dev server (tests/engine) and, for
two computers, to the session's Bees Cloud (tests/e2e).
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

import httpx
import pytest
import pytest_asyncio

from bees_cli.cloud.login import Login, save_login
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import set_identity
from bees_cli.machine.links import link_folder
from bees_cli.record.sync import Syncer
from tests.app.conftest import LocalhostTransport
from tests.e2e.conftest import Team, cloud, team  # noqa: F401 - fixtures
from tests.engine.conftest import dev_env  # noqa: F401 - a fixture
from tests.support.wait import until

if TYPE_CHECKING:  # playwright itself is imported by the browser fixture
    from playwright.async_api import Browser, Page

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "weekly-report"
GATE = Path(__file__).resolve().parent / "gate.py"
SCREENSHOTS = REPO / "docs" / "screenshots"

CHROMIUM = Path("/usr/bin/chromium")
"""Debian's Chromium (``apt-get install chromium``; ``.ci/run`` installs it). Playwright
never downloads a browser here."""

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

WIDE = {"width": 1100, "height": 720}
"""The desktop window the tests (and the screenshots) use."""

LIVE = 30_000
"""Milliseconds a live page gets to show a change (polling every second, a stage's start),
and an action to find its element."""


PHONE = {"width": 390, "height": 844}
"""A phone's window (issue 28, point 5: the layout works at 390 px wide)."""


def write_screenshots() -> bool:
    """True when this run writes the docs' screenshots (``BEES_WRITE_SCREENSHOTS=1``)."""
    return os.environ.get("BEES_WRITE_SCREENSHOTS") == "1"


async def save_screenshot(page: Page, name: str) -> bytes:
    """Take a screenshot of the whole page at its window's width; into docs/screenshots/NAME
    when this run writes them (:func:`write_screenshots`). Returns the PNG."""
    shot = await page.screenshot(full_page=True)
    assert shot.startswith(b"\x89PNG")
    if write_screenshots():
        SCREENSHOTS.mkdir(exist_ok=True)
        (SCREENSHOTS / name).write_bytes(shot)
    return shot


async def fits(page: Page) -> list[int]:
    """Return the page's scroll width and the window's width (equal: nothing sideways)."""
    return list(await page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"))


@pytest_asyncio.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    """One headless Chromium for the session, Debian's binary driven by Playwright."""
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=LIVE)
    async with async_playwright() as driver:
        chromium = await driver.chromium.launch(executable_path=str(CHROMIUM),
                                                args=CHROMIUM_ARGS, headless=True)
        yield chromium
        await chromium.close()


@asynccontextmanager
async def open_page(browser: Browser, url: str, *, width: int = WIDE["width"],
                    height: int = WIDE["height"], script: bool = True) -> AsyncIterator[Page]:
    """Open ``url`` (an app's first URL, with its secret) in a fresh context (JavaScript off
    when not ``script``); close it after."""
    context = await browser.new_context(viewport={"width": width, "height": height},
                                        java_script_enabled=script)
    context.set_default_timeout(LIVE)
    try:
        page = await context.new_page()
        await page.goto(url)
        yield page
    finally:
        await context.close()


# -- the workspace ------------------------------------------------------------------------

def weekly_report(root: Path, gates: Path, *, shared: bool = False) -> Path:
    """Copy examples/weekly-report to ``root`` with every agent behind a gate in ``gates``.

    Args:
        root: the new workspace folder.
        gates: while ``gates/STAGE`` exists, that stage's agent waits (see gate.py).
        shared: keep run folders in the declared folder ``shared`` (for handovers).

    Returns:
        ``root``.
    """
    listed = subprocess.run(["git", "ls-files", "-z", "."], cwd=EXAMPLE, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(EXAMPLE / name, root / name)
    (root / "outbox").mkdir(exist_ok=True)
    for agent in (root / "agents").glob("*.yaml"):
        text = agent.read_text(encoding="utf-8")
        text = text.replace('command: ["${BEES_PYTHON}", ',
                            f'command: ["${{BEES_PYTHON}}", "{GATE}", ')
        agent.write_text(text + f'  env:\n    BEES_GATE: "{gates}"\n', encoding="utf-8")
    if shared:
        with open(root / "bees.yaml", "a", encoding="utf-8") as handle:
            handle.write("run_folder: shared\n")
        (root / "folders" / "shared.yaml").write_text(
            "description: run folders, synced between computers\n", encoding="utf-8")
    return root


# -- computers ----------------------------------------------------------------------------

@dataclass
class App:
    """A running ``bees app --no-open --json``: its first URL (with the secret) and port."""

    process: subprocess.Popen[str]
    url: str
    port: int

    @property
    def base(self) -> str:
        """``http://bees-<hex>.localhost:PORT``: the app's own name (Chromium resolves it to
        loopback itself), from its first URL."""
        return self.url.split("/?", 1)[0]

    def item_page(self, item: str) -> re.Pattern[str]:
        """The URL of ``item``'s page, as the app links it or answers a POST with (303 back,
        perhaps with a ``?note=`` naming what the action did)."""
        return re.compile("^" + re.escape(f"{self.base}/items/{item}") + r"(\?note=[\w-]+)?$")

    def stop(self) -> int:
        """Stop the app with SIGTERM; return its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(5)


class Machine:
    """One computer: its ``BEES_HOME``, its ``bees`` commands, its ``bees run`` and apps."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.worker: subprocess.Popen[bytes] | None = None
        self.apps: list[App] = []

    @classmethod
    def make(cls, home: Path, name: str, person: str, *, cloud_url: str | None = None,
             token: str | None = None, shared: Path | None = None) -> Machine:
        """Set up a computer named ``name`` for ``person`` at ``home`` (signed in to Bees Cloud
        when given its URL and a token; folder ``shared`` linked to ``shared`` when given)."""
        home.mkdir(parents=True)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("BEES_HOME", str(home))
            set_identity(person=person, computer=name)
            if cloud_url is not None and token is not None:
                save_login(Login(cloud_url, token))
            if shared is not None:
                link_folder("shared", shared, ["shared"])
        return cls(home)

    @property
    def computer(self) -> Computer:
        """This computer as the use cases see it."""
        return Computer.load(self.home)

    def env(self) -> dict[str, str]:
        """The environment of this computer's ``bees`` processes."""
        return {**{k: v for k, v in os.environ.items() if not k.startswith("BEES_")},
                "BEES_HOME": str(self.home)}

    def bees(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``bees ARGS`` here; never raises on a non-zero exit."""
        return subprocess.run([sys.executable, "-m", "bees_cli", *args], env=self.env(),
                              capture_output=True, text=True, timeout=120, check=False)

    def create(self, workspace: Path, title: str) -> str:
        """Create a weekly report titled ``title``; return its item id."""
        made = self.bees("item", "create", "weekly-report", "-w", str(workspace),
                         "--title", title)
        assert made.returncode == 0, made.stderr
        return made.stdout.strip()

    async def run(self, workspace: Path, address: str) -> None:
        """Start ``bees run`` on ``workspace`` against the engine at ``address``; wait until
        its worker is up (``worker.json``)."""
        with open(self.home / "run.log", "ab") as out:
            self.worker = subprocess.Popen(
                [sys.executable, "-m", "bees_cli", "run", "-w", str(workspace),
                 "--temporal-address", address], env=self.env(), stdout=out, stderr=out)
        await until(lambda: (self.home / "data" / "worker.json").exists(),
                    f"bees run did not start: {self.home / 'run.log'}")

    def app(self, workspace: Path) -> App:
        """Start ``bees app --no-open --json`` and read its first line (the URL)."""
        log = open(self.home / "app.log", "ab")  # noqa: SIM115 - the process keeps it
        process = subprocess.Popen(
            [sys.executable, "-m", "bees_cli", "app", "--workspace", str(workspace),
             "--no-open", "--json"], env=self.env(), stdout=subprocess.PIPE, stderr=log,
            text=True)
        log.close()
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 60)
        line = process.stdout.readline() if ready else ""
        if not line:
            process.kill()
            process.wait(5)
            pytest.fail(f"bees app printed no URL: {(self.home / 'app.log').read_text()}")
        # the rest of stdout goes to stdout.log, so a full pipe never blocks the app
        threading.Thread(target=_drain, args=(process.stdout, self.home / "stdout.log"),
                         daemon=True).start()
        first = json.loads(line)
        match = re.fullmatch(r"http://bees-[0-9a-f]{32}\.localhost:(\d+)/\?secret=[^&\s]+",
                             first["url"])
        assert match and int(match.group(1)) == first["port"] and first["version"] == 1, line
        app = App(process, first["url"], first["port"])
        self.apps.append(app)
        return app

    async def sync(self) -> None:
        """Send this computer's changes to the shared record and fetch the team's, once."""
        await Syncer(self.computer).sync_once()

    def stop(self) -> dict[str, int]:
        """Stop the apps and the worker; return each app's exit code by port."""
        codes = {app.port: app.stop() for app in self.apps}
        self.apps.clear()
        if self.worker is not None and self.worker.poll() is None:
            self.worker.terminate()
            self.worker.wait(30)
        return codes


@pytest.fixture
def machines() -> Iterator[Callable[..., Machine]]:
    """Make computers (see :meth:`Machine.make`); each is stopped when the test ends, and each
    app must have stopped with exit code 0."""
    made: list[Machine] = []

    def make(*args: object, **kwargs: object) -> Machine:
        machine = Machine.make(*args, **kwargs)  # type: ignore[arg-type]
        made.append(machine)
        return machine

    yield make
    codes = {port: code for machine in made for port, code in machine.stop().items()}
    assert set(codes.values()) <= {0}, f"bees app exit codes by port: {codes}"


def _drain(stream: IO[str], path: Path) -> None:
    """Copy what is left of ``stream`` into the file ``path`` until it closes."""
    with open(path, "a", encoding="utf-8") as out:
        for line in stream:
            out.write(line)


@contextmanager
def signed_in(app: App) -> Iterator[httpx.Client]:
    """An httpx client that opened the app's first URL (so it holds the session cookie)."""
    with httpx.Client(base_url=app.base, follow_redirects=False, timeout=10,
                      transport=LocalhostTransport()) as client:
        first = client.get(app.url.removeprefix(app.base))
        assert (first.status_code, first.headers.get("location")) == (303, "/items"), first.text
        yield client

"""Fixtures shared by every test folder: an isolated computer and a way to run ``bees``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

PYCACHE = REPO / ".pytest_cache" / "pycache"
"""Where compiled modules go when ``PYTHONDONTWRITEBYTECODE`` is set (git ignores it)."""

if sys.dont_write_bytecode:
    # Without bytecode files each pytest-xdist worker rewrites and compiles every test module
    # again (about 4 s of CPU each in the fast part) and each ``bees`` process the tests start
    # compiles the package again: keep them, out of the source folders. Set before any test
    # module is imported, and passed on to the processes the tests start.
    sys.dont_write_bytecode = False
    sys.pycache_prefix = str(PYCACHE)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(PYCACHE)

from tests.support import examples  # noqa: E402 - compiled with the settings above

INTEGRATION_FOLDERS = ("engine", "cloud", "e2e", "docs", "app_browser")
"""Test folders that start a real Temporal server or a real Bees Cloud: marked ``integration``,
so ``pytest -m "not integration and not slow"`` is the fast part (no engine, no cloud, no
other server)."""

SERVER_FILES = ("agents/test_mcp_addon.py", "agents/test_mcp_doctor.py",
                "agents/test_mcp_sessions.py", "app/test_command.py", "app/test_one_app.py")
"""Test files outside those folders whose tests start another real server as a process: an
MCP add-on's server (each start imports the ``mcp`` SDK, about 1.6 s of CPU) or ``bees app``
serving. Marked ``integration`` too: the fast part starts no server."""

CLOUD_FIXTURES = frozenset({"server", "server_factory", "postgres_server", "cloud",
                            "clocked_server"})
"""Fixtures that start a real Bees Cloud (``tests/cloud/conftest.py``, ``tests/e2e/conftest.py``)
or the PostgreSQL server under it: a test outside the integration folders that uses one is
marked ``integration`` too (the runners' tests, a schedule's refused key), whatever its
folder."""


def pytest_configure(config: pytest.Config) -> None:
    """Drop ``COLUMNS`` and ``LINES`` from this process's environment: pytest-xdist sets them
    (80 and 24) in its workers, and a ``bees`` table piped to a test is cut to ``COLUMNS``
    (:func:`bees_cli.cli.table.table_width`); a test that wants a width sets it itself.
    Property tests try fewer examples in the fast part outside CI
    (:mod:`tests.support.examples`)."""
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
    examples.FULL = bool(os.environ.get("CI")) or not _integration_deselected(config)


def _integration_deselected(config: pytest.Config) -> bool:
    """True when ``-m`` leaves out every ``integration`` test, whatever its other marks
    (``-m "not integration and not slow"``, the fast part)."""
    from _pytest.mark.expression import Expression

    text = config.getoption("markexpr", "")
    if not text:
        return False
    expression = Expression.compile(text)
    return not any(
        expression.evaluate(lambda name, /, _others=others, **_: name == "integration" or _others)
        for others in (False, True))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Do not even import the integration folders when ``-m`` deselects them all: the fast
    part would import Temporal, Playwright and the cloud server's modules in each worker only
    to drop their tests (about a third of its time on 2 cores)."""
    tests = Path(__file__).resolve().parent
    if (collection_path.parent == tests and collection_path.name in INTEGRATION_FOLDERS
            and _integration_deselected(config)):
        return True
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``integration`` every test under an integration folder (INTEGRATION_FOLDERS), in a
    file that starts a server (SERVER_FILES) or that starts a Bees Cloud through a fixture
    (CLOUD_FIXTURES)."""
    tests = Path(__file__).resolve().parent
    for item in items:
        relative = Path(item.path).resolve().relative_to(tests)
        in_folder = bool(relative.parts) and relative.parts[0] in INTEGRATION_FOLDERS
        if (in_folder or relative.as_posix() in SERVER_FILES
                or CLOUD_FIXTURES & set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.integration)
EXAMPLE = REPO / "examples" / "weekly-report"


@pytest.fixture
def bees_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``BEES_HOME`` for this test (one isolated computer), set in ``os.environ``."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("BEES_HOME", str(home))
    return home


BeesRunner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def bees(request: pytest.FixtureRequest, bees_home: Path) -> BeesRunner:
    """Run ``python -m bees_cli ARGS`` on the isolated computer, in this process
    (:func:`tests.support.inprocess.run_entry`: the same exit code, stdout and stderr as the
    subprocess, without a new interpreter's imports each time). In the integration folders
    it is :func:`bees_process`'s real process: there ``bees run`` and its like hold signal
    handlers, logging and an event loop of their own, which a test's thread cannot host.

    Call as ``bees("validate", str(path), cwd=..., env={...})``; returns the completed
    process with text ``stdout`` and ``stderr`` (never raises on a non-zero exit). A test
    about what only a real process shows (a signal, a closed pipe, a child that outlives the
    command) uses :func:`bees_process`.
    """
    from tests.support.inprocess import run_entry

    if request.node.get_closest_marker("integration") is not None:
        runner: BeesRunner = request.getfixturevalue("bees_process")
        return runner

    def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 120, input: str | None = None  # noqa: A002 - stdin's text
            ) -> subprocess.CompletedProcess[str]:
        del timeout  # the call ends with the command; pytest-timeout bounds the test
        return run_entry(list(args), env=_bees_env(bees_home, env), cwd=cwd, input=input)

    return run


@pytest.fixture
def bees_process(bees_home: Path) -> BeesRunner:
    """Run ``python -m bees_cli ARGS`` in a subprocess on the isolated computer (as
    :func:`bees`, for what only a real process shows)."""

    def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 120, input: str | None = None  # noqa: A002 - stdin's text
            ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "bees_cli", *args],
            cwd=cwd,
            env=_bees_env(bees_home, env),
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
        )

    return run


def _bees_env(bees_home: Path, env: dict[str, str] | None) -> dict[str, str]:
    """This process's environment with ``BEES_HOME`` and ``env`` over it."""
    full_env = dict(os.environ)
    full_env["BEES_HOME"] = str(bees_home)
    if env:
        full_env.update(env)
    return full_env


RUN_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (?:INFO|WARNING|ERROR) ")
"""The time and level before each line ``bees run`` prints (:mod:`bees_cli.cli.logs`)."""


def run_lines(stderr: str) -> list[str]:
    """Return the lines of ``bees run``'s stderr without their time and level."""
    return [RUN_LINE.sub("", line, count=1) for line in stderr.splitlines()]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collection built (every module, the package's models) out of the garbage
    collector's sight (``gc.freeze``): they live to the end, and each full collection during
    the tests would otherwise walk them all again."""
    import gc

    gc.collect()
    gc.freeze()

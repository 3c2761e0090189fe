"""The fast part (``-m "not integration and not slow"``) starts no server: the files that do
are named in ``tests/conftest.py`` and marked ``integration`` there."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import INTEGRATION_FOLDERS, SERVER_FILES

TESTS = Path(__file__).resolve().parent

STARTS_A_SERVER = re.compile(
    r"from tests\.mcp_server import [^\n]*\b(SCRIPT|http_server)\b"  # an MCP add-on's server
    r"|from tests\.agents\.test_mcp_addon import"  # its helpers that start one
    r"|from tests\.app\.test_command import [^\n]*\bstart\b")  # `bees app` serving
"""An import a test file makes to start a server."""


def test_every_named_folder_and_file_exists() -> None:
    assert [name for name in INTEGRATION_FOLDERS if not (TESTS / name).is_dir()] == []
    assert [name for name in SERVER_FILES if not (TESTS / name).is_file()] == []


def test_a_file_that_starts_a_server_is_marked_integration() -> None:
    starting = sorted(
        path.relative_to(TESTS).as_posix() for path in TESTS.rglob("test_*.py")
        if STARTS_A_SERVER.search(path.read_text(encoding="utf-8")))
    unmarked = [name for name in starting
                if name.split("/")[0] not in INTEGRATION_FOLDERS and name not in SERVER_FILES]
    assert unmarked == []
    assert {"agents/test_mcp_addon.py", "agents/test_mcp_doctor.py",
            "agents/test_mcp_sessions.py", "app/test_one_app.py"} <= set(starting)

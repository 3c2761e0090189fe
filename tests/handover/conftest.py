"""Fixtures of the handover tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.handover.helpers import make_run, write


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A run folder of three files with a checkpoint written for it."""
    folder = make_run(tmp_path / "run")
    write(folder)
    return folder

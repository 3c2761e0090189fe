"""Eligibility hands its reasons as codes with their values (issue 24, point 3): each
folder that is not usable here and the missing agent, in the order of its sentences and
worded the same, so the engine stores them without reading the sentences back."""

from __future__ import annotations

from pathlib import Path

import pytest

from bees_cli.agents.eligibility import check_eligibility
from bees_cli.agents.pieces import check_piece
from bees_cli.machine.links import link_folder
from bees_cli.why import AddonMissing, Reason, SkippedAgent
from bees_cli.workspace.models import Agent
from tests.agents.test_eligibility import RUNNER, snapshot


def test_unusable_folders_and_no_agent_are_handed_as_codes(
        bees_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BEES_TEST_GMAIL_TOKEN", raising=False)
    snap = snapshot(tmp_path, item_folders=["extra"], agents={
        "writer": Agent(runner=RUNNER, tools=["gmail.read"]),
        "reviewer": Agent(runner=RUNNER, enabled=False)})
    result = check_eligibility(snapshot=snap, stage_name="Draft", reviewed_by=None)

    archive = str((tmp_path / "archive").resolve())
    assert result.whys == (
        Reason(code="folder_not_linked", folder="extra"),
        Reason(code="folder_not_linked", folder="team-notes"),
        Reason(code="folder_default_not_dir", folder="archive", path=archive),
        Reason(code="no_agent", stage="Draft", skipped=[
            SkippedAgent(agent="writer", why="addons_not_connected", addons=[
                AddonMissing(addon="gmail", missing=["env BEES_TEST_GMAIL_TOKEN"])]),
            SkippedAgent(agent="reviewer", why="disabled")]))
    assert tuple(r.words() for r in result.whys) == result.reasons


def test_a_piece_with_no_agent_hands_its_callers_as_in_chain(
        bees_home: Path, tmp_path: Path) -> None:
    for name in ("notes", "archive"):
        (tmp_path / name).mkdir()
    link_folder("team-notes", tmp_path / "notes", ["team-notes"])
    snap = snapshot(tmp_path, agents={"writer": Agent(runner=RUNNER),
                                      "reviewer": Agent(runner=RUNNER, enabled=False)})
    result = check_piece(snapshot=snap, stage_name="Draft", named="reviewer",
                         chain=["writer"])

    assert result.whys == (Reason(code="no_agent_for_piece", stage="Draft", skipped=[
        SkippedAgent(agent="reviewer", why="disabled"),
        SkippedAgent(agent="writer", why="in_chain")]),)
    assert tuple(r.words() for r in result.whys) == result.reasons

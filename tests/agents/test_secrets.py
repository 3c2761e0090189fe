"""Secrets by reference (issue 27, point 3): the names an offer carries, never values."""

from __future__ import annotations

from pathlib import Path

from bees_cli.agents.secrets import missing_secrets, secret_names
from bees_cli.workspace.models import Agent, ModelRunner
from bees_cli.workspace.runners import ModelSpec

from .test_eligibility import RUNNER, snapshot


def test_the_names_are_the_chosen_agents_key_and_its_addons_env(tmp_path: Path) -> None:
    model = ModelRunner(model=ModelSpec(base_url="http://127.0.0.1:9/v1", name="m",
                                        api_key_env="OPENAI_API_KEY"))
    snap = snapshot(tmp_path, agents={
        "writer": Agent(runner=model, tools=["gmail.read"]),
        "reviewer": Agent(runner=RUNNER)})
    # the add-on counts as connected: the offering computer cannot know the runner's
    assert secret_names(snap, "Draft") == ["BEES_TEST_GMAIL_TOKEN", "OPENAI_API_KEY"]
    assert secret_names(snap, "Review") == []  # a command agent with no tools
    assert secret_names(snap, "Done") == []


def test_a_missing_secret_is_named_and_an_empty_one_is_missing() -> None:
    names = ["A_KEY", "B_KEY", "C_KEY"]
    assert missing_secrets(names, {"A_KEY": "x", "B_KEY": ""}) == ["B_KEY", "C_KEY"]
    assert missing_secrets([], {}) == []

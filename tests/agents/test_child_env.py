"""What a child Bees starts (a stage's agent, an add-on) is handed of the environment."""

from __future__ import annotations

from pathlib import Path

from bees_cli.agents.child_env import child_environment
from bees_cli.machine.signin import effective_login


def test_a_computer_signed_in_by_its_environment_hands_its_child_neither_half(
        tmp_path: Path) -> None:
    # a runner signs in by BEES_CLOUD_URL and BEES_TOKEN alone (issue 27); the token is
    # withheld from children, so the URL is too: half a sign-in made the agent's own
    # `bees action` fail ("BEES_CLOUD_URL is set but no token is")
    parent = {"PATH": "/usr/bin", "BEES_HOME": str(tmp_path), "BEES_STAGE": "Send",
              "BEES_CLOUD_URL": "http://cloud:8765", "BEES_TOKEN": "bees.runner-secret"}
    child = child_environment(parent)
    assert child == {"PATH": "/usr/bin", "BEES_HOME": str(tmp_path), "BEES_STAGE": "Send"}
    assert effective_login(tmp_path / "state", child) is None
    # signed in by the saved file, with the URL overridden: the child keeps the URL
    saved = {"PATH": "/usr/bin", "BEES_CLOUD_URL": "http://cloud:8765"}
    assert child_environment(saved) == saved

"""The generated workspace reference is current and says what the models say."""

from __future__ import annotations

from pathlib import Path

import pytest

from bees_cli.errors import UserError
from bees_cli.workspace import reference
from bees_cli.workspace.models import KINDS, WorkspaceConfig

REPO = Path(__file__).resolve().parents[2]


def test_docs_reference_is_current() -> None:
    on_disk = (REPO / "docs" / "workspace-reference.md").read_text(encoding="utf-8")
    assert on_disk == reference.generate(), (
        "docs/workspace-reference.md is stale: run python -m bees_cli.workspace.reference"
    )


def test_every_field_of_every_kind_has_a_row() -> None:
    text = reference.generate()
    for model in (WorkspaceConfig, *KINDS.values()):
        for name in model.model_fields:
            assert f"| `{name}` |" in text, f"{model.__name__}.{name} missing"


def test_row_shows_type_default_and_limits() -> None:
    text = reference.generate()
    assert ("| `max_turns` | integer | no | `20` | At most this many model calls per stage; "
            "then the stage fails. (≥ 1; ≤ 1,000) |") in text
    assert ("| `tools` | list of string | no |  | Add-on actions as ADDON.ACTION. "
            "(each ADDON.ACTION, two names) |") in text
    assert ("| `kind` | `\"work\"` \\| `\"review\"` \\| `\"done\"` | yes |  |") in text


def test_write_refuses_a_folder_that_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "docs"
    blocker.write_text("x")
    with pytest.raises(UserError, match="cannot write"):
        reference.write(blocker / "ref.md")
    assert blocker.read_text() == "x"

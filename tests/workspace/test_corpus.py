"""The corpus of broken workspaces: each case gives its exact problem lines and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bees_cli.errors import WorkspaceInvalid
from bees_cli.workspace.loader import check_folder, load_workspace
from bees_cli.workspace.yamlio import MAX_FILE_BYTES
from tests.conftest import BeesRunner
from tests.workspace.corpus_cases import BASE, build, case_names, expected

CASES = case_names()
CLI_CASES = CASES[::3]
"""A third of the cases (every third by name) also run through the CLI (``bees`` fixture)."""

HINT = "hint: fix each problem listed, then run `bees validate`"


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 30


def test_base_is_valid() -> None:
    workspace = load_workspace(BASE)
    assert sorted(workspace.agents) == ["reviewer", "writer"]
    assert workspace.warnings == ()


@pytest.mark.parametrize("name", CASES)
def test_case_problems(name: str, tmp_path: Path) -> None:
    root = build(name, tmp_path / "w")
    lines = [problem.format() for problem in check_folder(root).problems]
    assert lines == expected(name)
    with pytest.raises(WorkspaceInvalid) as raised:
        load_workspace(root)
    assert [p.format() for p in raised.value.problems] == expected(name)


def _error_line(count: int) -> str:
    return f"error: the workspace has {count} problem{'s' if count != 1 else ''}"


@pytest.mark.parametrize("name", CLI_CASES)
def test_case_through_cli(name: str, tmp_path: Path, bees: BeesRunner) -> None:
    root = build(name, tmp_path / "w")
    result = bees("validate", str(root))
    lines = expected(name)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [*lines, _error_line(len(lines)), HINT]


def test_case_json_through_cli(tmp_path: Path, bees: BeesRunner) -> None:
    root = build("misspelt-agent-name", tmp_path / "w")
    result = bees("validate", "--json", "-w", str(root))
    assert result.returncode == 2
    assert json.loads(result.stdout) == {
        "version": 1,
        "error": {
            "code": "invalid_workspace",
            "message": "the workspace has 1 problem",
            "hint": "fix each problem listed, then run `bees validate`",
            "problems": [
                {
                    "file": "processes/report.yaml",
                    "line": 5,
                    "column": 14,
                    "field": "stages[0].agents[0]",
                    "message": "unknown agent 'writr' — did you mean 'writer'?",
                    "severity": "error",
                }
            ],
        }
    }


def test_oversized_file(tmp_path: Path, bees: BeesRunner) -> None:
    root = build("misspelt-key", tmp_path / "w")
    padding = "#" * 99 + "\n"
    text = "path: notes\n" + padding * (MAX_FILE_BYTES // len(padding) + 1)
    (root / "folders" / "notes.yaml").write_text(text, "utf-8")
    size = len(text.encode("utf-8"))
    result = bees("validate", str(root))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"folders/notes.yaml:1:1  file is too big: {size} bytes (the limit is 1 MiB)",
        "processes/report.yaml:5:5  stages[0].agnets  "
        "unknown key 'agnets' — did you mean 'agents'?",
        _error_line(2),
        HINT,
    ]

"""``bees validate``, ``bees init`` and ``bees schemas write`` through the real CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bees_cli.workspace.schemas import generate
from tests.conftest import EXAMPLE, BeesRunner
from tests.workspace.corpus_cases import BASE

EXAMPLE_SUMMARY = "ok: 1 process, 3 agents, 1 schedule, 2 folders, 1 add-on\n"


def test_validate_example(bees: BeesRunner) -> None:
    result = bees("validate", str(EXAMPLE))
    assert (result.returncode, result.stdout, result.stderr) == (0, EXAMPLE_SUMMARY, "")


def test_validate_example_json(bees: BeesRunner) -> None:
    result = bees("validate", "--json", "-w", str(EXAMPLE))
    assert result.returncode == 0
    assert json.loads(result.stdout) == {
        "version": 1,
        "ok": True,
        "workspace": str(EXAMPLE),
        "name": "weekly-report-example",
        "counts": {"processes": 1, "agents": 3, "schedules": 1, "folders": 2, "addons": 1},
        "warnings": [],
        "tools": [],
    }


def test_validate_finds_workspace_from_a_subfolder(bees: BeesRunner) -> None:
    result = bees("validate", cwd=EXAMPLE / "notes")
    assert (result.returncode, result.stdout) == (0, EXAMPLE_SUMMARY)


def test_validate_without_workspace(bees: BeesRunner, tmp_path: Path) -> None:
    result = bees("validate", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        "error: no workspace: neither this folder nor a parent holds bees.yaml\n"
        "hint: pass the workspace folder with -w, or create one with `bees init DIR`\n"
    )


def test_bees_yml_instead_of_yaml(bees: BeesRunner, tmp_path: Path) -> None:
    (tmp_path / "bees.yml").write_text("name: x\n")
    result = bees("validate", str(tmp_path))
    assert result.returncode == 2
    assert (
        result.stderr
        == f"error: {tmp_path}: no bees.yaml here\nhint: rename bees.yml to bees.yaml\n"
    )


def test_stray_files_warn_but_validate(bees: BeesRunner, tmp_path: Path) -> None:
    root = tmp_path / "w"
    shutil.copytree(BASE, root)
    (root / "agents" / "README.md").write_text("notes\n")
    (root / "agents" / ".gitkeep").write_text("")
    (root / "agents" / "old").mkdir()
    (root / "Addon").mkdir()
    (root / "scripts").mkdir()
    result = bees("validate", str(root))
    assert result.returncode == 0
    assert result.stdout == "ok: 1 process, 2 agents, 1 schedule, 2 folders, 1 add-on\n"
    assert result.stderr == (
        "Addon/:1:1  warning: folder not read — did you mean 'addons'?\n"
        "agents/README.md:1:1  warning: file not read: a kind folder holds only NAME.yaml files\n"
        "agents/old:1:1  warning: folder not read: a kind folder holds only NAME.yaml files\n"
    )
    as_json = json.loads(bees("validate", "--json", str(root)).stdout)
    assert [w["file"] for w in as_json["warnings"]] == ["Addon/", "agents/README.md", "agents/old"]


def test_warnings_are_listed_with_errors(bees: BeesRunner, tmp_path: Path) -> None:
    root = tmp_path / "w"
    shutil.copytree(BASE, root)
    (root / "agents" / "notes.txt").write_text("x\n")
    (root / "bees.yml").write_text("name: x\n")
    result = bees("validate", str(root))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "agents/notes.txt:1:1  warning: file not read: a kind folder holds only NAME.yaml files",
        "bees.yml:1:1  Bees reads only bees.yaml; merge this file into it and delete it",
        "error: the workspace has 1 problem and 1 warning",
        "hint: fix each problem listed, then run `bees validate`",
    ]


def test_init_then_validate(bees: BeesRunner, tmp_path: Path) -> None:
    target = tmp_path / "My Team"
    created = bees("init", str(target))
    assert created.returncode == 0
    files = [p for p in target.rglob("*") if p.is_file()]
    assert len(files) == 14
    assert (
        created.stderr
        == f"created a workspace in {target} (14 files)\nnext: bees validate {target}\n"
    )
    result = bees("validate", str(target))
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        "ok: 1 process, 2 agents, 1 schedule, 1 folder, 0 add-ons\n",
        "",
    )
    assert (target / "bees.yaml").read_text().splitlines()[:3] == [
        "# yaml-language-server: $schema=schemas/workspace.json",
        "# The workspace: one YAML file per object; an object's name is its file name.",
        "name: My-Team",
    ]
    for path in sorted(target.rglob("*.yaml")):
        first = path.read_text().splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema=")
        schema = (path.parent / first.split("=", 1)[1]).resolve()
        assert schema.is_file(), path
    assert {p.name: p.read_text() for p in (target / "schemas").iterdir()} == generate()


def test_init_refuses_existing_workspace(bees: BeesRunner, tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    (root / "bees.yaml").write_text("name: mine\n")
    result = bees("init", str(root))
    assert result.returncode == 2
    assert result.stderr == (
        f"error: {root / 'bees.yaml'} already exists; nothing was written\n"
        "hint: choose an empty folder, or edit the existing workspace\n"
    )
    assert (root / "bees.yaml").read_text() == "name: mine\n"
    assert sorted(p.name for p in root.iterdir()) == ["bees.yaml"]


def test_init_refuses_to_overwrite_any_starter_file(bees: BeesRunner, tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "writer.yaml").write_text("mine\n")
    result = bees("init", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == (
        f"error: {tmp_path} already holds agents/writer.yaml; nothing was written"
    )
    assert (tmp_path / "agents" / "writer.yaml").read_text() == "mine\n"


def test_init_in_current_folder(bees: BeesRunner, tmp_path: Path) -> None:
    assert bees("init", cwd=tmp_path).returncode == 0
    assert bees("validate", cwd=tmp_path).returncode == 0


def test_schemas_write(bees: BeesRunner, tmp_path: Path) -> None:
    result = bees("schemas", "write", str(tmp_path / "out"))
    assert result.returncode == 0
    names = ["workspace", "process", "agent", "schedule", "folder", "addon"]
    assert result.stdout.splitlines() == [str(tmp_path / "out" / f"{n}.json") for n in names]
    assert {p.name: p.read_text() for p in (tmp_path / "out").iterdir()} == generate()


@pytest.mark.integration
def test_starter_runs_to_done(bees: BeesRunner, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    assert bees("init", str(root)).returncode == 0
    (root / "notes" / "a.md").write_text("first note\n")
    created = bees("item", "create", "draft-review", "-w", str(root))
    assert created.returncode == 0, created.stderr
    ran = bees("run", "-w", str(root), "--exit-when-idle")
    assert ran.returncode == 0, ran.stderr
    status = bees("status", "--json", cwd=root)
    assert status.returncode == 0, status.stderr
    [item] = json.loads(status.stdout)["items"]
    assert (item["stage"], item["status"], item["reason"]) == ("Done", "done", None)
    draft = Path(item["run_folder"]) / "Draft" / "summary.md"
    assert draft.read_text().splitlines() == [
        "# Draft and review", "", "1 note files:", "", "- a.md: first note"
    ]


def test_model_runner_validates_without_a_warning(bees: BeesRunner, tmp_path: Path) -> None:
    root = tmp_path / "w"
    shutil.copytree(BASE, root)
    (root / "agents" / "reviewer.yaml").write_text(
        "runner:\n"
        "  model:\n"
        "    base_url: https://api.example.com/v1\n"
        "    name: small-model\n"
        "    api_key_env: EXAMPLE_API_KEY\n"
    )
    result = bees("validate", str(root))
    assert (result.returncode, result.stdout, result.stderr) == (
        0, "ok: 1 process, 2 agents, 1 schedule, 2 folders, 1 add-on\n", "")


def test_validate_refuses_dir_and_a_different_w(bees: BeesRunner, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    result = bees("validate", str(EXAMPLE), "-w", str(other))
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        "error: give the workspace either as DIR or with -w, not both\n"
        f"hint: got {EXAMPLE} and -w {other}\n",
    )
    same = bees("validate", str(EXAMPLE), "-w", str(EXAMPLE / "notes" / ".."))
    assert (same.returncode, same.stdout) == (0, EXAMPLE_SUMMARY)


def test_validate_a_missing_folder(bees: BeesRunner, tmp_path: Path) -> None:
    result = bees("validate", str(tmp_path / "nowhere"))
    assert (result.returncode, result.stderr) == (
        2,
        f"error: {tmp_path / 'nowhere'}: no such folder\n"
        "hint: check the path, or create a workspace with `bees init DIR`\n",
    )
    (tmp_path / "file").write_text("x\n")
    result = bees("validate", str(tmp_path / "file"))
    assert (result.returncode, result.stderr.splitlines()[0]) == (
        2, f"error: {tmp_path / 'file'}: not a folder"
    )


def test_bees_yaml_that_is_a_folder(bees: BeesRunner, tmp_path: Path) -> None:
    (tmp_path / "bees.yaml").mkdir()
    result = bees("validate", str(tmp_path))
    assert (result.returncode, result.stderr) == (
        2,
        f"error: {tmp_path / 'bees.yaml'} is a folder, not a file\n"
        "hint: bees.yaml is a file holding the workspace's name; `bees init DIR` writes one\n",
    )


def test_huge_numbers_are_refused_at_their_line(bees: BeesRunner, tmp_path: Path) -> None:
    """Counts, limits and timeouts have upper bounds: a number no server takes is a problem
    at its place, not an obscure HTTP 400 when the run calls the model."""
    root = tmp_path / "w"
    shutil.copytree(BASE, root)
    (root / "agents" / "reviewer.yaml").write_text(
        "max_concurrent_runs: 99999999999999999999999999\n"
        "runner:\n"
        "  model:\n"
        "    base_url: http://127.0.0.1:11434/v1\n"
        "    name: small-model\n"
        "    timeout_seconds: .inf\n"
        "  max_reply_tokens: 99999999999999999999\n"
        "  max_turns: 100000000\n"
        "  context_tokens: 99999999999\n"
    )
    result = bees("validate", str(root))
    assert result.returncode == 2
    assert result.stderr.splitlines()[:-2] == [
        "agents/reviewer.yaml:1:22  max_concurrent_runs  Input should be less than or equal "
        "to 1000",
        "agents/reviewer.yaml:6:22  runner.model.timeout_seconds  Input should be less than "
        "or equal to 1800",
        "agents/reviewer.yaml:7:21  runner.max_reply_tokens  Input should be less than or "
        "equal to 1048576",
        "agents/reviewer.yaml:8:14  runner.max_turns  Input should be less than or equal to "
        "1000",
        "agents/reviewer.yaml:9:19  runner.context_tokens  Input should be less than or equal "
        "to 2097152",
    ]

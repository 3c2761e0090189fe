"""``bees validate`` checks an action's ``enum_from`` (issue 26, point 6: grounded arguments):
the reference's form is an error with its place; a folder the stages using the action do not
read is a warning."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import BeesRunner

TRACKER = """\
actions:
  file:
    kind: write
    command: [file]
    input:
      type: object
      properties:
        bug: {type: string, enum_from: {folder: bug-reports, glob: "reports/*.md", field: "id!"}}
  close:
    kind: write
    command: [close]
    input:
      type: object
      properties:
        bug: {type: string, enum_from: {folder: bug-reports, glob: "*.md", field: id}}
        other: {type: string, enum_from: {folder: Triage, glob: "*.json", field: name}}
        third: {type: string, enum_from: [bug-reports]}
"""


def tracker_workspace(root: Path, reads: str) -> Path:
    root.mkdir()
    (root / "bees.yaml").write_text("name: bugs\n")
    for relative, text in {
        "addons/tracker.yaml": TRACKER,
        "folders/bug-reports.yaml": "path: bug-reports\n",
        "agents/filer.yaml": "tools: [tracker.close]\nrunner:\n  command: [f]\n",
        "processes/p.yaml": "stages:\n"
                            "  - {name: Triage, kind: work, agents: [filer]}\n"
                            f"  - {{name: File, kind: work, agents: [filer]{reads}}}\n"
                            "  - {name: Done, kind: done}\n",
    }.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def test_a_bad_reference_is_an_error_at_its_field(tmp_path: Path, bees: BeesRunner) -> None:
    done = bees("validate", str(tracker_workspace(tmp_path / "w", ", reads: [bug-reports]")))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "addons/tracker.yaml:8:68  actions.file.input.properties.bug.enum_from.glob  "
        "enum_from.glob must be a file-name pattern such as '*.md' (no '/'): 'reports/*.md'",
        "addons/tracker.yaml:8:91  actions.file.input.properties.bug.enum_from.field  "
        "enum_from.field must be 'name' or a front-matter or JSON key such as 'id': 'id!'",
        "addons/tracker.yaml:15:49  actions.close.input.properties.bug.enum_from.folder  "
        "warning: folder 'bug-reports' is not read by stage 'Triage' (process p), whose "
        "agent filer uses tracker.close: add it to the stage's reads",
        "addons/tracker.yaml:17:42  actions.close.input.properties.third.enum_from  "
        "enum_from must be a mapping {folder, glob, field}",
        "error: the workspace has 3 problems and 1 warning",
        "hint: fix each problem listed, then run `bees validate`",
    ]


def test_a_good_reference_read_by_its_stages_passes(tmp_path: Path, bees: BeesRunner) -> None:
    root = tracker_workspace(tmp_path / "w", ", reads: [bug-reports]")
    text = (root / "addons/tracker.yaml").read_text()
    text = text.replace('"reports/*.md", field: "id!"', '"*.md", field: id')
    (root / "addons/tracker.yaml").write_text(text.replace(
        "        third: {type: string, enum_from: [bug-reports]}\n", ""))
    (root / "processes/p.yaml").write_text((root / "processes/p.yaml").read_text().replace(
        "{name: Triage, kind: work, agents: [filer]}",
        "{name: Triage, kind: work, agents: [filer], reads: [bug-reports]}"))
    done = bees("validate", str(root))
    assert (done.returncode, done.stderr) == (0, "")


def test_a_done_stage_runs_no_agent_so_it_gets_no_warning(tmp_path: Path,
                                                         bees: BeesRunner) -> None:
    """A ``done`` stage runs nobody, not even the default agent: the reads warning is for the
    stages an agent holding the action works in (examples/bug-triage-model's Done)."""
    root = tracker_workspace(tmp_path / "w", ", reads: [bug-reports]")
    (root / "bees.yaml").write_text("name: bugs\ndefault_agent: filer\n")
    text = (root / "addons/tracker.yaml").read_text()
    text = text.replace('"reports/*.md", field: "id!"', '"*.md", field: id')
    (root / "addons/tracker.yaml").write_text(text.replace(
        "        third: {type: string, enum_from: [bug-reports]}\n", ""))
    (root / "processes/p.yaml").write_text((root / "processes/p.yaml").read_text().replace(
        "{name: Triage, kind: work, agents: [filer]}",
        "{name: Triage, kind: work, agents: [filer], reads: [bug-reports]}"))
    done = bees("validate", str(root))
    assert (done.returncode, done.stderr) == (0, "")

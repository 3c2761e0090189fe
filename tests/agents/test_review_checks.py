"""A review stage's checks, evaluated without the engine (issue 26, point 5)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from bees_cli.agents.review_checks import CheckOutcome, run_checks
from bees_cli.workspace.models import Check

CHECKS = TypeAdapter(list[Check])
SCHEMA = {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}


def checks(*raw: object) -> list[Check]:
    return CHECKS.validate_python(list(raw))


def test_each_kind_of_check_passes_and_fails_with_its_message(tmp_path: Path) -> None:
    run, root = tmp_path / "run", tmp_path / "ws"
    (run / "Draft").mkdir(parents=True)
    (root / "schemas").mkdir(parents=True)
    (root / "schemas/s.json").write_text(json.dumps(SCHEMA))
    (run / "Draft/good.json").write_text('{"id": "B-1"}')
    (run / "Draft/bad.json").write_text('{"id": 7}')
    (run / "Draft/broken.json").write_text("{")
    found = run_checks(checks(
        {"file_exists": "Draft/good.json"},
        {"file_exists": "Draft/summary.json"},
        {"json_schema": {"file": "Draft/good.json", "schema": "schemas/s.json"}},
        {"json_schema": {"file": "Draft/bad.json", "schema": SCHEMA}},
        {"json_schema": {"file": "Draft/broken.json", "schema": SCHEMA}},
        {"command": [sys.executable, "-c", "import os; open('seen', 'w').write(os.getcwd())"]},
        {"command": [sys.executable, "-c", "import sys; sys.exit('no tests found')"]},
        {"command": [sys.executable, "-c", "import time; time.sleep(5)"], "timeout_seconds": 1},
    ), run, root)
    assert found[:6] == [
        CheckOutcome("file_exists Draft/good.json", True),
        CheckOutcome("file_exists Draft/summary.json", False,
                     "Draft/summary.json does not exist in the run folder"),
        CheckOutcome("json_schema Draft/good.json", True),
        CheckOutcome("json_schema Draft/bad.json", False,
                     "Draft/bad.json does not match its schema at id: 7 is not of type "
                     "'string'"),
        CheckOutcome("json_schema Draft/broken.json", False,
                     "Draft/broken.json is not JSON: Expecting property name enclosed in "
                     "double quotes: line 1 column 2 (char 1)"),
        CheckOutcome(f"command {sys.executable} -c import os; open('seen', 'w')"
                     ".write(os.getcwd())", True),
    ]
    assert (run / "seen").read_text() == str(run)  # run in the run folder
    assert found[6].message == (f"command '{sys.executable} -c import sys; "
                                "sys.exit('no tests found')' exited 1: no tests found")
    assert found[7].message == (f"command '{sys.executable} -c import time; time.sleep(5)' "
                                "did not finish within 1 s")


def test_a_command_check_gets_no_secret(tmp_path: Path) -> None:
    found = run_checks(checks({"command": [
        sys.executable, "-c", "import os, sys; sys.exit(sorted(k for k in os.environ "
        "if k in ('OPENAI_API_KEY', 'BEES_TOKEN', 'BEES_HOME')) or 0)"]}), tmp_path, tmp_path,
        environ={"PATH": "/usr/bin", "OPENAI_API_KEY": "sk-1", "BEES_TOKEN": "t",
                 "BEES_HOME": "/h"})
    assert [o.ok for o in found] == [True]


@pytest.mark.parametrize(("raw", "message"), [
    ({"file_exists": "../etc/passwd"}, "must be a path inside the folder"),
    ({"file_exists": "a", "command": ["x"]}, "a check needs exactly one of"),
    ({"command": []}, "at least 1 item"),
])
def test_a_bad_check_is_refused(raw: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        checks(raw)


def test_a_declared_output_is_missing_invalid_or_there(tmp_path: Path) -> None:
    from bees_cli.agents.review_checks import output_problem
    from bees_cli.workspace.models import DeclaredOutput

    declared = DeclaredOutput.model_validate({"file": "summary.json", "schema": SCHEMA})
    assert output_problem(declared, tmp_path, tmp_path) == (
        "its output summary.json does not exist in the stage's folder")
    (tmp_path / "summary.json").write_text('{"id": 7}')
    assert output_problem(declared, tmp_path, tmp_path) == (
        "its output summary.json does not match its schema at id: 7 is not of type 'string'")
    (tmp_path / "summary.json").write_text('{"id": "B-7"}')
    assert output_problem(declared, tmp_path, tmp_path) is None
    bare = DeclaredOutput.model_validate({"file": "notes.md"})
    (tmp_path / "notes.md").write_text("not JSON, no schema: only there")
    assert output_problem(bare, tmp_path, tmp_path) is None


def test_a_failed_command_check_names_the_command_as_it_ran(tmp_path: Path) -> None:
    run, root = tmp_path / "run", tmp_path / "ws"
    run.mkdir()
    (root / "scripts").mkdir(parents=True)
    (root / "scripts/check.py").write_text("import sys\nsys.exit('report has no title')\n")
    (root / "scripts/slow.py").write_text("import time\ntime.sleep(5)\n")
    found = run_checks(checks(
        {"command": ["${BEES_PYTHON}", "${BEES_WORKSPACE}/scripts/check.py", "x"]},
        {"command": ["${BEES_PYTHON}", "${BEES_WORKSPACE}/scripts/slow.py"],
         "timeout_seconds": 1},
        {"command": ["${BEES_WORKSPACE}/scripts/none"]},
    ), run, root)
    assert [outcome.message for outcome in found] == [
        f"command '{sys.executable} {root}/scripts/check.py x' exited 1: report has no title",
        f"command '{sys.executable} {root}/scripts/slow.py' did not finish within 1 s",
        f"command '{root}/scripts/none' could not start: No such file or directory"]

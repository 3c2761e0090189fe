"""Run a review stage's ``checks:`` against an item's run folder (issue 26, point 5).

Deterministic tests before the reviewer: a file exists, a JSON file validates against a
schema, a command exits 0. The engine runs :func:`run_checks` in an activity
(``bees.review_checks``); a failed check's message becomes the change request the work stage
gets back, and the reviewer does not run.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bees_cli.agents.child_env import child_environment
from bees_cli.agents.runner import expand_command
from bees_cli.workspace.stage_checks import (
    CommandCheck,
    DeclaredOutput,
    FileExists,
    JsonSchema,
    check_label,
    load_schema,
)

__all__ = ["OUTPUT_CHARS", "CheckOutcome", "output_problem", "run_checks"]

OUTPUT_CHARS = 400
"""At most this many characters of a failed command's output go into its message."""


@dataclass(frozen=True)
class CheckOutcome:
    """One check's outcome: its ``check`` label (``file_exists Draft/summary.json``), whether
    it passed, and when it failed the ``message`` sent back as the change request."""

    check: str
    ok: bool
    message: str | None = None


def run_checks(checks: Sequence[FileExists | JsonSchema | CommandCheck], run_folder: Path,
               workspace_root: Path,
               environ: Mapping[str, str] | None = None) -> list[CheckOutcome]:
    """Run every check in order; return their outcomes (all of them: the work stage learns
    every failure at once).

    Args:
        checks: the review stage's ``checks:``.
        run_folder: the item's run folder: paths are relative to it, commands run in it.
        workspace_root: the workspace folder (a ``json_schema``'s schema file, and
            ``${BEES_WORKSPACE}`` in a command).
        environ: where a command's minimal environment is read from (default: this
            process's); it gets only :func:`~bees_cli.agents.child_env.child_environment`'s
            base variables, never a secret.

    Never raises for what the files or commands do: each problem is a failed outcome.
    """
    env = child_environment(os.environ if environ is None else environ, bees=False)
    return [_run_one(check, run_folder, workspace_root, env) for check in checks]


def _run_one(check: FileExists | JsonSchema | CommandCheck, run_folder: Path,
             workspace_root: Path, env: dict[str, str]) -> CheckOutcome:
    label = check_label(check)
    if isinstance(check, FileExists):
        if (run_folder / check.file_exists).is_file():
            return CheckOutcome(label, True)
        return CheckOutcome(label, False, f"{check.file_exists} does not exist in the run "
                                          "folder")
    if isinstance(check, JsonSchema):
        name = check.json_schema.file
        return CheckOutcome(label, *_json_ok(run_folder / name, name, "in the run folder",
                                             check.json_schema.schema_, workspace_root))
    return CheckOutcome(label, *_command_ok(check, run_folder, workspace_root, env))


def output_problem(output: DeclaredOutput, folder: Path, workspace_root: Path) -> str | None:
    """Return why a work stage's declared ``output`` is not in its ``folder`` (missing, not
    JSON, not valid against its schema), or None when it is there (issue 26, point 5).

    ``its output summary.json does not exist in the stage's folder``, ``its output
    summary.json does not match its schema at id: 7 is not of type 'string'``.
    """
    ok, why = _json_ok(folder / output.file, output.file, "in the stage's folder",
                       output.schema_, workspace_root)
    return None if ok else f"its output {why}"


def _json_ok(path: Path, name: str, where: str, schema_ref: str | dict[str, Any] | None,
             workspace_root: Path) -> tuple[bool, str | None]:
    """Tell whether ``path`` (shown as ``name``) is a file, and with a schema JSON valid
    against it; else why not."""
    import jsonschema

    if not path.is_file():
        return False, f"{name} does not exist {where}"
    if schema_ref is None:
        return True, None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        return False, f"{name} is not JSON: {error}"
    schema, why = load_schema(schema_ref, workspace_root)
    if schema is None:
        return False, f"{name}: the schema is wrong: {why}"
    validator = jsonschema.validators.validator_for(schema)(schema)
    wrong = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if wrong is None:
        return True, None
    where = "/".join(str(part) for part in wrong.absolute_path)
    return False, f"{name} does not match its schema{f' at {where}' if where else ''}: " \
                  f"{wrong.message}"


def _command_ok(check: CommandCheck, run_folder: Path, workspace_root: Path,
                env: dict[str, str]) -> tuple[bool, str | None]:
    argv = expand_command(list(check.command), str(workspace_root))
    shown = " ".join(argv)  # as it ran: ${BEES_PYTHON} and ${BEES_WORKSPACE} expanded
    try:
        done = subprocess.run(argv, cwd=run_folder, env=env, capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=check.timeout_seconds,
                              check=False)
    except subprocess.TimeoutExpired:
        return False, f"command '{shown}' did not finish within {check.timeout_seconds} s"
    except OSError as error:
        return False, f"command '{shown}' could not start: {error.strerror or error}"
    if done.returncode == 0:
        return True, None
    said = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
    said = said[-OUTPUT_CHARS:]
    return False, f"command '{shown}' exited {done.returncode}" + (f": {said}" if said else "")

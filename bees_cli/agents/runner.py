"""The command runner: runs an agent's program for one stage, in the stage's own folder.

Layout inside the run folder ``RUN``::

    RUN/STAGE/                              the stage's folder: working directory, its output
    RUN/logs/STAGE-rR-aA.stdout|.stderr     what the program printed (round R, attempt A)
    RUN/logs/STAGE-rR-aA.context.json       the context handed to the program

While the program runs, its process group is recorded in the computer's data dir
(``stages/ITEM.STAGE.json``, see :mod:`bees_cli.agents.groups`), not in the run folder.

The program learns its work from ``BEES_*`` environment variables and from the JSON
file named by ``BEES_CONTEXT``. Exit 0 finishes the stage; on a review stage the program
also writes ``verdict.json`` in its folder. Nothing here imports Temporal: the engine
calls :func:`run_command_stage` from an activity and passes the activity's heartbeat.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bees_cli.agents.child_env import child_environment
from bees_cli.agents.groups import (
    group_of,
    kill_leftover,
    record_group,
)
from bees_cli.agents.program import start_program, wait_program
from bees_cli.files import logs_dir as logs_dir
from bees_cli.files import write_atomic
from bees_cli.why import Reason

TAIL_LINES = 20
TAIL_CHARS = 2000
VERDICT_FILE = "verdict.json"
VERDICTS = ("approve", "changes_requested")


@dataclass(frozen=True)
class StageRequest:
    """Everything the runner needs for one attempt of one stage (JSON-safe).

    Attributes:
        item_id, title, process: the work item and its process's name.
        stage, stage_kind, reviews: the stage's name, kind (``work``/``review``) and, on a
            review stage, the name of the stage under review.
        agent, instructions: the chosen agent and its instructions.
        command, env: the agent's runner argv (``${BEES_WORKSPACE}`` and ``${BEES_PYTHON}``
            not yet expanded) and its extra environment.
        run_folder, workspace_root: absolute paths.
        folders: the item's folders, name → linked absolute path.
        previous: earlier stages' output folders, stage name → absolute path.
        review_comments: comments of the last review that asked for changes.
        round, attempt: review round (1 first) and retry attempt (1 first) of this stage.
        engine_env: variables the engine adds so the program can call ``bees action``
            (``BEES_HOME``, ``BEES_TEMPORAL_ADDRESS``); set last, like the ``BEES_*``.
    """

    item_id: str
    title: str
    process: str
    stage: str
    stage_kind: str
    reviews: str | None
    agent: str
    instructions: str
    command: list[str]
    env: dict[str, str]
    run_folder: str
    workspace_root: str
    folders: dict[str, str] = field(default_factory=dict)
    previous: dict[str, str] = field(default_factory=dict)
    review_comments: list[str] = field(default_factory=list)
    round: int = 1
    attempt: int = 1
    engine_env: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Return the request as a JSON-safe dict (field name → value)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StageRequest:
        """Rebuild from :meth:`to_json` output; unknown keys are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class StageResult:
    """How one attempt of a stage ended (JSON-safe).

    Attributes:
        ok: True when the program exited 0 (and, on a review stage, wrote a valid verdict).
        reason: when not ok, one message: ``"exit 3: LAST STDERR LINES"`` (at most 20 lines
            and 2,000 characters), ``"cannot start PROGRAM: not found"``, or what is wrong
            with ``verdict.json``; None when ok.
        verdict: ``"approve"`` or ``"changes_requested"`` on a review stage, else None.
        comments: the review's comments (empty when none).
        output_dir: the stage's folder (working directory of the program).
        stdout_path, stderr_path, context_path: the log files of this attempt.
        exit_code: the program's exit status; negative for a signal (as in
            :mod:`subprocess`); None when it could not start.
        why: ``reason`` as its code (issue 24, point 3): ``agent_exit`` (exit code and
            stderr tail) for a non-zero exit that wrote to stderr, else ``other`` with the
            words; None when ok.
    """

    ok: bool
    reason: str | None
    verdict: str | None
    comments: list[str]
    output_dir: str
    stdout_path: str
    stderr_path: str
    exit_code: int | None
    context_path: str = ""
    why: Reason | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the result as a JSON-safe dict (field name → value; ``why`` as
        ``{"code", …}``)."""
        data = dataclasses.asdict(self)
        data["why"] = None if self.why is None else self.why.model_dump(mode="json")
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StageResult:
        """Rebuild from :meth:`to_json` output; unknown keys are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        kept = {k: v for k, v in data.items() if k in names}
        if kept.get("why") is not None:
            kept["why"] = Reason.model_validate(kept["why"])
        return cls(**kept)


def stage_dir(run_folder: str | Path, stage: str) -> Path:
    """Return the stage's own folder inside the run folder: ``RUN/STAGE`` (not created)."""
    return Path(run_folder) / stage


def env_key(name: str) -> str:
    """Return ``name`` as an environment variable suffix: upper case, ``-`` → ``_``."""
    return name.upper().replace("-", "_")


def expand_command(command: list[str], workspace_root: str) -> list[str]:
    """Replace ``${BEES_WORKSPACE}`` and ``${BEES_PYTHON}`` in each argument; other text stays."""
    return [
        arg.replace("${BEES_WORKSPACE}", workspace_root).replace("${BEES_PYTHON}", sys.executable)
        for arg in command
    ]


def context_of(request: StageRequest) -> dict[str, Any]:
    """Return the context handed to the program in ``BEES_CONTEXT`` (JSON-safe).

    Shape: ``{"item": {"id", "title", "process"}, "stage": {"name", "kind", "reviews"},
    "agent", "instructions", "folders", "previous", "review_comments", "round",
    "attempt", "run_folder"}``.
    """
    return {
        "item": {"id": request.item_id, "title": request.title, "process": request.process},
        "stage": {"name": request.stage, "kind": request.stage_kind, "reviews": request.reviews},
        "agent": request.agent,
        "instructions": request.instructions,
        "folders": dict(request.folders),
        "previous": dict(request.previous),
        "review_comments": list(request.review_comments),
        "round": request.round,
        "attempt": request.attempt,
        "run_folder": request.run_folder,
    }


def environment_of(request: StageRequest, context_path: Path) -> dict[str, str]:
    """Return the program's environment: this process's as any child gets it
    (:func:`~bees_cli.agents.child_env.child_environment`: a small base and ``BEES_*``, never
    a model's API key; issue 25, point 4), then the agent's ``env``, then the ``BEES_*``
    variables and ``request.engine_env`` (which win, so an agent cannot hide its own
    context).

    ``PATH`` starts with the folder of the Python running Bees, so the program finds
    ``bees`` (for ``bees action``); ``BEES_PYTHON`` is that Python.
    """
    env = child_environment(os.environ)
    env.update(request.env)
    scripts = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([scripts, env.get("PATH", os.defpath)])
    env.update(
        {
            "BEES_ITEM_ID": request.item_id,
            "BEES_ITEM_TITLE": request.title,
            "BEES_PROCESS": request.process,
            "BEES_STAGE": request.stage,
            "BEES_AGENT": request.agent,
            "BEES_INSTRUCTIONS": request.instructions,
            "BEES_RUN_FOLDER": request.run_folder,
            "BEES_WORKSPACE": request.workspace_root,
            "BEES_CONTEXT": str(context_path),
            "BEES_REVIEW_COMMENTS": json.dumps(list(request.review_comments), ensure_ascii=False),
            "BEES_ROUND": str(request.round),
            "BEES_ATTEMPT": str(request.attempt),
            "BEES_PYTHON": sys.executable,
        }
    )
    env.update(request.engine_env)
    for name, path in request.folders.items():
        env[f"BEES_FOLDER_{env_key(name)}"] = path
    for name, path in request.previous.items():
        env[f"BEES_PREVIOUS_{env_key(name)}"] = path
    return env


# --- results --------------------------------------------------------------------------------


def stderr_tail(path: Path, *, lines: int = TAIL_LINES, chars: int = TAIL_CHARS) -> str:
    """Return the last ``lines`` non-empty lines of ``path``, at most ``chars`` characters."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            data = handle.read()
    except OSError:
        return ""
    kept = [ln.rstrip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    text = "\n".join(kept[-lines:])
    return text if len(text) <= chars else "…" + text[-(chars - 1) :]


def read_verdict(folder: Path) -> tuple[str | None, list[str], str | None]:
    """Read ``verdict.json`` in a review stage's folder.

    Accepted: ``{"verdict": "approve"}`` or ``{"verdict": "changes_requested",
    "comments": "text" | ["text", …]}`` (comments optional on both).

    Returns:
        ``(verdict, comments, None)``, or ``(None, [], reason)`` when the file is missing
        or malformed; the reason names the file.
    """
    path = folder / VERDICT_FILE
    expected = '{"verdict": "approve"} or {"verdict": "changes_requested", "comments": [...]}'
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, [], f"the review wrote no verdict: {path} is missing (expected {expected})"
    except (OSError, ValueError) as error:
        return None, [], f"{path} is not valid JSON: {error}"
    verdict = data.get("verdict") if isinstance(data, dict) else None
    if verdict not in VERDICTS:
        reason = f'{path}: "verdict" must be "approve" or "changes_requested" (expected {expected})'
        return None, [], reason
    comments = data.get("comments", [])
    if isinstance(comments, str):
        comments = [comments] if comments.strip() else []
    elif not (isinstance(comments, list) and all(isinstance(c, str) for c in comments)):
        return None, [], f"{path}: \"comments\" must be a text or a list of texts"
    return verdict, list(comments), None


# --- the runner -----------------------------------------------------------------------------


async def run_command_stage(
    request: StageRequest,
    *,
    heartbeat: Callable[[], None],
    heartbeat_every: float = 5.0,
    groups: Path | None = None,
) -> StageResult:
    """Run the agent's program for one attempt of a stage and say how it ended.

    The program runs with ``RUN/STAGE/`` as working directory (created; kept between
    rounds so a writer can revise its work; a stale ``verdict.json`` is removed before a
    review stage runs), in a new session (its own process group), stdin from
    ``/dev/null``, stdout and stderr straight into the log files. On Linux the program
    dies with this process (``PR_SET_PDEATHSIG``): set through ``setpriv`` without a fork
    of this process where it can be (:func:`~bees_cli.agents.spawn.fast_launch`; the
    environment goes in the process environment, never on a command line), else by
    :func:`~bees_cli.agents.groups.die_with_parent`.
    With ``groups``, its process group is recorded there while it runs, and a group a
    killed worker left for this stage is stopped first
    (:func:`~bees_cli.agents.groups.kill_leftover`).

    Args:
        request: the stage to run.
        heartbeat: called every ``heartbeat_every`` seconds while the program runs (the
            engine passes Temporal's activity heartbeat).
        heartbeat_every: seconds between heartbeats.
        groups: the computer's folder of stage group files
            (:func:`~bees_cli.agents.groups.groups_dir`), or None to record nothing.

    Returns:
        The :class:`StageResult`. A program that cannot start, exits non-zero or writes no
        valid verdict gives ``ok=False`` with the reason; none of these raise.

    Raises:
        asyncio.CancelledError: the stage was cancelled; the whole process group was
            sent SIGTERM, then SIGKILL after 3 s, before this is re-raised. Any exception
            from ``heartbeat`` likewise stops the group and propagates.
    """
    files = _attempt_files(request)
    if groups is not None:
        await asyncio.to_thread(kill_leftover, groups, request.item_id, request.stage)
    argv = expand_command(list(request.command), request.workspace_root)
    env = environment_of(request, files.context)
    if not argv or not argv[0]:
        files.stdout.write_bytes(b"")
        files.stderr.write_bytes(b"")
        return files.result(False, "the agent's command is empty", None)
    with files.stdout.open("wb") as out, files.stderr.open("wb") as err:
        proc = await start_program(argv, files.folder, env, out, err)
    if isinstance(proc, str):
        return files.result(False, proc, None)
    pgid = proc.pid
    group = group_of(pgid, item_id=request.item_id, stage=request.stage,
                     run_folder=request.run_folder)
    recorded = None if groups is None or group is None else record_group(groups, group)
    try:
        code = await wait_program(proc, heartbeat, heartbeat_every)
    finally:
        if recorded is not None:
            recorded.unlink(missing_ok=True)
    if code != 0:
        return files.result(False, _exit_reason(code, files.stderr), code)
    if request.stage_kind != "review":
        return files.result(True, None, code)
    verdict, comments, problem = read_verdict(files.folder)
    if problem is not None:
        return files.result(False, problem, code)
    return files.result(True, None, code, verdict, comments)


@dataclass(frozen=True)
class _AttemptFiles:
    """The files of one attempt of a stage: its folder, its two logs and its context."""

    folder: Path
    stdout: Path
    stderr: Path
    context: Path

    def result(self, ok: bool, reason: str | Reason | None, exit_code: int | None,
               verdict: str | None = None, comments: list[str] | None = None) -> StageResult:
        """Return the attempt's :class:`StageResult` with these files' paths; a ``reason``
        given as words is handed over as ``other`` (no code of its own)."""
        why = Reason(code="other", text=reason) if isinstance(reason, str) else reason
        return StageResult(
            ok=ok, reason=None if why is None else why.words(), verdict=verdict,
            comments=comments or [], output_dir=str(self.folder), stdout_path=str(self.stdout),
            stderr_path=str(self.stderr), exit_code=exit_code, context_path=str(self.context),
            why=why,
        )


def _attempt_files(request: StageRequest) -> _AttemptFiles:
    """Make the stage's folder and logs folder, write the attempt's context file, and remove
    a review stage's stale verdict; return the attempt's files."""
    folder = stage_dir(request.run_folder, request.stage)
    logs = logs_dir(request.run_folder)
    folder.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    base = f"{request.stage}-r{request.round}-a{request.attempt}"
    files = _AttemptFiles(folder, logs / f"{base}.stdout", logs / f"{base}.stderr",
                          logs / f"{base}.context.json")
    write_atomic(  # not fsynced: rewritten on every attempt, read by this attempt's program
        files.context,
        (json.dumps(context_of(request), indent=2, ensure_ascii=False) + "\n").encode("utf-8"),
        durable=False,
    )
    if request.stage_kind == "review":
        (folder / VERDICT_FILE).unlink(missing_ok=True)
    return files


def _exit_reason(code: int, stderr_path: Path) -> str | Reason:
    """Say how a program ended with non-zero ``code``, with the tail of its stderr: an exit
    that wrote to stderr as ``agent_exit``, else in words."""
    tail = stderr_tail(stderr_path)
    if tail and code > 0:
        return Reason(code="agent_exit", exit_code=code, said=tail)
    if code < 0:
        try:
            head = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            head = f"killed by signal {-code}"
    else:
        head = f"exit {code}"
    return f"{head}: {tail}" if tail else f"{head} (nothing on stderr)"

"""``bees action ADDON.ACTION``: an agent acts on the world through an add-on, asking its run first.

The agent's program runs inside a stage, so its environment names the item, the stage and
the agent (``BEES_ITEM_ID``, ``BEES_STAGE``, ``BEES_AGENT``) and this computer's engine
(``BEES_TEMPORAL_ADDRESS``, ``BEES_HOME``). The run answers the ``bees.action`` update:
refused (not in the agent's tools, stage not running), held until a person decides (a
gated kind on a stage with ``approval: required``), answered from the journal (it already
ran in this stage), or run. A run's result is journaled in the local record first, then in
the run, so a stage started again never repeats it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.errors import Refused, UserError
from bees_cli.usecases.models import ActionOutcome

if TYPE_CHECKING:
    from bees_cli.usecases.bees import Bees

SUMMARY_CHARS = 100
"""Longest summary of an action's input shown in ``bees status`` and ``bees approvals``."""

INPUT_KEPT = 4000
"""Characters of an action's input kept with an approval request (what the person approves)."""


def parse_input(text: str | None) -> Any:
    """Read ``--input``: JSON text, ``@FILE`` (JSON in a file), or nothing (``{}``).

    Raises:
        UserError: not valid JSON, or the file cannot be read.
    """
    if text is None:
        return {}
    source = "--input"
    if text.startswith("@"):
        path = Path(text[1:])
        source = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise UserError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        return json.loads(text)
    except ValueError as error:
        raise UserError(f"{source} is not valid JSON: {error}",
                        hint='e.g. --input \'{"to": "team@example.com"}\'') from None


def canonical(data: Any) -> str:
    """Return ``data`` as canonical JSON: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest_of(data: Any) -> str:
    """Return the SHA-256 (64 hex digits) of :func:`canonical` ``data``."""
    return hashlib.sha256(canonical(data).encode("utf-8")).hexdigest()


def summary_of(data: Any) -> str:
    """Return one short line of ``data`` (JSON, at most :data:`SUMMARY_CHARS` characters)."""
    text = json.dumps(data, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def run_action(bees: Bees, name: str, input_text: str | None, *,
                     env: Mapping[str, str]) -> ActionOutcome:
    """Ask the run, then run add-on action ``name`` (``ADDON.ACTION``) with the input.

    The add-on's argv (``${BEES_WORKSPACE}`` and ``${BEES_PYTHON}`` expanded) gets the input
    as JSON on stdin, ``env`` plus ``BEES_ACTION`` and ``BEES_ACTION_DIGEST``, and the
    current folder; its stderr passes through. The result is journaled in ``bees``'s
    computer's local record (the computer the stage runs on: the worker hands its home to
    the stage), then told to the run.

    Args:
        bees: the computer the stage runs on.
        name: ``ADDON.ACTION``.
        input_text: ``--input`` (JSON, ``@FILE``, or None for ``{}``).
        env: the stage's environment (``BEES_ITEM_ID``, ``BEES_STAGE``, ``BEES_AGENT``…).

    Returns:
        The :class:`ActionOutcome`.

    Raises:
        UserError: not inside a stage, a bad name or input.
        Refused: the run refused (not in the agent's tools, stage not running) or a person
            denied it (the reason names who and why).
        EngineError: the engine cannot be reached.
    """
    from bees_cli.agents.runner import expand_command
    from bees_cli.engine.models import (
        ACTION_DONE_UPDATE,
        ACTION_UPDATE,
        STDOUT_KEPT,
        ActionAnswer,
        ActionAsk,
        JournalEntry,
    )

    environ = dict(env)
    item_id, stage, agent = (environ.get(k, "") for k in
                             ("BEES_ITEM_ID", "BEES_STAGE", "BEES_AGENT"))
    if not (item_id and stage and agent):
        raise UserError("bees action runs inside a stage: BEES_ITEM_ID, BEES_STAGE and "
                        "BEES_AGENT are not set",
                        hint="an agent's program calls it while its stage runs")
    if name.count(".") != 1 or not all(name.split(".")):
        raise UserError(f"{name!r} is not ADDON.ACTION", hint="e.g. bees action mail.send")
    data = parse_input(input_text)
    digest = digest_of(data)
    round_ = int(environ.get("BEES_ROUND", "1") or 1)
    attempt = int(environ.get("BEES_ATTEMPT", "1") or 1)
    ask = ActionAsk(stage=stage, agent=agent, action=name, digest=digest,
                    summary=summary_of(data), input=canonical(data)[:INPUT_KEPT],
                    attempt=attempt)
    engine = await bees.engine(environ.get("BEES_TEMPORAL_ADDRESS") or None)
    answer = await engine.update(item_id, ACTION_UPDATE, ask, ActionAnswer, timeout=None)
    assert isinstance(answer, ActionAnswer)
    if answer.decision == "denied":
        raise Refused(answer.reason or f"{name} was denied")
    if answer.decision == "journal":
        return ActionOutcome(exit_code=answer.exit_code or 0, stdout=answer.stdout,
                             from_journal=True, ran_at=answer.at)
    argv = expand_command(answer.command, environ.get("BEES_WORKSPACE", ""))
    child_env = dict(environ, BEES_ACTION=name, BEES_ACTION_DIGEST=digest)
    try:
        done = await asyncio.to_thread(
            subprocess.run, argv, input=json.dumps(data, ensure_ascii=False).encode(),
            stdout=subprocess.PIPE, stderr=sys.stderr, env=child_env, check=False)
    except OSError as error:
        raise UserError(f"cannot start {argv[0]} for {name}: {error.strerror or error}"
                        ) from None
    stdout = done.stdout.decode("utf-8", "replace")
    entry = JournalEntry(
        stage=stage, round=round_, attempt=attempt, action=name, kind=answer.kind,
        digest=digest, exit_code=done.returncode, stdout=stdout[:STDOUT_KEPT], at=_now(),
        request_id=answer.request_id)
    # the local record first: it survives a worker killed before the run hears of it
    await asyncio.to_thread(bees.record.add_journal, item_id, entry.model_dump(mode="json"))
    await engine.update(item_id, ACTION_DONE_UPDATE, entry, timeout=None)
    return ActionOutcome(exit_code=done.returncode, stdout=stdout)

"""The one place an add-on action runs: its intent first, the add-on, its result journaled after.

A script add-on's program gets the input as JSON on stdin and its environment from
:func:`~bees_cli.agents.child_env.child_environment`; an MCP add-on's tool is called over its
server (issue 25). Either runs under the same intent and journal (DESIGN.md, under faults: an
add-on action writes its intent before it runs and its result after).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from bees_cli.errors import ActionInterrupted, UserError
from bees_cli.record.events import ActionRan
from bees_cli.usecases.action_journal import folder_end, folder_intent
from bees_cli.usecases.models import ActionOutcome
from bees_cli.utc import format_utc, utc_now

if TYPE_CHECKING:
    from bees_cli.agents.action_call import ActionCallInput
    from bees_cli.record.aio import AsyncRecord
    from bees_cli.usecases.mcp_actions import McpAction
    from bees_cli.workspace.models import Addon, Agent


def _now() -> str:
    return format_utc(utc_now())


@dataclass(frozen=True)
class Edit:
    """A person's correction of an action's input before it ran (``bees approve --input``,
    issue 26, point 4), journaled with the run of the corrected input."""

    by: str
    """Who corrected it (the approver)."""
    original_digest: str
    """The digest of the agent's own input (the run's ``digest`` is the corrected one's)."""
    input: str
    """The corrected input (JSON text): what ran."""
    changes: str
    """What changed, field by field (:func:`bees_cli.usecases.actions.what_changed`)."""


def declared_env(addon: Addon, agent: Agent | None) -> list[str]:
    """Return the names a script add-on's program gets from the stage's environment besides
    the base and ``BEES_*`` (issue 25, point 4): its ``connection.env``, and the variables
    the calling command agent's ``runner.env`` sets (the workspace's own settings, which its
    ``bees action`` hands on). Never a model's API key unless the add-on names it."""
    from bees_cli.workspace.models import CommandRunner

    names = list(addon.connection.env)
    if agent is not None and isinstance(agent.runner, CommandRunner):
        names += list(agent.runner.env)
    return list(dict.fromkeys(names))


async def run_addon(record: AsyncRecord, call: ActionCallInput, kind: str, command: list[str],
                    request_id: int | None, *, mcp: McpAction | None = None,
                    declared: list[str] | None = None, edit: Edit | None = None
                    ) -> ActionOutcome:
    """Run the add-on of ``call`` once: the intent first (not for ``read``), the result
    journaled after, in the local record and the run folder's copy.

    Args:
        record: the local record (the journal), awaited.
        call: the action call (its ``environ``, ``cwd`` and ``workspace`` start the add-on).
        kind: the action's kind (``read`` writes no intent).
        command: a script add-on's argv (``${BEES_WORKSPACE}`` and ``${BEES_PYTHON}`` expanded
            here); its stderr passes through.
        request_id: the approval request it runs under, if any.
        mcp: an MCP add-on's tool to call instead (one server process per call for now).
        declared: names the script's environment keeps besides the base
            (:func:`declared_env`; issue 25, point 4).
        edit: the person's correction ``call`` carries, journaled with the result (who,
            the agent's input's digest, the corrected input), or None.

    Returns:
        The :class:`ActionOutcome` (``binary``: why the output is not shown as text).

    Raises:
        UserError: the add-on could not be started, or its input is not a JSON object.
        McpNotReached: the MCP server was not reached (nothing was sent).
        ActionInterrupted: it may have run and its result is unknown (killed by a signal, or
            an MCP call sent and not answered): its intent stays open for a person.
        DiskError: the run folder's journal cannot be written (it does not run).
    """
    seq = await _start_intent(record, call) if kind != "read" else None
    done, binary = await _invoke(record, call, command, seq, mcp=mcp, declared=declared)
    if seq is not None and done.returncode < 0:
        # killed by a signal while it ran: it may have taken effect, so its intent stays open
        # and a person decides (DESIGN.md, under faults: an intent without a result)
        raise ActionInterrupted(
            f"{call.action} was killed by signal {-done.returncode} while it ran: it may "
            "already have run, so it is not run again by itself", hint=_held_hint(call))
    stdout = done.stdout.decode("utf-8", "replace")
    if binary is None and stdout.encode("utf-8") != done.stdout:
        binary = "not UTF-8 text"  # a model is told so, never shown the bytes (issue 25, 6)
    await _journal_result(record, call, kind, done.returncode, stdout, seq, request_id, edit)
    return ActionOutcome(exit_code=done.returncode, stdout=stdout, binary=binary)


def _held_hint(call: ActionCallInput) -> str:
    return (f"the stage's next attempt holds it for a person: bees approve {call.item_id} "
            "--ran (it ran) or --again (run it once more)")


async def _start_intent(record: AsyncRecord, call: ActionCallInput) -> int:
    """Write the action's intent, durably, in the record then the run folder; return its
    sequence number."""
    at = _now()
    seq = await record.add_intent(call.item_id, stage=call.stage, action=call.action,
                                  digest=call.digest, attempt=call.attempt, at=at)
    await record.run(folder_intent, call, at)
    return int(seq)


async def _invoke(record: AsyncRecord, call: ActionCallInput, command: list[str],
                  seq: int | None, *, mcp: McpAction | None,
                  declared: list[str] | None) -> tuple[subprocess.CompletedProcess[bytes],
                                                       str | None]:
    """Start the add-on and wait for it; return how it ended (``stdout``, ``returncode``)
    and why its output is binary (None: text). A start that failed ends the intent as not
    started (nothing may have happened) and raises (see :func:`run_addon`)."""
    from bees_cli.agents.child_env import child_environment
    from bees_cli.agents.mcp_addon import McpNotReached
    from bees_cli.agents.runner import expand_command

    argv = expand_command(command, call.workspace)
    try:
        if mcp is not None:
            from bees_cli.usecases.mcp_actions import run_mcp

            code, text, binary = await run_mcp(mcp, call.data, environ=call.environ,
                                               cwd=call.cwd)
            return subprocess.CompletedProcess(argv, code, text.encode("utf-8")), binary
        env = dict(child_environment(call.environ, declared or ()), BEES_ACTION=call.action,
                   BEES_ACTION_DIGEST=call.digest, BEES_ACTION_KEY=call.key)
        done = await asyncio.to_thread(
            subprocess.run, argv, input=json.dumps(call.data, ensure_ascii=False).encode(),
            stdout=subprocess.PIPE, stderr=sys.stderr, env=env, cwd=call.cwd, check=False)
        return done, None
    except (OSError, UserError, McpNotReached) as error:
        if seq is not None:  # it never started: nothing may have happened
            await record.end_intent(call.item_id, seq, "result", None)
            await record.run(folder_end, call, "result", None)
        _not_started(call, argv, error)
    except ActionInterrupted as error:  # an MCP call sent and not answered: it may have run
        raise ActionInterrupted(f"{call.action}: {error.message}",
                                hint=_held_hint(call)) from None


def _not_started(call: ActionCallInput, argv: list[str], error: Exception) -> NoReturn:
    """Raise why the add-on of ``call`` did not start, naming the action."""
    from bees_cli.agents.mcp_addon import McpNotReached

    if isinstance(error, McpNotReached):  # nothing was sent: a failure, not bad usage
        raise McpNotReached(f"{call.action} was not run: {error.message}",
                            hint=error.hint) from None
    if isinstance(error, UserError):  # the input is not a JSON object
        raise UserError(f"{call.action} was not run: {error.message}",
                        hint=error.hint) from None
    reason = error.strerror if isinstance(error, OSError) and error.strerror else error
    raise UserError(f"cannot start {argv[0]} for {call.action}: {reason}") from None


async def _journal_result(record: AsyncRecord, call: ActionCallInput, kind: str,
                          exit_code: int, stdout: str, seq: int | None,
                          request_id: int | None, edit: Edit | None = None) -> None:
    """Journal how the add-on ended: the record's entry (ending its intent), the run folder's
    copy, and the ``action_ran`` fact of the item's history."""
    from bees_cli.engine.models import STDOUT_KEPT, JournalEntry

    entry = JournalEntry(
        stage=call.stage, round=call.round, attempt=call.attempt, action=call.action,
        kind=kind, digest=call.digest, exit_code=exit_code, stdout=stdout[:STDOUT_KEPT],
        at=_now(), request_id=request_id)
    if edit is not None:
        entry = entry.model_copy(update={"original_digest": edit.original_digest,
                                         "edited_by": edit.by, "input": edit.input})
    data: dict[str, Any] = entry.model_dump(
        mode="json", exclude=None if edit else {"original_digest", "edited_by", "input"})
    if seq is None:
        await record.add_journal(call.item_id, data)
    else:
        await record.end_intent(call.item_id, seq, "result", data)
    await record.run(folder_end, call, "result", data)
    await record.add_fact(
        call.item_id, ActionRan(
            stage=entry.stage, round=entry.round, action=entry.action, action_kind=entry.kind,
            digest=entry.digest, attempt=entry.attempt, exit_code=entry.exit_code,
            request=entry.request_id),
        key=f"ran:{entry.stage}:{entry.action}:{entry.digest}:{entry.at}")

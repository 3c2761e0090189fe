"""``bees action ADDON.ACTION``: an agent acts on the world through an add-on, at most once.

The agent's program runs inside a stage, so its environment names the item, the stage and
the agent (``BEES_ITEM_ID``, ``BEES_STAGE``, ``BEES_AGENT``) and this computer's engine
(``BEES_TEMPORAL_ADDRESS``, ``BEES_HOME``). The gate's decision is
:func:`bees_cli.gate.decide` (the run's ``bees.action`` update uses the same function); most
actions are decided here, from the item's stored snapshot and the local record's journal,
without a workflow update: refused (not in the agent's tools), answered from the journal (it
already ran in this stage), or run (not gated). Only a gated action on an ``approval:
required`` stage, or one interrupted before its result was written, asks the run
(``bees.action``, which returns at once); the person's decision is then awaited in the local
record and decided on by the gate again. An *intent* is written durably before the
add-on runs and the result after it, so a power cut in between never repeats the action
without a person (DESIGN.md, Rules: approvals; the journal).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from bees_cli.errors import ActionInterrupted, Refused, UserError
from bees_cli.gate import (
    ActionCall,
    Answer,
    Facts,
    Intent,
    Journal,
    Kind,
    Request,
    Verdict,
    decide,
    refusal,
)
from bees_cli.record.events import ActionAnswered, ActionRan
from bees_cli.record.states import Status
from bees_cli.usecases.models import ActionOutcome
from bees_cli.utc import format_utc, utc_now

if TYPE_CHECKING:
    from bees_cli.agents.mcp_sessions import McpSessions
    from bees_cli.record.local import LocalRecord
    from bees_cli.record.run_journal import EndHow
    from bees_cli.usecases.bees import Bees
    from bees_cli.usecases.mcp_actions import McpAction
    from bees_cli.workspace.models import Addon, Agent

SUMMARY_CHARS = 100
"""Longest summary of an action's input shown in ``bees status`` and ``bees approvals``."""

POLL_SECONDS = 0.25
"""How often a held action reads the local record for the person's decision."""

INPUT_KEPT = 64_000
"""Most characters of an action's input kept with an approval request (what the person
approves); past it, long texts are shortened, never a field dropped (:func:`kept_input`)."""

SHORTENED = (8000, 2000, 500, 100)
"""The lengths :func:`kept_input` tries, in turn, to shorten each long text of an input to."""


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


def kept_input(data: Any) -> str:
    """Return what an approval request keeps of an action's input: its JSON in the agent's
    own order, whole when it has at most :data:`INPUT_KEPT` characters; else with each text
    longer than one of :data:`SHORTENED` cut to it (``… (N more characters)``), the first
    that fits. Always valid JSON, every field kept: a mail's ``to`` is never cut away by a
    long body (issue 23, point 8). The digest, not this, says which input is approved.
    """
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for limit in SHORTENED:
        if len(text) <= INPUT_KEPT:
            return text
        text = json.dumps(_shortened(data, limit), ensure_ascii=False, separators=(",", ":"))
    if len(text) <= INPUT_KEPT:
        return text
    return json.dumps(text[:INPUT_KEPT] + "…", ensure_ascii=False)  # nothing else fits


def _shortened(value: Any, limit: int) -> Any:
    """Return ``value`` with every text longer than ``limit`` characters cut to it."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]}… ({len(value) - limit} more characters)"
    if isinstance(value, list):
        return [_shortened(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: _shortened(v, limit) for k, v in value.items()}
    return value


def summary_of(data: Any) -> str:
    """Return one short line of ``data`` (JSON, at most :data:`SUMMARY_CHARS` characters)."""
    text = json.dumps(data, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def action_key(item_id: str, stage: str, digest: str) -> str:
    """Return the action's idempotency key, ``BEES_ACTION_KEY``: the SHA-256 (64 hex digits)
    of ``ITEM\nSTAGE\nDIGEST``, the same on every attempt and computer, so an add-on can
    pass it to a service that deduplicates (mail and payment APIs commonly do)."""
    return hashlib.sha256(f"{item_id}\n{stage}\n{digest}".encode()).hexdigest()


def _now() -> str:
    return format_utc(utc_now())


class _Call(BaseModel):
    """One ``bees action`` call as read from the stage's environment and input."""

    item_id: str
    stage: str
    agent: str
    name: str
    data: Any
    digest: str
    round: int
    attempt: int


def _call(name: str, input_text: str | None, environ: Mapping[str, str]) -> _Call:
    item_id, stage, agent = (environ.get(k, "") for k in
                             ("BEES_ITEM_ID", "BEES_STAGE", "BEES_AGENT"))
    if not (item_id and stage and agent):
        raise UserError("bees action runs inside a stage: BEES_ITEM_ID, BEES_STAGE and "
                        "BEES_AGENT are not set",
                        hint="an agent's program calls it while its stage runs")
    if name.count(".") != 1 or not all(name.split(".")):
        raise UserError(f"{name!r} is not ADDON.ACTION", hint="e.g. bees action mail.send")
    data = parse_input(input_text)
    return _Call(item_id=item_id, stage=stage, agent=agent, name=name, data=data,
                 digest=digest_of(data), round=int(environ.get("BEES_ROUND", "1") or 1),
                 attempt=int(environ.get("BEES_ATTEMPT", "1") or 1))


def _local_rules(record: LocalRecord, call: _Call, environ: Mapping[str, str],
                 sessions: McpSessions | None = None, cwd: str | None = None
                 ) -> tuple[ActionCall, list[str], McpAction | None, list[str]]:
    """Read the item's stored snapshot: the gate's view of the call (the agent's tools, the
    action's kind, the stage's approval), the action's command, and the names its program's
    environment holds besides the base (:func:`declared_env`); check the input against the
    action's schema (:func:`~bees_cli.usecases.action_input.check_input`). An MCP
    add-on's tool (issue 25) takes its kind and schema from its server
    (:func:`~bees_cli.usecases.mcp_actions.mcp_rules`) and is returned as the
    :class:`~bees_cli.usecases.mcp_actions.McpAction` to call (on the run's held server,
    started in ``cwd``, when ``sessions`` are given).

    Raises:
        Refused: the item's record does not show the stage running, the agent may not use
            the action, or no add-on of the item has it.
        UserError: the input does not follow the action's input schema.
    """
    from bees_cli.engine.snapshot_store import engine_view, load_snapshot
    from bees_cli.usecases.action_input import check_input

    row = record.item(call.item_id)
    where = f"item {row.id}: "
    if row.stage != call.stage or row.status not in (Status.RUNNING,
                                                     Status.WAITING_FOR_APPROVAL):
        # an agent left running by a stage that moved on (cancelled, relinquished, killed)
        raise Refused(where + f"stage {call.stage} is not running (the item is "
                      f"{row.status_text})")
    digest = json.loads(row.input or "{}").get("snapshot_digest")
    snapshot = load_snapshot(record, row.id, digest)
    view = engine_view(snapshot)
    agent = view.agents.get(call.agent)
    if agent is None:
        raise Refused(where + f"agent {call.agent} does not run stage {call.stage}")
    refused = refusal(call.name, call.agent, tuple(agent.tools))
    if refused is not None:
        raise Refused(where + (refused.reason or ""))
    addon, _, action_name = call.name.partition(".")
    if addon not in view.addons or action_name not in view.addons[addon].actions:
        raise Refused(where + f"no action {call.name} among the item's add-ons")
    action = view.addons[addon].actions[action_name]
    if snapshot.addons[addon].mcp is not None:
        from bees_cli.usecases.mcp_actions import McpAction, mcp_rules

        mcp = McpAction(addon=snapshot.addons[addon], tool=action_name,
                        root=snapshot.workspace_root, sessions=sessions, cwd=cwd,
                        addon_name=addon)
        kind, schema = mcp_rules(call.name, mcp, environ)
        check_input(call.name, schema, call.data)
        return ActionCall(action=call.name, agent=call.agent, tools=tuple(agent.tools),
                          kind=Kind(kind), approval=view.stage(call.stage).approval), [], mcp, []
    check_input(call.name, snapshot.addons[addon].actions[action_name].input, call.data)
    gate_call = ActionCall(action=call.name, agent=call.agent, tools=tuple(agent.tools),
                           kind=Kind(action.kind), approval=view.stage(call.stage).approval)
    declared = declared_env(snapshot.addons[addon], snapshot.agents.get(call.agent))
    return gate_call, list(action.command), None, declared


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


async def _await_decision(record: LocalRecord, item_id: str, request_id: int) -> dict[str, Any]:
    """Wait until a person decided request ``request_id`` (the run's ``bees.decide`` writes
    it to the local record); return the request."""
    while True:
        request = await asyncio.to_thread(record.approval, item_id, request_id)
        if request is not None and request["status"] != "waiting":
            return request
        await asyncio.sleep(POLL_SECONDS)


async def run_action(bees: Bees, name: str, input_text: str | None, *,
                     env: Mapping[str, str], cwd: str | None = None) -> ActionOutcome:
    """Decide whether add-on action ``name`` (``ADDON.ACTION``) may run, and run it at most once.

    Decided here (no workflow update): refused when not in the agent's tools; answered from
    the journal when the same action with the same input ran (exit 0) in this stage (not for
    ``read``); run when not gated. A gated action on an ``approval: required`` stage asks the
    run, which holds it and returns at once; the person's decision is awaited in the local
    record. Before a non-``read`` action runs, its intent is written durably; its result is
    journaled after. An intent found without a result (the machine died while it ran) is
    held for a person: ``bees approve --ran`` answers it from the journal, ``--again`` runs
    it once more.

    The add-on's argv (``${BEES_WORKSPACE}`` and ``${BEES_PYTHON}`` expanded) gets the input
    as JSON on stdin, ``env`` plus ``BEES_ACTION``, ``BEES_ACTION_DIGEST`` and
    ``BEES_ACTION_KEY`` (:func:`action_key`), and the current folder; its stderr passes
    through.

    Args:
        bees: the computer the stage runs on (the worker hands its home to the stage).
        name: ``ADDON.ACTION``.
        input_text: ``--input`` (JSON, ``@FILE``, or None for ``{}``).
        env: the stage's environment (``BEES_ITEM_ID``, ``BEES_STAGE``, ``BEES_AGENT``…).
        cwd: the folder the add-on runs in (a model agent's tool call: its stage's folder);
            None: the current folder (``bees action`` run by a command agent in its stage's).

    Returns:
        The :class:`ActionOutcome`.

    Raises:
        UserError: not inside a stage, a bad name or input (one its schema does not allow).
        Refused: not in the agent's tools, the stage is not running, or a person denied it
            (the reason names who and why).
        EngineError: the engine cannot be reached (only a held action asks it).
    """
    environ = dict(env)
    call = _call(name, input_text, environ)
    record = bees.record
    gate_call, command, mcp, declared = await asyncio.to_thread(
        _local_rules, record, call, environ, bees.mcp_sessions, cwd)
    kind = gate_call.kind.value
    facts, hit, intent = Facts(), None, None
    if gate_call.journaled:
        hit = await asyncio.to_thread(record.journal_hit, call.item_id, call.stage, name,
                                      call.digest)
        if hit is None:  # run-folder journal: what a lost record.db forgot
            hit = await asyncio.to_thread(_recall_from_folder, record, call)
        if hit is None:
            intent = await asyncio.to_thread(record.open_intent, call.item_id, call.stage,
                                             name, call.digest)
        facts = Facts(journal=Journal.NONE if hit is None else Journal.RAN,
                      intent=Intent.NONE if intent is None else Intent.OPEN)
    decision = decide(gate_call, facts)
    verdict = decision.verdict
    if verdict is Verdict.REFUSE:  # _local_rules refused it already, before any look-up
        raise Refused(f"item {call.item_id}: {decision.reason}")
    request_id: int | None = None
    if verdict is Verdict.JOURNAL:
        assert hit is not None
        return await asyncio.to_thread(_answered, record, call, hit)
    if verdict is Verdict.HOLD_MAY_HAVE_RUN:
        assert intent is not None
        request, verdict = await _ask_run(bees, environ, call, gate_call, facts,
                                          interrupted_at=intent["at"])
        request_id = int(request["id"])
        if verdict is Verdict.CONFIRM_RAN:
            return await asyncio.to_thread(_confirmed, record, call, kind, intent, request)
        await asyncio.to_thread(record.end_intent, call.item_id, int(intent["seq"]),
                                "again", None)
        await asyncio.to_thread(_folder_end, record, call, "again", None)
    elif verdict is Verdict.HOLD:
        request, verdict = await _ask_run(bees, environ, call, gate_call, facts,
                                          interrupted_at=None)
        if verdict is Verdict.JOURNAL:
            return ActionOutcome(exit_code=request["exit_code"] or 0,
                                 stdout=request["stdout"], from_journal=True,
                                 ran_at=request["at"])
        request_id = int(request["id"]) if request.get("id") is not None else None
    return await _run(record, call, environ, kind, command, request_id, cwd, mcp=mcp,
                      declared=declared)


async def _ask_run(bees: Bees, environ: dict[str, str], call: _Call, gate_call: ActionCall,
                   facts: Facts, *, interrupted_at: str | None) -> tuple[dict[str, Any], Verdict]:
    """Ask the run (``bees.action``, returning at once) and wait in the local record for a
    held request's decision; return the decided request (or the run's journal answer) and
    the gate's verdict on it (:func:`bees_cli.gate.decide`: run, confirm ran, or journal).

    Raises:
        Refused: the run refused, or the request was denied, cancelled or relinquished.
    """
    from bees_cli.engine.models import ACTION_UPDATE, ActionAnswer, ActionAsk

    ask = ActionAsk(stage=call.stage, agent=call.agent, action=call.name, digest=call.digest,
                    summary=summary_of(call.data), input=kept_input(call.data),
                    attempt=call.attempt, at_once=True, interrupted_at=interrupted_at,
                    piece=environ.get("BEES_PIECE") or None)
    engine = await bees.engine(environ.get("BEES_TEMPORAL_ADDRESS") or None)
    answer = await engine.update(call.item_id, ACTION_UPDATE, ask, ActionAnswer, timeout=None)
    assert isinstance(answer, ActionAnswer)
    if answer.decision == "denied":
        raise Refused(answer.reason or f"{call.name} was denied")
    if answer.decision == "journal":
        return {"decision": "journal", "exit_code": answer.exit_code, "stdout": answer.stdout,
                "at": answer.at}, Verdict.JOURNAL
    if answer.decision == "run":
        return {"decision": "run", "id": answer.request_id}, Verdict.RUN
    assert answer.request_id is not None
    request = await _await_decision(bees.record, call.item_id, answer.request_id)
    decided = decide(gate_call, Facts(
        journal=facts.journal, intent=facts.intent, request=Request(request["status"]),
        answer=None if request.get("answer") is None else Answer(request["answer"]),
        who=request.get("who"), why=request.get("reason")))
    if decided.verdict in (Verdict.DENIED, Verdict.NOT_RUN):
        raise Refused(decided.reason or f"{call.name} was denied")
    return request, decided.verdict


def _answered(record: LocalRecord, call: _Call, hit: dict[str, Any]) -> ActionOutcome:
    """Answer a repeated action from the journal, and note it in the item's history."""
    record.add_fact(call.item_id, ActionAnswered(
        stage=call.stage, round=call.round, action=call.name, digest=call.digest,
        attempt=call.attempt, exit_code=hit["exit_code"], ran_at=hit["at"]),
        key=f"answered:{call.stage}:{call.attempt}:{call.name}:{call.digest}")
    return ActionOutcome(exit_code=int(hit["exit_code"]), stdout=hit["stdout"],
                         from_journal=True, ran_at=hit["at"])


def _confirmed(record: LocalRecord, call: _Call, kind: str, intent: dict[str, Any],
               request: dict[str, Any]) -> ActionOutcome:
    """A person confirmed that the interrupted action ran: journal it (exit 0, no stdout,
    at the intent's time) and answer from the journal."""
    from bees_cli.engine.models import JournalEntry

    entry = JournalEntry(stage=call.stage, round=call.round, attempt=int(intent["attempt"]),
                         action=call.name, kind=kind, digest=call.digest, exit_code=0,
                         stdout="", at=intent["at"], request_id=int(request["id"]))
    record.end_intent(call.item_id, int(intent["seq"]), "ran", entry.model_dump(mode="json"))
    _folder_end(record, call, "ran", entry.model_dump(mode="json"))
    return _answered(record, call, entry.model_dump(mode="json"))


async def _run(record: LocalRecord, call: _Call, environ: dict[str, str], kind: str,
               command: list[str], request_id: int | None,
               cwd: str | None = None, *, mcp: McpAction | None = None,
               declared: list[str] | None = None) -> ActionOutcome:
    """Run the add-on: the intent first (not for ``read``), the result journaled after.

    The one place an action runs: a script add-on's program, or an MCP add-on's tool call
    (``mcp``; the stage's held server inside ``bees run``), under the same intent and journal. A
    script's environment is :func:`~bees_cli.agents.child_env.child_environment` of the
    stage's with the ``declared`` names (issue 25, point 4)."""
    from bees_cli.agents.child_env import child_environment
    from bees_cli.agents.mcp_addon import McpNotReached
    from bees_cli.agents.runner import expand_command
    from bees_cli.engine.models import STDOUT_KEPT, JournalEntry

    argv = expand_command(command, environ.get("BEES_WORKSPACE", ""))
    child_env = dict(child_environment(environ, declared or ()), BEES_ACTION=call.name,
                     BEES_ACTION_DIGEST=call.digest,
                     BEES_ACTION_KEY=action_key(call.item_id, call.stage, call.digest))
    seq = None
    binary = None
    if kind != "read":
        at = _now()
        seq = await asyncio.to_thread(
            record.add_intent, call.item_id, stage=call.stage, action=call.name,
            digest=call.digest, attempt=call.attempt, at=at)
        await asyncio.to_thread(_folder_intent, record, call, at)
    try:
        if mcp is not None:
            from bees_cli.usecases.mcp_actions import run_mcp

            code, text, binary = await run_mcp(mcp, call.data, environ=environ, cwd=cwd)
            done = subprocess.CompletedProcess(argv, code, text.encode("utf-8"))
        else:
            done = await asyncio.to_thread(
                subprocess.run, argv, input=json.dumps(call.data, ensure_ascii=False).encode(),
                stdout=subprocess.PIPE, stderr=sys.stderr, env=child_env, cwd=cwd, check=False)
    except (OSError, UserError, McpNotReached) as error:
        if seq is not None:  # it never started: nothing may have happened
            await asyncio.to_thread(record.end_intent, call.item_id, seq, "result", None)
            await asyncio.to_thread(_folder_end, record, call, "result", None)
        if isinstance(error, McpNotReached):  # nothing was sent: a failure, not bad usage
            raise McpNotReached(f"{call.name} was not run: {error.message}",
                                hint=error.hint) from None
        if isinstance(error, UserError):  # the input is not a JSON object
            raise UserError(f"{call.name} was not run: {error.message}",
                            hint=error.hint) from None
        raise UserError(f"cannot start {argv[0]} for {call.name}: "
                        f"{error.strerror or error}") from None
    except ActionInterrupted as error:  # an MCP call sent and not answered: it may have run
        raise ActionInterrupted(
            f"{call.name}: {error.message}",
            hint=f"the stage's next attempt holds it for a person: bees approve "
                 f"{call.item_id} --ran (it ran) or --again (run it once more)") from None
    if seq is not None and done.returncode < 0:
        # killed by a signal while it ran: it may have taken effect, so its intent stays open
        # and a person decides (DESIGN.md, under faults: an intent without a result)
        raise ActionInterrupted(
            f"{call.name} was killed by signal {-done.returncode} while it ran: it may "
            "already have run, so it is not run again by itself",
            hint=f"the stage's next attempt holds it for a person: bees approve "
                 f"{call.item_id} --ran (it ran) or --again (run it once more)")
    stdout = done.stdout.decode("utf-8", "replace")
    if binary is None and stdout.encode("utf-8") != done.stdout:
        binary = "not UTF-8 text"  # a model is told so, never shown the bytes (issue 25, 6)
    entry = JournalEntry(
        stage=call.stage, round=call.round, attempt=call.attempt, action=call.name,
        kind=kind, digest=call.digest, exit_code=done.returncode,
        stdout=stdout[:STDOUT_KEPT], at=_now(), request_id=request_id)
    data = entry.model_dump(mode="json")
    if seq is None:
        await asyncio.to_thread(record.add_journal, call.item_id, data)
    else:
        await asyncio.to_thread(record.end_intent, call.item_id, seq, "result", data)
    await asyncio.to_thread(_folder_end, record, call, "result", data)
    await asyncio.to_thread(
        record.add_fact, call.item_id, ActionRan(
            stage=entry.stage, round=entry.round, action=entry.action, action_kind=entry.kind,
            digest=entry.digest, attempt=entry.attempt, exit_code=entry.exit_code,
            request=entry.request_id),
        key=f"ran:{entry.stage}:{entry.action}:{entry.digest}:{entry.at}")
    return ActionOutcome(exit_code=done.returncode, stdout=stdout, binary=binary)


# -- the run folder's copy of the journal (record/run_journal.py) ----------------------------


def _recall_from_folder(record: LocalRecord, call: _Call) -> dict[str, Any] | None:
    """When the local record knows nothing of this action (it was lost and rebuilt), read
    the run folder's copy: a successful result is journaled again and returned (answered
    from the journal); an intent without a result is written back as an open intent, so it
    is held as "may already have run" like one the record kept. Returns the result, or None.
    """
    from bees_cli.record.run_journal import recall

    if record.open_intent(call.item_id, call.stage, call.name, call.digest) is not None:
        return None  # the record has this action's story: it decides
    found = recall(record.item(call.item_id).run_folder, stage=call.stage, action=call.name,
                   digest=call.digest)
    if found.hit is not None:
        record.add_journal(call.item_id, found.hit)
        return found.hit
    if found.intent is not None:
        record.add_intent(call.item_id, stage=call.stage, action=call.name, digest=call.digest,
                          attempt=int(found.intent["attempt"]), at=str(found.intent["at"]))
    return None


def _folder_intent(record: LocalRecord, call: _Call, at: str) -> None:
    """Append the intent to the run folder's copy, durably, before the add-on runs.

    Raises:
        DiskError: the run folder cannot be written (the action does not run; the record's
            intent is ended as not started).
    """
    from bees_cli.errors import disk_error_of
    from bees_cli.record.run_journal import write_intent

    try:
        write_intent(record.item(call.item_id).run_folder, stage=call.stage,
                     action=call.name, digest=call.digest, attempt=call.attempt, at=at)
    except OSError as error:
        # it does not run: the record's intent ends, so nothing is held for a person
        seq = record.open_intent(call.item_id, call.stage, call.name, call.digest)
        if seq is not None:
            record.end_intent(call.item_id, int(seq["seq"]), "result", None)
        raise disk_error_of(error) or UserError(
            f"cannot write the run folder's journal: {error}") from None


def _folder_end(record: LocalRecord, call: _Call, how: EndHow,
                entry: dict[str, Any] | None) -> None:
    """Append how the action ended to the run folder's copy. A failure only warns: the
    local record has it, and an intent left open there is held for a person, never rerun."""
    from bees_cli.record.run_journal import write_end

    try:
        write_end(record.item(call.item_id).run_folder, stage=call.stage, action=call.name,
                  digest=call.digest, how=how, entry=entry)
    except OSError as error:
        print(f"warning: cannot write the run folder's journal: {error}", file=sys.stderr)

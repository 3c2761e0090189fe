"""``bees action ADDON.ACTION``: an agent acts on the world through an add-on, at most once.

Two doors lead to one gate. A command agent's program runs ``bees action`` inside its stage
(``Bees.action``): its environment names the item, the stage and the agent, read once
into an :class:`~bees_cli.agents.action_call.ActionCallInput`. A model agent's tool call,
inside the worker, passes that typed call directly (``Bees.call_action``). The gate's
decision is :func:`bees_cli.gate.decide` (the run's ``bees.action`` update uses the same
function); most actions are decided here, from the item's stored snapshot and the local
record's journal, without a workflow update: refused (not in the agent's tools), answered
from the journal (it already ran in this stage), or run (not gated). Only a gated action on
an ``approval: required`` stage, or one interrupted before its result was written, asks the
run (``bees.action``, which returns at once); the person's decision is then awaited
on the run (:func:`wait_in_engine`, from either door) and decided on by the gate again. An
*intent* is written durably before the add-on runs and the result after it
(:mod:`bees_cli.usecases.action_run`), so a power cut in between never repeats the action
without a person (DESIGN.md, Rules: approvals; the journal).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bees_cli.agents.action_call import (
    ActionCallInput,
    action_key,
    canonical,
    check_name,
    digest_of,
    from_environment,
    parse_input,
)
from bees_cli.errors import Refused
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
from bees_cli.record.states import Status
from bees_cli.usecases.action_journal import answered, confirmed, folder_end, recall_from_folder
from bees_cli.usecases.action_run import Edit, declared_env, run_addon
from bees_cli.usecases.models import ActionOutcome
from bees_cli.usecases.owner_check import refuse_unless_owner

if TYPE_CHECKING:
    from bees_cli.agents.mcp_sessions import McpSessions
    from bees_cli.record.local import LocalRecord
    from bees_cli.usecases.bees import Bees
    from bees_cli.usecases.mcp_actions import McpAction

__all__ = ["INPUT_KEPT", "SUMMARY_CHARS", "action_key", "canonical",
           "declared_env", "digest_of", "kept_input", "parse_input", "summary_of",
           "wait_in_engine"]

SUMMARY_CHARS = 100
"""Longest summary of an action's input shown in ``bees status`` and ``bees approvals``."""

INPUT_KEPT = 64_000
"""Most characters of an action's input kept with an approval request (what the person
approves); past it, long texts are shortened, never a field dropped (:func:`kept_input`)."""

SHORTENED = (8000, 2000, 500, 100)
"""The lengths :func:`kept_input` tries, in turn, to shorten each long text of an input to."""

Waiter = Callable[["Bees", ActionCallInput, int], Awaitable[dict[str, Any]]]
"""Waits until a person decided held request ``request_id`` of the call's item; returns the
request as the local record shows it (``id``, ``status``, ``answer``, ``who``, ``reason``)."""


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


@dataclass(frozen=True)
class _Rules:
    """What the item's stored snapshot says of a call (:func:`_local_rules`)."""

    gate: ActionCall
    """The gate's view: the agent's tools, the action's kind, the stage's approval."""
    command: list[str]
    """A script add-on's argv (empty for an MCP add-on's tool)."""
    mcp: McpAction | None
    """An MCP add-on's tool to call (issue 25), or None."""
    declared: list[str]
    """Names the script's environment keeps besides the base (:func:`declared_env`)."""
    schema: dict[str, Any] | None = None
    """The action's input schema (a script's ``input``, an MCP tool's from its server)."""


async def _run_action(bees: Bees, name: str, input_text: str | None, *,
                     env: Mapping[str, str], cwd: str | None = None) -> ActionOutcome:
    """``bees action NAME --input TEXT`` from a command agent's program: read the stage's
    environment into a typed call (:func:`~bees_cli.agents.action_call.from_environment`)
    and act on it as :func:`_call_action` does; a held action waits on the run
    (:func:`wait_in_engine`, at ``BEES_TEMPORAL_ADDRESS``) as a model agent's tool call does.

    Args:
        bees: the computer the stage runs on.
        name: ``ADDON.ACTION``.
        input_text: ``--input`` (JSON, ``@FILE``, or None for ``{}``).
        env: the stage's environment (``BEES_ITEM_ID``, ``BEES_STAGE``, ``BEES_AGENT``…).
        cwd: the folder the add-on runs in (None: the current folder).

    Raises:
        UserError: not inside a stage, a bad name or input; see :func:`_call_action`.
    """
    return await _act(bees, from_environment(name, input_text, env, cwd=cwd), wait_in_engine)


async def _call_action(bees: Bees, call: ActionCallInput) -> ActionOutcome:
    """Decide whether add-on action ``call.action`` may run, and run it at most once: a model
    agent's tool call, passed typed by the worker; a held action waits on the run
    (:func:`wait_in_engine`).

    Decided here (no workflow update): refused when not in the agent's tools; answered from
    the journal when the same action with the same input ran (exit 0) in this stage (not for
    ``read``); run when not gated. A gated action on an ``approval: required`` stage asks the
    run, which holds it and returns at once; then the person's decision is awaited. Before a
    non-``read`` action runs, its intent is written durably; its result is journaled after.
    An intent found without a result (the machine died while it ran) is held for a person:
    ``bees approve --ran`` answers it from the journal, ``--again`` runs it once more.

    The add-on's argv (``${BEES_WORKSPACE}`` and ``${BEES_PYTHON}`` expanded) gets the input
    as JSON on stdin, ``call.environ`` (filtered) plus ``BEES_ACTION``,
    ``BEES_ACTION_DIGEST`` and ``BEES_ACTION_KEY`` (:func:`action_key`), and ``call.cwd``;
    its stderr passes through.

    Returns:
        The :class:`ActionOutcome`.

    Raises:
        UserError: an input its schema does not allow, or the add-on cannot start.
        Refused: not in the agent's tools, the stage is not running, or a person denied it
            (the reason names who and why).
        EngineError: the engine cannot be reached (only a held action asks it).
    """
    return await _act(bees, call, wait_in_engine)


async def _act(bees: Bees, call: ActionCallInput, wait: Waiter) -> ActionOutcome:
    """The gate of both doors (:func:`_call_action`), waiting for a person with ``wait``."""
    check_name(call.action)
    record = bees.async_record
    rules = await record.run(_local_rules, call, bees.mcp_sessions)
    facts, hit, intent = await record.run(_journal_facts, call, rules.gate)
    decision = decide(rules.gate, facts)
    verdict = decision.verdict
    if verdict is Verdict.REFUSE:  # _local_rules refused it already, before any look-up
        raise Refused(f"item {call.item_id}: {decision.reason}")
    if verdict is Verdict.JOURNAL:
        assert hit is not None
        return await record.run(answered, call, hit)
    if verdict is Verdict.HOLD_MAY_HAVE_RUN:
        assert intent is not None
        return await _interrupted(bees, call, rules, facts, intent, wait, edit=None)
    request_id: int | None = None
    if verdict is Verdict.HOLD:
        request, verdict = await _ask_run(bees, call, rules.gate, facts, wait,
                                          interrupted_at=None)
        if verdict is Verdict.JOURNAL:
            return ActionOutcome(exit_code=request["exit_code"] or 0,
                                 stdout=request["stdout"], from_journal=True,
                                 ran_at=request["at"])
        request_id = int(request["id"]) if request.get("id") is not None else None
        if request.get("edited_input") is not None:
            assert request_id is not None
            return await _run_edited(bees, call, rules, request_id, wait,
                                     text=str(request["edited_input"]),
                                     who=str(request.get("who") or "a person"))
    await refuse_unless_owner(bees.computer, call.item_id, call.action, rules.gate.kind.value)
    return await run_addon(record, call, rules.gate.kind.value, rules.command, request_id,
                           mcp=rules.mcp, declared=rules.declared)


async def _interrupted(bees: Bees, call: ActionCallInput, rules: _Rules, facts: Facts,
                       intent: dict[str, Any], wait: Waiter, *,
                       edit: Edit | None) -> ActionOutcome:
    """An intent of ``call`` without a result (it may already have run): held for a person,
    who says it ran (journaled, answered from it) or to run it once more (``edit``: the
    person's corrected input it runs under, if any)."""
    record = bees.async_record
    request, verdict = await _ask_run(bees, call, rules.gate, facts, wait,
                                      interrupted_at=intent["at"])
    request_id = int(request["id"])
    if verdict is Verdict.CONFIRM_RAN:
        return await record.run(confirmed, call, rules.gate.kind.value, intent, request_id)
    await refuse_unless_owner(bees.computer, call.item_id, call.action, rules.gate.kind.value)
    await record.end_intent(call.item_id, int(intent["seq"]), "again", None)
    await record.run(folder_end, call, "again", None)
    return await run_addon(record, call, rules.gate.kind.value, rules.command, request_id,
                           mcp=rules.mcp, declared=rules.declared, edit=edit)


async def _run_edited(bees: Bees, call: ActionCallInput, rules: _Rules, request_id: int,
                      wait: Waiter, *, text: str, who: str) -> ActionOutcome:
    """Run ``call`` with the input a person approved instead (``text``, JSON; issue 26,
    point 4), at most once: the journal's once-only rule keys on that input, the one that
    runs. A retried ask of the agent's input (a stage's next attempt, a redelivered update)
    finds the approved request again and lands here: answered from the journal when the
    corrected input ran, held for a person when its intent has no result, else run.

    Returns:
        The outcome, with ``edited`` saying what the person changed (the agent is told).

    Raises:
        UserError: the corrected input does not follow the action's schema (checked when
            it was approved; again here for an MCP tool, whose schema is its server's).
    """
    from bees_cli.usecases.action_input import check_input

    record = bees.async_record
    data = json.loads(text)
    check_input(call.action, rules.schema, data)
    edited = call.with_data(data)
    edit = Edit(by=who, original_digest=call.digest, input=text,
                changes=what_changed(call.data, data))
    facts, hit, intent = await record.run(_journal_facts, edited, rules.gate)
    if hit is not None:
        outcome = await record.run(answered, edited, hit)
    elif intent is not None:
        outcome = await _interrupted(bees, edited, rules, facts, intent, wait, edit=edit)
    else:
        await refuse_unless_owner(bees.computer, edited.item_id, edited.action,
                                  rules.gate.kind.value)
        outcome = await run_addon(record, edited, rules.gate.kind.value, rules.command,
                                  request_id, mcp=rules.mcp, declared=rules.declared,
                                  edit=edit)
    return outcome.model_copy(update={"edited": edit.changes})


def what_changed(before: Any, after: Any) -> str:
    """Say, field by field, what a person changed of an action's input before it ran:
    ``the person changed to: a@x → b@x; cc: (none) → c@x`` (issue 26, point 4: what the
    agent is told). Inputs that are not JSON objects are shown whole."""
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return f"the person changed the input: {_shown(before)} → {_shown(after)}"
    keys = list(before) + [k for k in after if k not in before]
    parts = [f"{k}: {_shown(before.get(k, _NONE))} → {_shown(after.get(k, _REMOVED))}"
             for k in keys if before.get(k, _NONE) != after.get(k, _NONE)]
    return "the person changed " + ("; ".join(parts) or "nothing")


_NONE, _REMOVED = "(none)", "(removed)"
CHANGE_CHARS = 200
"""Longest value shown in :func:`what_changed` (longer ones end with ``…``)."""


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= CHANGE_CHARS else text[: CHANGE_CHARS - 1] + "…"


def _journal_facts(record: LocalRecord, call: ActionCallInput, gate: ActionCall
                   ) -> tuple[Facts, dict[str, Any] | None, dict[str, Any] | None]:
    """Return what the journal holds of ``call`` for the gate (nothing for ``read``): its
    successful result (the local record's, else the run folder's copy: what a lost
    ``record.db`` forgot), else its intent without a result."""
    if not gate.journaled:
        return Facts(), None, None
    hit = record.journal_hit(call.item_id, call.stage, call.action, call.digest)
    if hit is None:
        hit = recall_from_folder(record, call)
    intent = None
    if hit is None:
        intent = record.open_intent(call.item_id, call.stage, call.action, call.digest)
    return Facts(journal=Journal.NONE if hit is None else Journal.RAN,
                 intent=Intent.NONE if intent is None else Intent.OPEN), hit, intent


async def _ask_run(bees: Bees, call: ActionCallInput, gate: ActionCall, facts: Facts,
                   wait: Waiter, *, interrupted_at: str | None
                   ) -> tuple[dict[str, Any], Verdict]:
    """Ask the run (``bees.action``, returning at once) and ``wait`` for a held request's
    decision; return the decided request (or the run's journal answer) and the gate's
    verdict on it (:func:`bees_cli.gate.decide`: run, confirm ran, or journal).

    Raises:
        Refused: the run refused, the request was denied, cancelled or relinquished, or its
            stage stopped before a person decided.
    """
    from bees_cli.engine.models import ACTION_UPDATE, ActionAnswer, ActionAsk

    ask = ActionAsk(stage=call.stage, agent=call.agent, action=call.action, digest=call.digest,
                    summary=summary_of(call.data), input=kept_input(call.data),
                    attempt=call.attempt, at_once=True, interrupted_at=interrupted_at,
                    piece=call.piece)
    engine = await bees.engine(call.temporal_address)
    answer = await engine.update(call.item_id, ACTION_UPDATE, ask, ActionAnswer, timeout=None)
    assert isinstance(answer, ActionAnswer)
    if answer.decision == "denied":
        raise Refused(answer.reason or f"{call.action} was denied")
    if answer.decision == "journal":
        return {"decision": "journal", "exit_code": answer.exit_code, "stdout": answer.stdout,
                "at": answer.at}, Verdict.JOURNAL
    if answer.decision == "run":
        return {"decision": "run", "id": answer.request_id, "edited_input": answer.input,
                "who": answer.edited_by}, Verdict.RUN
    assert answer.request_id is not None
    request = await wait(bees, call, answer.request_id)
    if request["status"] == "waiting":  # the run says its stage round stopped meanwhile
        raise Refused(f"{call.action} was not run: stage {call.stage} stopped before a "
                      "person decided")
    decided = decide(gate, Facts(
        journal=facts.journal, intent=facts.intent, request=Request(request["status"]),
        answer=None if request.get("answer") is None else Answer(request["answer"]),
        who=request.get("who"), why=request.get("reason")))
    if decided.verdict in (Verdict.DENIED, Verdict.NOT_RUN):
        raise Refused(decided.reason or f"{call.action} was denied")
    return request, decided.verdict


async def wait_in_engine(bees: Bees, call: ActionCallInput, request_id: int) -> dict[str, Any]:
    """Wait on the run for a person's decision on held request ``request_id``: the run's
    ``bees.await_decision`` update returns once the decision is made and written to the
    local record (no polling; issue 24, point 1). Used by both doors: a tool call inside the
    worker, and ``bees action``'s own process (the engine's address from its stage's
    ``BEES_TEMPORAL_ADDRESS``).

    Raises:
        Refused: the run is over or unknown.
        EngineError: the engine cannot be reached.
    """
    from bees_cli.engine.models import AWAIT_DECISION_UPDATE, ApprovalRequest, DecisionWait

    engine = await bees.engine(call.temporal_address)
    request = await engine.update(call.item_id, AWAIT_DECISION_UPDATE,
                                  DecisionWait(request_id=request_id), ApprovalRequest,
                                  timeout=None)
    assert isinstance(request, ApprovalRequest)
    return request.model_dump(mode="json")


def _local_rules(record: LocalRecord, call: ActionCallInput,
                 sessions: McpSessions | None = None) -> _Rules:
    """Read the item's stored snapshot: the gate's view of the call (the agent's tools, the
    action's kind, the stage's approval), the action's command, and the names its program's
    environment holds besides the base (:func:`declared_env`); check the input against the
    action's schema (:func:`~bees_cli.usecases.action_input.check_input`). An MCP
    add-on's tool (issue 25) takes its kind and schema from its server
    (:func:`~bees_cli.usecases.mcp_actions.mcp_rules`) and is returned as the
    :class:`~bees_cli.usecases.mcp_actions.McpAction` to call.

    Raises:
        Refused: the item's record does not show the stage running, the agent may not use
            the action, or no add-on of the item has it.
        UserError: the input does not follow the action's input schema.
    """
    from bees_cli.engine.snapshot_store import engine_view, load_snapshot
    from bees_cli.usecases.action_input import check_input, item_folders

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
    refused = refusal(call.action, call.agent, tuple(agent.tools))
    if refused is not None:
        raise Refused(where + (refused.reason or ""))
    addon, _, action_name = call.action.partition(".")
    if addon not in view.addons or action_name not in view.addons[addon].actions:
        raise Refused(where + f"no action {call.action} among the item's add-ons")
    action = view.addons[addon].actions[action_name]
    approval = view.stage(call.stage).approval
    if snapshot.addons[addon].mcp is not None:
        from bees_cli.agents.mcp_sessions import SessionKey
        from bees_cli.usecases.mcp_actions import McpAction, mcp_rules

        mcp = McpAction(addon=snapshot.addons[addon], tool=action_name,
                        root=snapshot.workspace_root, cwd=call.cwd, stage_server=None
                        if sessions is None else (sessions, SessionKey(
                            item_id=call.item_id, stage=call.stage, round=call.round,
                            attempt=call.attempt, piece=call.piece, addon=addon)))
        kind, schema = mcp_rules(call.action, mcp, call.environ)
        check_input(call.action, schema, call.data)
        return _Rules(ActionCall(action=call.action, agent=call.agent, tools=tuple(agent.tools),
                                 kind=Kind(kind), approval=approval), [], mcp, [], schema)
    declared = snapshot.addons[addon].actions[action_name].input
    check_input(call.action, declared, call.data, folder_of=item_folders(row, snapshot))
    return _Rules(ActionCall(action=call.action, agent=call.agent, tools=tuple(agent.tools),
                             kind=Kind(action.kind), approval=approval),
                  list(action.command), None,
                  declared_env(snapshot.addons[addon], snapshot.agents.get(call.agent)),
                  declared)

"""Approvals: what waits for a person here, ``bees approve`` / ``bees deny``, and queued decisions.

A decision goes straight to the run when ``bees run`` is up, and is queued in the local
record otherwise: ``bees run`` delivers it when it starts (so a script can run ``bees run
--exit-when-idle``, approve, and run again).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.errors import BeesError, NotFound, Refused, UserError
from bees_cli.record.local import ItemRow, LocalRecord, now_utc
from bees_cli.usecases.models import ApprovalRow, DecideDone

if TYPE_CHECKING:
    from bees_cli.record.views import QueuedDecision
    from bees_cli.usecases.bees import Bees

FINAL_ANSWER_FILE = "answer.md"
"""The file a model agent's final answer is written to in its stage's output folder
(``engine/model_activities.py``'s ``ANSWER_FILE``; not imported: that module loads the
engine, too heavy for ``bees approvals``)."""

DECIDE_TIMEOUT = 30.0
"""Seconds to wait for ``bees run`` to answer a decision."""

RECIPIENT_KEYS = ("to", "cc", "bcc", "recipient", "recipients", "channel", "chat", "payee",
                  "account")
"""Input fields that name whom a held action reaches (a mail's ``to``, a post's ``channel``,
a payment's ``payee``): shown first, in this order, wherever a person reads an input to
decide on it (issue 23, point 8: a long body hid a wrong ``to``)."""


def request_input(text: str | None) -> Any:
    """Return a request's kept input as the JSON value it is (None: no input, e.g. a stage's
    finish); a text that is not JSON (kept cut by an older Bees) is returned as it is."""
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def input_fields(value: Any) -> list[tuple[str, Any]] | None:
    """Return the fields of an input object in the order a person reads them: the
    recipients first (:data:`RECIPIENT_KEYS`, any case), then the rest as given; None when
    ``value`` is not a JSON object."""
    if not isinstance(value, dict):
        return None
    rank = {key: n for n, key in enumerate(RECIPIENT_KEYS)}
    first = sorted((k for k in value if str(k).lower() in rank), key=lambda k: rank[k.lower()])
    return [(k, value[k]) for k in first] + [(k, v) for k, v in value.items() if k not in first]


def queued_answers(record: LocalRecord, item_id: str | None = None) -> list[dict[str, object]]:
    """Return the decisions (approve or deny) a person gave while ``bees run`` was down, that
    it has not delivered yet, of item ``item_id`` or of every item: each the
    :class:`~bees_cli.engine.models.DecideInput` fields plus ``item_id`` and ``said``
    (``approved``, ``approved: it ran``, ``approved: run it again`` or ``denied``)."""
    from bees_cli.engine.models import DECIDE_UPDATE

    return [{**payload, "said": _answer_text(payload)}
            for payload in record.queued_payloads(DECIDE_UPDATE, item_id)]


def answered(request: dict[str, object], queued: list[dict[str, object]]) -> bool:
    """Return whether ``request`` (an approval request of the record) is answered by one of
    the ``queued`` decisions (:func:`queued_answers`): one for its item that names it, or
    that names no request (it answers all)."""
    return any(q.get("item_id") == request.get("item_id")
               and q.get("request_id") in (None, request.get("id")) for q in queued)


def queued_decisions(record: LocalRecord,
                     item_id: str | None = None) -> dict[str, list[QueuedDecision]]:
    """Return the decisions queued while ``bees run`` was down (:func:`queued_answers`), of
    item ``item_id`` or of every item, by item id, oldest first (issue 23, point 2: what
    ``bees status``, ``bees item show`` and the app show until ``bees run`` delivers them)."""
    from bees_cli.record.states import DECIDE_UPDATE
    from bees_cli.record.views import QueuedDecision  # its events' models: off bees approvals

    found: dict[str, list[QueuedDecision]] = {}
    for payload in record.queued_payloads(DECIDE_UPDATE, item_id):
        found.setdefault(str(payload["item_id"]), []).append(QueuedDecision.of(payload))
    return found


def with_decisions(requests: Sequence[dict[str, Any]],
                   decisions: Sequence[QueuedDecision]) -> list[dict[str, Any]]:
    """Return an item's approval requests (their JSON) with each waiting one that a queued
    decision answers shown as decided: the decision's ``status`` (``approved`` or
    ``denied``), ``who``, ``at``, ``reason`` and ``answer``, and ``delivered`` false (its
    run gets it when ``bees run`` starts). Other requests are returned as they are."""
    shown = []
    for request in requests:
        decision = next((d for d in decisions if d.answers(int(request["id"]))), None)
        if request.get("status") == "waiting" and decision is not None:
            request = {**request, "status": decision.decision, "who": decision.who,
                       "at": decision.at, "reason": decision.reason,
                       "answer": decision.answer if request.get("interrupted_at") else None,
                       "delivered": False}
        shown.append(request)
    return shown


def approvals_waiting(record: LocalRecord) -> list[ApprovalRow]:
    """Return what waits for approval in ``record`` (see :func:`_waiting_approvals`); a
    request a person already answered while ``bees run`` was down waits for ``bees run``,
    not for a person, and is left out."""
    from bees_cli.engine.models import ApprovalRequest

    out = []
    queued = queued_answers(record)
    for data in record.approvals(status="waiting"):
        if answered(data, queued):
            continue
        row = record.item(data["item_id"])
        request = ApprovalRequest.model_validate(data)
        shown = finish_shown(record, row, request) if request.action is None else {}
        out.append(ApprovalRow.model_validate(
            {**data, "title": row.title, "process": row.process, "what": request.label,
             **shown}))
    return out


def finish_shown(record: LocalRecord, row: ItemRow, request: Any) -> dict[str, Any]:
    """Return what a held finish will let through (issue 26, point 4: a finish showed only
    its output folder): ``final_answer``, the text the stage's model agent ended with (its
    ``answer.md``; None for a command agent); ``tool_calls``, each add-on or file tool the
    stage round's latest attempt called (``tool``, ``input``, ``outcome``); and
    ``tools_not_called``, the agent's ``tools:`` it never called."""
    from bees_cli.engine.snapshot_store import load_snapshot
    from bees_cli.engine.transcript import transcript_lines, transcript_path

    folder = Path(str(request.summary).removeprefix("output "))
    answer = folder / FINAL_ANSWER_FILE
    final = answer.read_text(encoding="utf-8", errors="replace") if answer.is_file() else None
    entries = [e for e in transcript_lines(transcript_path(row.run_folder, request.stage))
               if e.get("round") == request.round] if row.run_folder else []
    latest = max((int(e.get("attempt") or 1) for e in entries), default=1)
    calls = [{"tool": e.get("tool"), "input": e.get("arguments"), "outcome": e.get("outcome")}
             for e in entries if e.get("kind") == "tool" and e.get("attempt", 1) == latest]
    offered: list[str] = []
    try:
        snapshot = load_snapshot(record, row.id,
                                 json.loads(row.input or "{}").get("snapshot_digest"))
    except BeesError:
        snapshot = None
    if snapshot is not None and row.agent in snapshot.agents:
        offered = list(snapshot.agents[row.agent].tools)
    called = {c["tool"] for c in calls}
    return {"final_answer": final, "tool_calls": calls,
            "tools_not_called": [t for t in offered if t not in called]}


async def _item_approvals(bees: Bees, item_id: str, *,
                         request_id: int | None = None) -> list[ApprovalRow]:
    """``bees approvals show ITEM``: what waits for approval on item ``item_id`` (a unique
    prefix is enough), as :func:`_waiting_approvals` lists it, or only request
    ``request_id``.

    Raises:
        NotFound, Ambiguous: no such item here, or the prefix matches several.
        NotFound: nothing of the item waits, or ``request_id`` does not wait (exit 1).
    """
    import asyncio  # here: bees item show reads this module without an event loop

    def lookup() -> list[ApprovalRow]:
        row = bees.record.item(item_id)
        waiting = [r for r in approvals_waiting(bees.record) if r.item_id == row.id]
        if not waiting:
            raise NotFound(f"nothing waits for approval on item {row.id} "
                           f"(it is {row.status_text})", hint="bees approvals lists what waits")
        chosen = [r for r in waiting if request_id in (None, r.id)]
        if not chosen:
            raise NotFound(f"request {request_id} of item {row.id} does not wait for approval "
                           f"(waiting: {', '.join(str(r.id) for r in waiting)})",
                           hint=f"bees approvals show {row.id}")
        return chosen

    return await asyncio.to_thread(lookup)


async def _waiting_approvals(bees: Bees) -> list[ApprovalRow]:
    """Return what waits for approval on this computer, oldest item first: each request's
    fields (``id``, ``item_id``, ``stage``, ``action``, ``kind``, ``summary``, ``input``,
    ``asked_at``…) plus ``title`` and ``process`` of its item and ``what`` (one line)."""
    return await bees.async_record.run(approvals_waiting)


def _refuse_decision_elsewhere(record: LocalRecord, row: ItemRow, machine_id: str) -> None:
    """Refuse a decision on an item another computer runs (the shared record knows which)
    or that this computer relinquished and that waits, free, for a ``bees continue``.

    Local truth first (issue 11, point 6): when this computer holds the item's owner claim
    (``bees continue`` or the start claimed it here) and has not relinquished it, the
    claim wins over a team row that still names the computer that ran it before (the
    team rows lag the claim by up to a sync round or two).
    """
    from bees_cli.record.fires import ClaimStatus, FireLog
    from bees_cli.record.shared import SharedRecord

    claim = FireLog(record.path).claim(row.id)
    held_here = (row.status != "free" and claim is not None
                 and claim.status in (ClaimStatus.OWNER, ClaimStatus.NO_CLOUD))
    for team in [] if held_here else SharedRecord(record.path).team():
        if (team.item_id == row.id and team.machine_id != machine_id
                and team.fields.get("status") not in (None, "free")):
            raise Refused(f"{row.id} runs on {team.computer} ({team.person}): approve it there")
    if row.status == "free":
        raise Refused(f"{row.id} is free, restarts at {row.stage or '?'}: nothing waits here")


def _refuse_not_owner(bees: Bees, item_id: str) -> None:
    """Refuse a decision on an item whose latest owner row in Bees Cloud is not held by this
    computer (DESIGN.md, Handover: only the owner runs an item): another computer holds it,
    or it was released (by a relinquish whose answer this computer may not have seen). No
    sign-in, an item never claimed or a cloud that cannot be reached: nothing is checked
    here (the local record's checks follow).

    Raises:
        Refused: the owner row names another computer, or the item is free (exit 3).
    """
    from bees_cli.cloud.client import sync_cloud_for
    from bees_cli.cloud.wire import is_runner_identity
    from bees_cli.errors import CloudError
    from bees_cli.handover.relinquish import main_restart

    api = sync_cloud_for(bees.computer, timeout=3.0)  # a cloud that is down: local checks
    if api is None:
        return
    runner = None
    try:
        with api:
            owner = api.get_owner(item_id)
            if owner is not None and owner.held and is_runner_identity(owner.person):
                runner = next((r for r in api.runners().runners
                               if r.machine_id == owner.machine_id), None)
    except CloudError:
        return
    if owner is None:
        return
    if owner.held and owner.machine_id == bees.computer.machine_id:
        return
    if owner.held and runner is not None:
        raise Refused(f"{item_id} runs on {runner.name}: approve it there",
                      hint=f"{runner.name} is a runner of pool {runner.pool}: bees approve "
                           f"{item_id} on it (ssh, docker exec)")
    if owner.held:
        raise Refused(f"{item_id} runs on {owner.computer_name} ({owner.person}): approve it "
                      "there")
    assert owner.release is not None
    restart = main_restart(owner.release.restart_stages) or "?"
    raise Refused(f"{item_id} is free, restarts at {restart}: nothing waits here")


async def _decide(bees: Bees, item_id: str, *, approve: bool, request_id: int | None,
                 reason: str | None, answer: str | None = None,
                 input_text: str | None = None) -> DecideDone:
    """Approve or deny what waits on item ``item_id`` (request ``request_id``, or all).

    Sent to the run now when ``bees run`` is up; queued for ``bees run`` otherwise. An
    action that may already have run (interrupted between its intent and its result) is
    approved with an ``answer``: ``ran`` (record it as run) or ``again`` (run it once more).
    A held action call may be approved with the person's corrected input (``input_text``:
    JSON, ``@FILE`` or ``@-``; issue 26, point 4): checked against the action's input
    schema here, it runs instead of the agent's input.

    Raises:
        UserError: a denial without a reason; an interrupted action approved without an
            answer, or an answer for none; a corrected input that is not JSON, that its
            schema refuses (the message names the field), or that is not for exactly one
            held action call (a stage's finish, several requests): nothing is decided.
        NotFound, Ambiguous: no such item on this computer, or the prefix matches several.
        Refused: nothing of the item waits, or ``request_id`` does not wait.
    """
    import asyncio

    from bees_cli.engine.models import DECIDE_UPDATE, DecideInput

    if not approve and not (reason or "").strip():
        raise UserError("a denial needs a reason (--reason TEXT)",
                        hint=f'bees deny {item_id} --reason "what is wrong"')
    record = bees.async_record
    row = await record.item(item_id)
    await asyncio.to_thread(_refuse_not_owner, bees, row.id)
    await record.run(_refuse_decision_elsewhere, row, bees.computer.machine_id)
    requests = await record.approvals(row.id)
    waiting = [r["id"] for r in requests]
    if not waiting:
        raise Refused(f"nothing waits for approval on item {row.id} (it is {row.status_text})")
    if request_id is not None and request_id not in waiting:
        raise Refused(f"request {request_id} of item {row.id} does not wait for approval "
                      f"(waiting: {', '.join(map(str, waiting))})")
    chosen = [r for r in requests if request_id in (None, r["id"])]
    _check_answer(chosen, row.id, approve=approve, answer=answer)
    edited = None
    if input_text is not None:
        edited = await record.run(_edited_input, row, chosen, input_text, approve=approve,
                                  answer=answer)
    decision = DecideInput(approve=approve, request_id=request_id, who=bees.who(),
                           at=now_utc(), reason=reason,
                           answer=answer, input=edited)  # type: ignore[arg-type]
    shown = None if edited is None else json.loads(edited)
    address = await asyncio.to_thread(bees.worker_address)
    if address is None:
        earlier = await record.queue_decision(row.id, DECIDE_UPDATE,
                                              decision.model_dump(mode="json"))
        if earlier is not None:
            raise Refused(f"item {row.id} is already answered ({_answer_text(earlier)}, "
                          f"by {earlier.get('who')}): bees run delivers it when it starts",
                          hint="a request is answered once; `bees approvals` shows what waits")
        return DecideDone(item=row.id, who=decision.who, at=decision.at, decided=None,
                          queued=True, input=shown)
    engine = await bees.engine(address)
    ids = await engine.update(row.id, DECIDE_UPDATE, decision, list[int],
                              timeout=DECIDE_TIMEOUT)
    return DecideDone(item=row.id, who=decision.who, at=decision.at,
                      decided=list(ids),  # type: ignore[call-overload]
                      queued=False, input=shown)


def _edited_input(record: LocalRecord, row: ItemRow, chosen: list[dict[str, Any]],
                  input_text: str, *, approve: bool, answer: str | None) -> str | None:
    """Read and check a person's corrected input for the one held action call in ``chosen``
    (issue 26, point 4); return it as compact JSON text, or None when it is the agent's
    own input (approved as asked).

    Raises:
        UserError: not with an approval, or with ``--ran``/``--again``; ``chosen`` is not
            one held action call (several, a stage's finish, an action that may already
            have run); the input is not JSON, or the action's input schema refuses it.
    """
    from bees_cli.agents.action_call import digest_of, parse_input
    from bees_cli.engine.snapshot_store import load_snapshot
    from bees_cli.usecases.action_input import check_input

    if not approve or answer is not None:
        raise UserError("--input corrects a held action's input on an approval, without "
                        "--ran or --again", hint=f"bees approve {row.id} --input @edited.json")
    if len(chosen) != 1:
        ids = ", ".join(str(r["id"]) for r in chosen)
        raise UserError(f"several requests wait on item {row.id} ({ids}): --input corrects "
                        "one", hint=f"bees approve {row.id} --action ID --input @edited.json")
    (request,) = chosen
    if request.get("action") is None:
        raise UserError(f"request {request['id']} of item {row.id} is the finish of stage "
                        f"{request['stage']}, not an action call: --input corrects a held "
                        "action's input",
                        hint=f"bees approve {row.id} --action {request['id']}, or bees deny "
                             f"{row.id} --reason TEXT")
    if request.get("interrupted_at"):
        raise UserError(f"{request['action']} may already have run: --input corrects an "
                        "action that has not", hint=f"bees approve {row.id} --ran or --again")
    data = parse_input(input_text)
    addon, _, name = str(request["action"]).partition(".")
    digest = json.loads(row.input or "{}").get("snapshot_digest")
    snapshot = load_snapshot(record, row.id, digest)
    found = snapshot.addons.get(addon)
    if found is not None and found.mcp is None and name in found.actions:
        # an MCP tool's schema is its server's: checked before it runs (usecases/actions)
        check_input(str(request["action"]), found.actions[name].input, data)
    if digest_of(data) == request.get("digest"):
        return None
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _answer_text(payload: dict[str, object]) -> str:
    """Say what a queued decision answers: ``approved``, ``approved: it ran``, ``approved:
    run it again`` or ``denied``."""
    if not payload.get("approve"):
        return "denied"
    answer = payload.get("answer")
    return {"ran": "approved: it ran", "again": "approved: run it again"}.get(
        str(answer), "approved")


def _check_answer(chosen: list[dict[str, object]], item_id: str, *, approve: bool,
                  answer: str | None) -> None:
    """Refuse an approval of an interrupted action without ``--ran``/``--again``, and an
    answer when no chosen request was interrupted."""
    interrupted = [r for r in chosen if r.get("interrupted_at")]
    if approve and answer is None and interrupted:
        first = interrupted[0]
        raise UserError(
            f"{first['action']} may already have run (interrupted at "
            f"{first['interrupted_at']}): say whether it ran",
            hint=f"bees approve {item_id} --ran (it ran: record it) or bees approve "
                 f"{item_id} --again (run it once more)")
    if answer is not None and not interrupted:
        raise UserError(f"--{answer} answers an action that may already have run; none "
                        f"waits on item {item_id}", hint=f"bees approve {item_id}")


async def deliver_queued(bees: Bees) -> int:
    """Deliver the decisions queued while ``bees run`` was down (``bees run`` calls it).

    A decision the run refuses now (decided meanwhile) is reported with ``say`` and dropped.

    Returns:
        How many were delivered.
    """
    from bees_cli.engine.models import DecideInput

    engine = await bees.engine()
    delivered = 0
    for _seq, item_id, name, payload in await bees.async_record.claim_controls():
        try:
            await engine.update(item_id, name, DecideInput.model_validate(payload))
        except BeesError as error:
            bees.say(f"queued decision for {item_id} not delivered: {_bare(error, item_id)}")
            continue
        delivered += 1
        bees.say(f"delivered the queued decision for {item_id}")
    return delivered


def _bare(error: BeesError, item_id: str) -> str:
    """Return the error's message without the ``item ID: `` prefix the gateway adds."""
    prefix = f"item {item_id}: "
    return error.message[len(prefix):] if error.message.startswith(prefix) else error.message

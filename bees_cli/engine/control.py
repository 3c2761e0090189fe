"""A person's requests to the local run: retry, accept, cancel, approve, deny (Temporal updates).

``bees retry``, ``bees item accept`` and ``bees item cancel`` need ``bees run`` up on this
computer (``worker.json`` in the data dir names its live process); a refusal from the
workflow's validator comes back at once as :class:`~bees_cli.errors.Refused` (exit 3).
``bees approve`` / ``bees deny`` go straight to the run when ``bees run`` is up, and are
queued in the local record otherwise: ``bees run`` delivers them when it starts (so a script
can run ``bees run --exit-when-idle``, approve, and run again).
"""

from __future__ import annotations

import asyncio
import getpass
import os
from pathlib import Path
from typing import IO, Any

from bees_cli.errors import EngineError, Refused, UserError
from bees_cli.machine.files import read_json, write_json_atomic
from bees_cli.record.local import LocalRecord, now_utc, open_record

UPDATE_TIMEOUT = 30.0
"""Seconds to wait for ``bees run`` to answer a person's request."""

CANCEL_WAIT = 10.0
"""Seconds ``bees item cancel`` waits for the record to say ``cancelled``."""


NOT_UP = "the engine is not running on this computer"


def start_hint(then: str) -> str:
    """Return the hint for :data:`NOT_UP`: ``start it with `bees run`, then `THEN```."""
    return f"start it with `bees run`, then `{then}`"


def worker_file(data: Path) -> Path:
    """Return ``<data>/worker.json``: ``{"pid", "address", "task_queue"}`` of ``bees run``."""
    return data / "worker.json"


def note_worker(data: Path, address: str, queue: str) -> None:
    """Record that this process runs the worker of this computer (``bees run``)."""
    write_json_atomic(worker_file(data), {"pid": os.getpid(), "address": address,
                                          "task_queue": queue})


def hold_worker_lock(data: Path) -> IO[str]:
    """Take this computer's worker lock (``<data>/worker.lock``) for the life of the process.

    Only one ``bees run`` may run per computer: a second one would reuse the first one's
    engine and lose it when the first stops. The lock is held while the returned file is
    open (the OS drops it when the process ends, even on kill -9).

    Raises:
        Refused: another ``bees run`` holds it (its pid in the message).
    """
    import fcntl

    data.mkdir(parents=True, exist_ok=True)
    handle = open(data / "worker.lock", "a+", encoding="utf-8")  # noqa: SIM115 - kept open
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        pid = handle.read().strip() or "unknown"
        handle.close()
        raise Refused(f"bees run is already running on this computer (pid {pid})",
                      hint="stop it first (Ctrl-C), or use the one that runs") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def forget_worker(data: Path) -> None:
    """Remove ``worker.json`` when this process wrote it."""
    info = read_json(worker_file(data), None)
    if isinstance(info, dict) and info.get("pid") == os.getpid():
        worker_file(data).unlink(missing_ok=True)


def running_worker(data: Path | None = None) -> str | None:
    """Return the engine address of the live ``bees run`` of this computer, or None."""
    from bees_cli.engine.server import pid_alive
    from bees_cli.machine.paths import data_dir

    info = read_json(worker_file(data or data_dir()), None)
    if not isinstance(info, dict) or not info.get("address") or not info.get("pid"):
        return None
    return str(info["address"]) if pid_alive(int(info["pid"])) else None


def who_am_i() -> str:
    """Return who acts here: the person signed in on this computer, else the OS user."""
    from bees_cli.machine.identity import load_identity

    return load_identity().person or getpass.getuser()


async def send_update(address: str, item_id: str, name: str, arg: Any,
                      result_type: Any = None, *,
                      timeout: float | None = UPDATE_TIMEOUT) -> Any:
    """Send update ``name`` to the run of ``item_id`` at ``address``; return its result.

    Raises:
        Refused: the run's validator refused (its reason), or the run is over.
        EngineError: the engine cannot be reached or did not answer in ``timeout`` s.
    """
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.exceptions import ApplicationError
    from temporalio.service import RPCError

    from bees_cli.engine.client import connect

    client = await connect(address, timeout=5)
    handle = client.get_workflow_handle(item_id)
    try:
        return await asyncio.wait_for(
            handle.execute_update(name, arg, result_type=result_type), timeout)
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        message = cause.message if isinstance(cause, ApplicationError) else str(cause)
        raise Refused(f"item {item_id}: {message}") from None
    except RPCError as error:
        raise Refused(f"item {item_id}: its run is over or unknown to the engine "
                      f"({error.message})") from None
    except TimeoutError:
        raise EngineError(f"bees run did not answer about item {item_id} in "
                          f"{timeout or 0:.0f} s", hint="see `bees status` and the engine log"
                          ) from None


def _row(record: LocalRecord, item_id: str):  # type: ignore[no-untyped-def]  # noqa: ANN202
    row = record.item(item_id)
    if row.status in ("done", "cancelled"):
        raise Refused(f"item {row.id} is {row.status}: nothing to change")
    return row


def person_request(item_id: str, what: str) -> dict[str, Any]:
    """Ask the run of ``item_id`` to retry (``what="retry"``) or accept (``"accept"``).

    Returns:
        ``{"item", "stage", "who", "at"}``.

    Raises:
        NotFound: no such item here.
        Refused: the item is not failed or stopped (retry), not stopped at the review
            limit (accept), or over.
        EngineError: ``bees run`` is not up.
    """
    from bees_cli.engine.models import ACCEPT_UPDATE, RETRY_UPDATE, PersonInput

    record = open_record()
    row = _row(record, item_id)
    if row.status == "pending":
        raise Refused(f"item {row.id} has not started yet: start it with bees run")
    address = running_worker()
    if address is None:
        command = "bees retry" if what == "retry" else "bees item accept"
        raise EngineError(NOT_UP, hint=start_hint(f"{command} {row.id}"))
    person = PersonInput(who=who_am_i(), at=now_utc())
    name = RETRY_UPDATE if what == "retry" else ACCEPT_UPDATE
    stage = asyncio.run(send_update(address, row.id, name, person, str))
    return {"item": row.id, "stage": stage, "who": person.who, "at": person.at}


def cancel_item(item_id: str, *, wait: float = CANCEL_WAIT) -> dict[str, Any]:
    """Cancel item ``item_id``: its running stage is stopped, its slots freed, its open
    approval requests closed, its status becomes ``cancelled``. An item not started yet is
    cancelled in the record at once; for a running one, waits up to ``wait`` seconds for the
    record to say ``cancelled``.

    Returns:
        ``{"item", "requested": bool, "cancelled": bool}`` (requested False: cancelled at
        once, no run to stop; cancelled False: still stopping after ``wait`` s).

    Raises:
        NotFound, Refused: no such item; it is done or cancelled already.
        EngineError: the engine is not running.
    """
    from bees_cli.engine.server import running_engine
    from bees_cli.machine.paths import data_dir

    record = open_record()
    row = _row(record, item_id)
    who = who_am_i()
    if row.status == "pending":
        record.add_event(row.id, key="cancelled", kind="cancelled", data={"who": who})
        record.set_state(row.id, status="cancelled", stage=row.stage)
        return {"item": row.id, "requested": False, "cancelled": True}
    address = running_worker()
    if address is None:
        engine = running_engine(data_dir())
        if engine is None:
            raise EngineError(NOT_UP, hint=start_hint(f"bees item cancel {row.id}"))
        address = engine.address

    async def cancel() -> None:
        from temporalio.service import RPCError

        from bees_cli.engine.client import connect

        client = await connect(address, timeout=5)
        try:
            await client.get_workflow_handle(row.id).cancel()
        except RPCError as error:
            raise Refused(f"item {row.id}: its run is over or unknown to the engine "
                          f"({error.message})") from None

    asyncio.run(cancel())
    record.add_event(row.id, key=f"cancel:{now_utc()}", kind="cancel_asked", data={"who": who})
    return {"item": row.id, "requested": True,
            "cancelled": _wait_cancelled(record, row.id, wait)}


def _wait_cancelled(record: LocalRecord, item_id: str, wait: float) -> bool:
    import time

    deadline = time.monotonic() + wait
    while True:
        if record.item(item_id).status == "cancelled":
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def waiting_approvals() -> list[dict[str, Any]]:
    """Return what waits for approval on this computer, oldest item first: each request's
    JSON (``id``, ``item_id``, ``stage``, ``action``, ``kind``, ``summary``, ``input``,
    ``asked_at``…) plus ``title`` and ``process`` of its item and ``what`` (one line)."""
    from bees_cli.engine.models import ApprovalRequest

    record = open_record()
    out = []
    for data in record.approvals(status="waiting"):
        row = record.item(data["item_id"])
        request = ApprovalRequest.model_validate(data)
        out.append({**data, "title": row.title, "process": row.process, "what": request.label})
    return out


def _refuse_decision_elsewhere(record: LocalRecord, row: Any) -> None:
    """Refuse a decision on an item another computer runs (the shared record knows which)
    or that this computer relinquished and that waits, free, for a ``bees continue``."""
    from bees_cli.machine.identity import load_identity
    from bees_cli.record.sync import SharedRecord

    mine = load_identity().machine_id
    for team in SharedRecord(record.path).team():
        if (team.item_id == row.id and team.machine_id != mine
                and team.fields.get("status") not in (None, "free")):
            raise Refused(f"{row.id} runs on {team.computer} ({team.person}): approve it there")
    if row.status == "free":
        raise Refused(f"{row.id} is free, restarts at {row.stage or '?'}: nothing waits here")


def decide(item_id: str, *, approve: bool, request_id: int | None,
           reason: str | None) -> dict[str, Any]:
    """Approve or deny what waits on item ``item_id`` (request ``request_id``, or all).

    Sent to the run now when ``bees run`` is up; queued for ``bees run`` otherwise.

    Returns:
        ``{"item", "decided": [ids] | None, "queued": bool, "who", "at"}``.

    Raises:
        UserError: a denial without a reason.
        NotFound, Ambiguous: no such item on this computer, or the prefix matches several.
        Refused: nothing of the item waits, or ``request_id`` does not wait.
    """
    from bees_cli.engine.models import DECIDE_UPDATE, DecideInput

    if not approve and not (reason or "").strip():
        raise UserError("a denial needs a reason (--reason TEXT)",
                        hint=f'bees deny {item_id} --reason "what is wrong"')
    record = open_record()
    row = record.item(item_id)
    _refuse_decision_elsewhere(record, row)
    waiting = [r["id"] for r in record.approvals(row.id)]
    if not waiting:
        raise Refused(f"nothing waits for approval on item {row.id} (it is {row.status_text})")
    if request_id is not None and request_id not in waiting:
        raise Refused(f"request {request_id} of item {row.id} does not wait for approval "
                      f"(waiting: {', '.join(map(str, waiting))})")
    decision = DecideInput(approve=approve, request_id=request_id, who=who_am_i(),
                           at=now_utc(), reason=reason)
    address = running_worker()
    base = {"item": row.id, "who": decision.who, "at": decision.at}
    if address is None:
        record.queue_control(row.id, DECIDE_UPDATE, decision.model_dump(mode="json"))
        return {**base, "decided": None, "queued": True}
    ids = asyncio.run(send_update(address, row.id, DECIDE_UPDATE, decision, list[int]))
    return {**base, "decided": ids, "queued": False}


async def deliver_queued(client: Any, record: LocalRecord, say: Any) -> int:
    """Deliver the decisions queued while ``bees run`` was down (``bees run`` calls it).

    A decision the run refuses now (decided meanwhile) is reported with ``say`` and dropped.

    Returns:
        How many were delivered.
    """
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.service import RPCError

    from bees_cli.engine.models import DecideInput

    delivered = 0
    for _seq, item_id, name, payload in record.claim_controls():
        handle = client.get_workflow_handle(item_id)
        try:
            await handle.execute_update(name, DecideInput.model_validate(payload))
        except (WorkflowUpdateFailedError, RPCError) as error:
            cause = getattr(error, "cause", error)
            say(f"queued decision for {item_id} not delivered: {getattr(cause, 'message', cause)}")
            continue
        delivered += 1
        say(f"delivered the queued decision for {item_id}")
    return delivered

"""A relinquish whose release took in Bees Cloud but whose answer this computer never saw.

``bees relinquish`` stops the run, writes the checkpoint and releases the owner row (the
run's ``bees.hand_over`` activity). When the release's answer is lost and ``bees run`` is
killed before a try is answered, Bees Cloud holds the item free (or another computer has
continued it since) while this computer's record still shows it under way here, waiting
for approval maybe. When ``bees run`` starts, :func:`finish_released` asks Bees Cloud
about each item under way here; one whose latest owner row is not this computer's and
whose last row of this computer is released is finished here as a confirmed relinquish
finishes it (DESIGN.md, Handover): the handover's facts kept, the item ``free, restarts
at STAGE``, its slot given back and its waiting approval requests closed
``relinquished``. The run's own handover, tried again, then finds the release taken
(:func:`~bees_cli.engine.handover.released_here`) and ends the run relinquished.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bees_cli.errors import BeesError
from bees_cli.record.events import ApprovalRelinquished, Relinquished
from bees_cli.record.states import Status

if TYPE_CHECKING:
    from bees_cli.cloud import wire
    from bees_cli.record.local import ItemRow, LocalRecord
    from bees_cli.usecases.bees import Bees


async def finish_released(bees: Bees) -> list[str]:
    """Finish here each relinquish Bees Cloud took but this computer did not hear of
    (``bees run`` calls it once its worker runs). One look at the team's held items
    (``list_owners``); the owner history is asked only of the items under way here that
    this computer does not hold there.

    Returns:
        The ids of the items finished (free now). A cloud that cannot be reached is said
        (``bees.say``) and nothing is changed: the next ``bees run`` looks again.
    """
    from bees_cli.cloud.client import cloud_for
    from bees_cli.engine.handover import released_here
    from bees_cli.usecases.recover import under_way

    computer, record = bees.computer, bees.async_record
    api = cloud_for(computer, timeout=3.0)  # once: the next bees run looks again
    if api is None:
        return []
    rows = [row for row in await record.items() if under_way(row)]
    finished: list[str] = []
    try:
        if rows:  # one look at the team's held items; the history only of the others
            try:
                held = {owner.item_id for owner in await api.list_owners()
                        if owner.machine_id == computer.machine_id}
            except BeesError as error:
                bees.say(f"the owners in Bees Cloud are not checked: {error.message}")
                return finished
            rows = [row for row in rows if row.id not in held]
        for row in rows:
            try:
                owner = await released_here(api, row.id, computer.machine_id)
            except BeesError as error:
                bees.say(f"{row.id}: its owner in Bees Cloud is not checked: {error.message}")
                return finished
            if owner is None or owner.release is None:
                continue
            await record.run(mark_relinquished, row, owner)
            finished.append(row.id)
            bees.say(f"{row.id}: Bees Cloud took its relinquish (the answer was lost): "
                     f"free, restarts at {_restart(owner.release)}")
    finally:
        await api.aclose()
    return finished


def _restart(release: wire.Release) -> str:
    from bees_cli.handover.relinquish import main_restart

    return main_restart(release.restart_stages) or "?"


def mark_relinquished(record: LocalRecord, row: ItemRow, owner: wire.Owner) -> None:
    """Finish item ``row``'s relinquish in the local record as the handover activity does
    once Bees Cloud answered: keep its facts, close its waiting approval requests
    ``relinquished``, give back its slot, add the ``relinquished`` event, mark it free."""
    from bees_cli.handover.store import keep_handover, kept_handover
    from bees_cli.utc import format_utc

    release = owner.release
    assert release is not None
    restart = _restart(release)
    data = record.path.parent
    kept = kept_handover(data, row.id)
    if kept is None or kept.get("checkpoint_sha256") != release.checkpoint_sha256:
        keep_handover(data, row.id, {
            "checkpoint_sha256": release.checkpoint_sha256,
            "restart_stages": dict(release.restart_stages), "run_folder": row.run_folder,
            "at": format_utc(release.released_at), "who": owner.person})
    with record.step():
        for request in record.approvals(row.id):
            request["status"] = "relinquished"
            record.put_approval(row.id, request)
            record.add_fact(row.id, ApprovalRelinquished(
                stage=request.get("stage"), request=request["id"], action=request.get("action")),
                key=f"approval:{request['id']}:relinquished")
        record.release_slot(row.id)
        record.add_fact(row.id, Relinquished(
            stage=row.stage, who=owner.person, asked_at=format_utc(release.released_at),
            restart_stages=dict(release.restart_stages),
            checkpoint_sha256=release.checkpoint_sha256, released=True),
            key=f"relinquished:{release.checkpoint_sha256}")
        record.set_state(row.id, status=Status.FREE, stage=restart,
                         reason=f"restarts at {restart}")

"""``bees item create PROCESS --on POOL`` (DESIGN.md, Runners; issue 27, point 2): an item
offered to a pool of runners from the start, never run on the computer that made it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bees_cli.errors import Refused, UserError

if TYPE_CHECKING:
    from bees_cli.cloud import wire
    from bees_cli.handover.relinquish import Relinquished
    from bees_cli.usecases.bees import Bees
    from bees_cli.usecases.models import CreatedItem


async def _create_offered(bees: Bees, workspace_path: Path | None, process: str, pool: str, *,
                         title: str | None, agents: list[str], folders: list[str],
                         made: Callable[[str], None] | None = None,
                         ) -> tuple[CreatedItem, Relinquished, wire.Offer]:
    """``bees item create PROCESS --on POOL``: an item offered to ``pool`` from the start.

    The smallest honest path through the existing rules: the item is made here
    (:func:`~bees_cli.usecases.items.create_item`, recorded ``free`` so ``bees run`` never
    starts it), claimed in Bees Cloud (owner generation 1), handed over at once with the
    same checkpoint a relinquish writes (restart at its first stage; its run folder is the
    workspace's ``run_folder``, shared with the runners), and released with an offer to
    ``pool`` naming its secrets (:func:`~bees_cli.usecases.runners.offer_to_pool`). No
    stage runs here. ``bees run`` need not be up.

    Raises:
        UserError: no Bees Cloud is configured here (a pool lives in Bees Cloud).
        Refused: the claim was not granted (the item is made and waits here, claimed by no
            one: the message says why).
        UserError, WorkspaceInvalid, NotFound: see
            :func:`~bees_cli.usecases.items.create_item`.
        CloudError: Bees Cloud refused or failed the release or the offer.
    """
    from bees_cli.engine.handover import HandoverActivities
    from bees_cli.engine.handover_models import HandoverInput
    from bees_cli.engine.models import ItemInput
    from bees_cli.handover.relinquish import Relinquished
    from bees_cli.record.fires import FireLog
    from bees_cli.record.local import now_utc
    from bees_cli.usecases.items import create_item
    from bees_cli.usecases.runners import offer_to_pool

    if bees.computer.login is None:
        raise UserError(f"cannot offer a new item to pool {pool}: no Bees Cloud is "
                        "configured here", hint="bees login URL, or create it without --on")
    created = await asyncio.to_thread(
        create_item, workspace_path, process, title=title, agents=agents, folders=folders,
        record=bees.async_record.sync, computer=bees.computer, say=bees.say, offered=True)
    if made is not None:
        made(created.id)
    row = await bees.async_record.item(created.id)
    claim = await asyncio.to_thread(FireLog(bees.computer.record_path).claim, created.id)
    if claim is None or claim.status != "owner":
        why = "no answer" if claim is None else claim.detail or str(claim.status)
        raise Refused(f"item {created.id} was made but not offered to pool {pool}: Bees "
                      f"Cloud did not grant its claim ({why})",
                      hint=f"bees item show {created.id}")
    item = ItemInput.model_validate_json(row.input or "{}")
    answer = await HandoverActivities(bees.async_record.sync, bees.computer) \
        .hand_over_unstarted(HandoverInput(
            item_id=created.id, run_folder=str(created.run_folder),
            snapshot_digest=item.snapshot_digest, stage=None,
            restart_stages={"main": row.stage or ""}, who=bees.who(), at=now_utc(),
            title=created.title))
    if not answer.ok:
        raise Refused(f"item {created.id} was made but not offered to pool {pool}: "
                      f"{answer.reason}", hint=f"bees item show {created.id}")
    assert answer.checkpoint is not None and answer.checkpoint_sha256 is not None
    done = Relinquished(item=created.id, stage=None, restart_stages=dict(answer.restart_stages),
                        checkpoint=answer.checkpoint, checkpoint_sha256=answer.checkpoint_sha256,
                        files=answer.files, total_bytes=answer.total_bytes,
                        released=answer.released)
    offer = await asyncio.to_thread(offer_to_pool, bees, done, pool)
    return created, done, offer

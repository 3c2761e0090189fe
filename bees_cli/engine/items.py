"""Make an item: its workflow input and its local record row, in one place.

``bees item create`` (:func:`bees_cli.usecases.items.create_item`), a schedule's won key
(:func:`bees_cli.engine.schedules.make_fire_item`) and ``bees continue``
(:func:`bees_cli.usecases.handover.continue_item`) all make items here; they differ only in
where the run folder comes from and what a continued run carries.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.engine.models import ItemInput
from bees_cli.engine.snapshot_store import engine_view, keep_snapshot
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import Status

if TYPE_CHECKING:
    from bees_cli.agents.snapshot import ItemSnapshot


def item_input(record: LocalRecord, snapshot: ItemSnapshot, *, item_id: str, title: str,
               run_folder: Path, **run: Any) -> ItemInput:
    """Return the ``bees.item`` workflow's input for an item of ``snapshot``, storing the
    snapshot beside ``record`` by its digest (the workflow carries the engine's view).

    Args:
        record: the local record (its folder holds the stored snapshots).
        snapshot: the item's snapshot of its workspace.
        item_id: the item's ULID.
        title: the item's title.
        run_folder: the item's run folder on this computer.
        run: what a continued run carries (``start_stage``, ``journal``, ``run``,
            ``previous``, ``attempts``, ``reviews``: fields of :class:`ItemInput`).
    """
    return ItemInput(item_id=item_id, title=title, run_folder=str(run_folder),
                     snapshot=engine_view(snapshot),
                     snapshot_digest=keep_snapshot(record, snapshot), **run)


def make_item(record: LocalRecord, snapshot: ItemSnapshot, *, item_id: str, title: str,
              run_folder: Path, workspace: str, stage: str | None = None,
              created: str | None = None, created_on: str | None = None,
              status: Status = Status.PENDING, **run: Any) -> ItemInput:
    """Make item ``item_id``: its workflow input (:func:`item_input`) and its ``pending``
    row in ``record`` at ``stage`` (None: the process's first stage). The run folder is the
    caller's to make.

    Args:
        workspace: the workspace's root folder, as text.
        created, created_on: a handed-over item's creation time and computer (it keeps
            them; its ``created`` fact comes with its history); None: created now, here.
        status: the row's status (``free``: handed over before it starts, never started).
        record, snapshot, item_id, title, run_folder, run: as :func:`item_input`.

    Returns:
        The workflow input stored in the row.
    """
    item = item_input(record, snapshot, item_id=item_id, title=title, run_folder=run_folder,
                      **run)
    record.add_item(id=item_id, process=snapshot.process_name, title=title,
                    workspace=workspace, run_folder=str(run_folder),
                    input=item.model_dump_json(),
                    stage=stage if stage is not None else snapshot.process.stages[0].name,
                    created=created, created_on=created_on, status=status)
    return item

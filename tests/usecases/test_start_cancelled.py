"""``bees run`` starts an item only while the record still says ``pending`` once its owner
claim is answered: an item a person cancelled while the claim was asked never starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bees_cli.engine.models import ItemInput
from bees_cli.engine.snapshot import EngineSnapshot, ProcessView, StageView
from bees_cli.machine.computer import Computer
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.local import ItemRow, LocalRecord
from bees_cli.record.states import Status
from bees_cli.schedules import owners
from bees_cli.usecases.run import start_pending
from tests.support.engines import TakesEveryStart

ITEM = "01JSTARTCANCELLED000000000"
INPUT = ItemInput(item_id=ITEM, title="t", run_folder="/runs/x", snapshot=EngineSnapshot(
    process_name="p", workspace_root="/ws",
    process=ProcessView(stages=[StageView(name="Draft", kind="work"),
                                StageView(name="Done", kind="done")])))


@pytest.mark.parametrize("cancelled", [False, True], ids=["kept", "cancelled"])
async def test_an_item_cancelled_while_its_claim_was_asked_never_starts(
        bees_home: Path, monkeypatch: pytest.MonkeyPatch, cancelled: bool) -> None:
    record = LocalRecord(bees_home / "record.db")
    record.add_item(id=ITEM, process="p", title="t", workspace="/ws", run_folder="/runs/x",
                    input=INPUT.model_dump_json(), stage="Draft")

    async def claimed(sync: LocalRecord, row: ItemRow, **_: Any) -> bool:
        if cancelled:  # bees item cancel, between bees run's read and the claim's answer
            sync.set_state(row.id, status=Status.CANCELLED, stage=row.stage)
        return True

    monkeypatch.setattr(owners, "ready_to_start", claimed)
    engine = TakesEveryStart()
    started = await start_pending(engine, AsyncRecord(record), Computer.load())  # type: ignore[arg-type]
    row = record.item(ITEM)
    if cancelled:
        assert (started, engine.started, row.status) == (0, [], Status.CANCELLED)
    else:
        assert (started, engine.started, row.status) == (1, [ITEM], Status.STARTING)

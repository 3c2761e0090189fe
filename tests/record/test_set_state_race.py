"""A conditional status change is one read-modify-write: another writer's status written
between its read and its update is never overwritten (CI saw ``waiting`` lost this way: the
item's workflow wrote it while ``start_pending`` set ``starting`` only if still pending)."""

from __future__ import annotations

import threading
from pathlib import Path

from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord
from bees_cli.usecases.items import create_item
from tests.engine.conftest import Space, space  # noqa: F401  (the fixture)


def test_a_status_written_between_the_read_and_the_update_is_kept(
        space: Space, tmp_path: Path) -> None:  # noqa: F811  (the fixture imported above)
    space.agent("alpha")
    space.write("processes/p.yaml", "stages:\n  - name: Work\n    kind: work\n"
                                    "  - name: Done\n    kind: done\n")
    record = LocalRecord(tmp_path / "record.db")
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    other = LocalRecord(tmp_path / "record.db")
    writer = threading.Thread(target=lambda: other.set_state(item.id, status="waiting",
                                                             reason="folder notes"))

    def between(sql: str) -> None:  # the workflow's write lands after the read, before ours
        if sql.startswith("UPDATE items SET stage") and writer.ident is None:
            writer.start()
            writer.join(timeout=0.5)  # with the fix it waits for our write lock instead

    with record._connect() as db:  # this thread's kept connection, used by set_state
        db.set_trace_callback(between)
    record.set_state(item.id, status="starting", only_if=frozenset({"pending"}))
    writer.join()
    with record._connect() as db:
        db.set_trace_callback(None)
    row = record.item(item.id)
    assert (row.status, row.reason) == ("waiting", "folder notes")

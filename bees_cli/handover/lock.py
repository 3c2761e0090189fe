"""One ``bees continue`` of an item at a time on a computer: a per-item lock in the data dir."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from bees_cli.errors import Refused, UserError

LOCKS_DIR = "continue-locks"
"""The folder of the data dir that holds the per-item lock files (``ITEM.lock``)."""


@contextmanager
def continue_lock(data: Path, item_id: str) -> Iterator[None]:
    """Hold item ``item_id``'s continue lock for the ``with`` block, or refuse at once.

    Why: two ``bees continue ITEM`` at once on one computer would both verify, claim and
    record a run (DESIGN.md, Handover: an item runs on one computer, once). The lock is an
    OS file lock (filelock's, ``flock`` on POSIX), dropped when the process ends, even on
    kill -9; the second ``continue`` never waits for it. An id that is not a whole item id
    takes no lock (no continue of it can get past :func:`~bees_cli.machine.paths.run_folder_of`).

    Args:
        data: this computer's data dir (the record's folder).
        item_id: the item's id, as given (upper-cased here).

    Raises:
        Refused: another ``bees continue`` of the item holds the lock on this computer
            (exit 3).
    """
    from bees_cli.ids import check_item_id

    item_id = item_id.strip().upper()
    try:
        whole = check_item_id(item_id, prefix=False) == item_id
    except UserError:
        whole = False
    if not whole:
        yield
        return
    folder = data / LOCKS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(folder / f"{item_id}.lock", timeout=0, thread_local=False)
    try:
        lock.acquire()
    except Timeout:
        raise Refused(f"a continue of item {item_id} is under way here",
                      hint=f"when it ends, bees item show {item_id} shows the run it "
                           "started") from None
    try:
        yield
    finally:
        lock.release()

"""``bees continue --from DIR``: copy a verified run folder into this computer's run folder.

Rules (issue 12, point 4; DESIGN.md, Handover: "a copy given with ``--from``"): DIR is
verified first; then copied into ``RUN_ROOT/ITEM`` next to this computer's other run
folders; the copy is verified again (DIR may have changed meanwhile); the run uses the copy,
so deleting DIR afterwards breaks nothing. A run folder of the item already there that holds
exactly this checkpoint is used as it is (a continue tried again); any other is moved aside
to ``ITEM.before-TIME``, never deleted. A continue refused after the copy (the claim lost
to another computer, the snapshot or eligibility refused) undoes it: :meth:`Copied.undo`
removes the copy and puts the folder moved aside back.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bees_cli.handover.verify import Progress, verify_checkpoint


@dataclass(frozen=True)
class Copied:
    """What :func:`copy_in` did: ``folder`` (``dest``) holds the copy when ``copied`` (False:
    a folder already there was used as it is); ``aside`` is where the folder that was there
    was moved (None: there was none)."""

    folder: Path
    copied: bool
    aside: Path | None = None

    def undo(self) -> None:
        """Leave the disk as it was before :func:`copy_in`: remove the copy, and put the
        folder moved aside back (a folder used as it is stays)."""
        if not self.copied:
            return
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.aside is not None and not self.folder.exists():
            self.aside.rename(self.folder)


def copy_in(source: Path, dest: Path, *, expected_sha256: str,
            progress: Progress | None = None) -> Copied:
    """Copy the verified run folder ``source`` to ``dest`` and verify the copy.

    Args:
        source: the copy given with ``--from`` (already verified by the caller).
        dest: this computer's run folder of the item (``RUN_ROOT/ITEM``).
        expected_sha256: the checkpoint's SHA-256 the copy must have.
        progress: ``progress(bytes_done, bytes_total)`` while hashing the copy.

    Returns:
        What it did (:class:`Copied`): ``dest`` holds the copy; the folder that was there
        moved aside, if any (the caller says so once the copy is used).

    Raises:
        CheckpointInvalid: the copy does not verify (``source`` changed while copied, or the
            disk lost a byte); the partial copy is removed and ``dest`` is left as it was.
        OSError: the copy failed (disk full, permissions).
    """
    if dest.exists() and dest.resolve() == source.resolve():
        return Copied(dest, copied=False)
    if dest.is_dir() and not dest.is_symlink() and verify_checkpoint(
            dest, expected_sha256=expected_sha256).ok:
        return Copied(dest, copied=False)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.copying-", dir=dest.parent))
    aside: Path | None = None
    try:
        shutil.copytree(source, staging, symlinks=True, dirs_exist_ok=True)
        verify_checkpoint(staging, expected_sha256=expected_sha256,
                          progress=progress).raise_if_invalid()
        if dest.exists() or dest.is_symlink():
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
            aside = dest.with_name(f"{dest.name}.before-{stamp}")
            dest.rename(aside)
        staging.rename(dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if aside is not None and not dest.exists():
            aside.rename(dest)
        raise
    return Copied(dest, copied=True, aside=aside)


def say_copied(item_id: str, source: Path, copied: Copied, say: Callable[[str], None]) -> None:
    """Say what ``--from`` did, once the copy is used (after the claim)."""
    if copied.aside is not None:
        say(f"{copied.folder} held another run folder of this item: moved aside to "
            f"{copied.aside}")
    say(f"{item_id}: copied {source.resolve()} to {copied.folder}; the copy verified, and "
        "the run uses it")

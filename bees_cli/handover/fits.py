"""Before a relinquish stops anything: would the run folder make a checkpoint at all?

Rules (issue 12, tester finding; DESIGN.md, Handover and the post's "What this costs"): a
relinquish that would be refused is refused before the stage stops, so the item goes on
running exactly as it was. :func:`check_fits` runs every check of
:func:`~bees_cli.handover.write.write_checkpoint` that does not need the files' contents
(kinds, names, collisions, then the limits of 1,000 files, 20 MB each, 250 MB in all, as
:meth:`~bees_cli.handover.limits.Limits.problems` judges them for write and verify too),
counting the files the handover itself adds (``snapshot.json``, ``item.json``).
"""

from __future__ import annotations

import os
from pathlib import Path

from bees_cli.errors import NotFound
from bees_cli.handover.checkpoint_model import CHECKPOINT_NAME
from bees_cli.handover.folder import (
    Scan,
    disk_name,
    find_collisions,
    nfc,
    path_problem,
    scan_folder,
)
from bees_cli.handover.limits import DEFAULT_LIMITS, Limits
from bees_cli.handover.problems import display_path


class DoesNotFit(Exception):
    """The run folder cannot be handed over; ``str(error)`` says why, naming file and limit."""


def check_fits(run_folder: Path, *, adds: dict[str, int],
               limits: Limits = DEFAULT_LIMITS) -> None:
    """Refuse a run folder that the handover's checkpoint could not list.

    Args:
        run_folder: the run folder as it is now (the stage still running).
        adds: top-level files the handover writes → their size in bytes (replacing a file
            of that name when there is one).
        limits: the handover limits.

    Raises:
        DoesNotFit: a symlink, a special or unreadable entry, a name that is not UTF-8 or
            that verification would reject, or a broken limit (the message names the file
            and the limit).
        NotFound: ``run_folder`` is there but not a folder (a missing one is empty).
    """
    if not run_folder.exists():
        scan = Scan()  # nothing written yet: the handover makes the folder
    elif not run_folder.is_dir():
        raise NotFound(f"not a folder: {run_folder}")
    else:
        scan = scan_folder(run_folder)
    top = run_folder / CHECKPOINT_NAME
    if top.is_symlink() or (top.exists() and not top.is_file()):
        raise DoesNotFit(f"{CHECKPOINT_NAME}: exists and is not a regular file")
    if scan.unreadable:
        rel, reason = scan.unreadable[0]
        raise DoesNotFit(f"{display_path(disk_name(rel))}: cannot read: {reason}")
    if scan.symlinks:
        raise DoesNotFit(f"{display_path(disk_name(scan.symlinks[0]))}: is a symlink; a "
                         "symlink cannot travel safely")
    if scan.special:
        raise DoesNotFit(f"{display_path(disk_name(scan.special[0]))}: is not a regular file")
    for rel in scan.files:
        if disk_name(rel) != rel:
            raise DoesNotFit(f"{display_path(disk_name(rel))}: file name is not valid UTF-8")
    files = sorted(set(scan.files) | set(adds))
    for rel in files:
        problem = path_problem(rel)
        if problem is not None:
            raise DoesNotFit(problem.format())
    collisions = find_collisions(files)
    if collisions:
        raise DoesNotFit(collisions[0].format())
    # in the order the checkpoint lists them (by NFC, as write_checkpoint does)
    problems = limits.problems([(rel, _size(run_folder, rel, adds))
                                for rel in sorted(files, key=nfc)])
    if problems:
        raise DoesNotFit(problems[0].format())


def _size(run_folder: Path, rel: str, adds: dict[str, int]) -> int:
    """The size in bytes ``rel`` will have in the checkpoint: what the handover writes, else
    its size on disk.

    Raises:
        DoesNotFit: it cannot be read.
    """
    if rel in adds:
        return adds[rel]
    try:
        return os.lstat(run_folder / rel).st_size
    except OSError as error:
        raise DoesNotFit(f"{display_path(rel)}: cannot read: "
                         f"{error.strerror or error}") from None

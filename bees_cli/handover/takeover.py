"""Taking over an item a retired runner held: what its run folder may hold beyond the checkpoint.

The rule, in one place (DESIGN.md, Runners: "an admin may retire a runner that is gone (its
token and machine id revoked first, so its later writes are refused), which offers its items
back, with open action intents held for a person"; the post's "Handing a run over": the next
computer checks the checkpoint and every file arrived unchanged, then starts the unfinished
stage again from the top, using the saved files).

A runner killed mid-stage leaves its unfinished stage in the run folder: its logs, the
stage's partial outputs, the journal's copy with the intent of an action it was running. A
normal continue refuses every file present but not listed and every listed file changed
(:func:`~bees_cli.handover.verify.verify_checkpoint`); that stays exactly so. Only when Bees
Cloud says the release being continued was made by retiring a runner
(:func:`retired_release`: the released owner's machine id is that of a retired runner, and it
was released at the instant the runner was retired, in the retire's one transaction), and
only for what follows, :func:`judge` lets the continue go on:

1. **files present but not listed** (regular files only) are the retired runner's unfinished
   work: not refused. After the claim they are moved, never deleted, into
   ``RUN/retired/RUNNER-YYYYMMDDTHHMMSSZ/`` (the runner's name and when it was retired),
   each keeping its path (:func:`set_aside`; what is under ``retired/`` already stays), and
   the ``continued`` fact of the item's history says where and how many. So the stage
   restarts from the top with the saved files only, and nothing is lost;
2. **the journal's copy** (``journal/actions.jsonl``, append-only) stays where it is: when the
   checkpoint lists it, it may only have grown (the listed bytes are exactly its beginning);
   when it does not, it is kept as it is. Its open intents are then held as "may already
   have run" for a person when the restarted stage asks for the same action
   (:func:`~bees_cli.usecases.action_journal.recall_from_folder`), never run again by itself;
3. everything else is refused as in any continue, naming the file: ``checkpoint.json``
   not the released one, a listed file missing or changed (its saved content is gone: a
   person looks), an extra symlink or special file, an unreadable folder, the limits.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.handover.folder import nfc, scan_folder
from bees_cli.handover.problems import Problem, ProblemCode

if TYPE_CHECKING:
    from collections.abc import Callable

    from bees_cli.cloud.client import CloudClient
    from bees_cli.cloud.wire import Owner, RunnerView
    from bees_cli.handover.verify import Verification

ASIDE_DIR = "retired"
"""The run folder's folder that keeps retired runners' unfinished work, one folder each."""

JOURNAL = "journal/actions.jsonl"
"""The run folder's copy of the action journal (:mod:`bees_cli.record.run_journal`)."""

WAIVED_EXTRAS = frozenset({ProblemCode.EXTRA_FILE, ProblemCode.EXTRA_MORE})
"""Problems of files present but not listed: set aside on a takeover, not refused (rule 1)."""

GROWN = frozenset({ProblemCode.SIZE_CHANGED, ProblemCode.CONTENT_CHANGED})
"""Problems of a listed journal's copy that may only have grown (rule 2)."""


@dataclass(frozen=True)
class Takeover:
    """The release being continued was made by retiring runner ``runner`` at ``retired_at``."""

    runner: str
    retired_at: datetime

    @property
    def aside(self) -> str:
        """The run folder's relative folder for its unfinished work, e.g.
        ``retired/runner-1-20261202T083012Z``."""
        return f"{ASIDE_DIR}/{self.runner}-{self.retired_at.strftime('%Y%m%dT%H%M%SZ')}"


def retired_release(owner: Owner, runners: Iterable[RunnerView]) -> Takeover | None:
    """Return the :class:`Takeover` when released owner row ``owner`` was released by
    retiring a runner (a runner of ``runners`` last heard from ``owner``'s machine id and
    retired at the very time of the release: Bees Cloud does both in one transaction), else
    None (a person's relinquish, a runner's own release, anything else)."""
    if owner.release is None:
        return None
    for runner in runners:
        if (runner.machine_id == owner.machine_id and runner.retired_at is not None
                and runner.retired_at == owner.release.released_at):
            return Takeover(runner.name, runner.retired_at)
    return None


def offered_back(api: CloudClient, owner: Owner) -> Takeover | None:
    """The :class:`Takeover` when released owner row ``owner`` was released by retiring a
    runner, asked of Bees Cloud through ``api`` (open), else None. Only a release by a
    runner's identity (``pool-POOL@runners.invalid``) is looked up in the team's runners; a
    Bees Cloud that cannot list them gives None (the strict checks of any continue)."""
    from bees_cli.errors import CloudError

    if not owner.person.endswith("@runners.invalid"):
        return None
    try:
        return retired_release(owner, api.runners().runners)
    except CloudError:
        return None


@dataclass(frozen=True)
class Judged:
    """What :func:`judge` decided: ``problems`` still refuse the continue; ``leftovers`` are
    the unlisted files (relative paths on disk) to set aside once the item is claimed."""

    problems: list[Problem]
    leftovers: list[str]


def _grown(folder: Path, entry: dict[str, Any]) -> bool:
    """True when the file at listed ``entry`` (``path``, ``size``, ``sha256``) begins with
    exactly the listed bytes (an append-only file that only grew)."""
    try:
        with open(folder / entry["path"], "rb", opener=_no_follow) as handle:
            head = handle.read(int(entry["size"]))
    except OSError:
        return False
    return len(head) == entry["size"] and hashlib.sha256(head).hexdigest() == entry["sha256"]


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW)


def judge(folder: Path, verification: Verification, takeover: Takeover) -> Judged:
    """Apply the rule (module docstring) to ``verification`` of run folder ``folder``.

    Returns:
        The problems that still refuse (each naming its file, as in any continue), and the
        unlisted files to set aside: every regular file not listed, but the journal's copy
        and what is under ``retired/`` already (set aside by an earlier try of this
        takeover, or by an earlier one), sorted.
    """
    document = verification.checkpoint or {}
    files = document.get("files")
    listed = {nfc(e["path"]): e for e in (files if isinstance(files, list) else [])
              if isinstance(e, dict)
              and isinstance(e.get("path"), str)}
    journal = listed.get(JOURNAL)
    problems = [
        p for p in verification.problems
        if p.code not in WAIVED_EXTRAS
        and not (p.code in GROWN and p.path == JOURNAL and journal is not None
                 and _grown(folder, journal))]
    kept = ASIDE_DIR + "/"  # set aside already (an earlier try, an earlier retire): stays
    leftovers = sorted(rel for rel in scan_folder(folder).files
                       if nfc(rel) not in listed and nfc(rel) != JOURNAL
                       and not rel.startswith(kept))
    return Judged(problems, leftovers)


def set_aside(folder: Path, leftovers: list[str], takeover: Takeover) -> Path | None:
    """Move each of ``leftovers`` (relative paths in ``folder``) into
    ``folder / takeover.aside`` under the same relative path; never delete or overwrite
    anything. Returns that folder, or None when there was nothing to move.

    Raises:
        OSError: the run folder cannot be written (nothing already moved is lost).
    """
    if not leftovers:
        return None
    aside = folder / takeover.aside
    for rel in leftovers:
        target = base = aside / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        again = 1
        while os.path.lexists(target):  # never over another file: keep both
            target, again = base.with_name(f"{base.name}.{again}"), again + 1
        os.rename(folder / rel, target)
    return aside


def keep_aside(ready: dict[str, Any], say: Callable[[str], None]) -> Path | None:
    """Once the item is claimed, move the retired runner's unfinished work aside
    (:func:`set_aside`) when ``ready`` (what
    :func:`~bees_cli.handover.continue_.prepare_continue` checked) is a takeover; say where.

    Returns:
        The folder it was moved to, or None (no takeover, or nothing to move).

    Raises:
        UserError: the run folder cannot be written (the item is claimed here; nothing was
            deleted: continuing again moves the rest).
    """
    from bees_cli.errors import UserError

    takeover, leftovers = ready.get("takeover"), ready.get("leftovers") or []
    if takeover is None:
        return None
    try:
        aside = set_aside(ready["folder"], leftovers, takeover)
    except OSError as error:
        raise UserError(f"cannot move the unfinished work of retired runner "
                        f"{takeover.runner} aside in {ready['folder']}: "
                        f"{error.strerror or error}",
                        hint=f"run bees continue {ready['item']} again: the item is claimed "
                             "here and nothing was deleted") from None
    if aside is not None:
        say(f"{ready['item']}: offered back by retiring {takeover.runner}; its unfinished "
            f"work ({len(leftovers)} files) kept in {aside}")
    return aside


def continued_words(ready: dict[str, Any], aside: Path | None) -> dict[str, Any]:
    """The ``continued`` fact's fields of a takeover (``retired_runner``, ``set_aside``,
    ``set_aside_files``); none when ``ready`` is not one."""
    takeover = ready.get("takeover")
    if takeover is None:
        return {}
    return {"retired_runner": takeover.runner,
            "set_aside": takeover.aside if aside is not None else None,
            "set_aside_files": len(ready["leftovers"]) if aside is not None else None}

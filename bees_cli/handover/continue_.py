"""``bees continue ITEM``: take over a relinquished item on this computer, after checking it all.

Rules (DESIGN.md, "Handover"; the post's "Handing a run over", step 9 of its example). In
this order, and nothing changes anywhere until the claim:

1. the expected checkpoint SHA-256 and restart stages: from the owner's release in Bees
   Cloud when a cloud is used (refused while a computer holds the item); without a cloud,
   from the digest kept here at relinquish or given with ``--digest``;
2. the run folder: ``--from DIR`` (a copy: verified, copied into ``RUN_ROOT/ITEM`` and
   verified again, :func:`~bees_cli.handover.adopt.copy_in`; the run uses the copy), else
   the folder this computer relinquished it from, else ``RUN_ROOT/ITEM`` where
   ``RUN_ROOT`` is the workspace's ``run_folder`` folder linked here (else this computer's
   runs folder);
3. the checkpoint and every file (:func:`~bees_cli.handover.checkpoint.verify_checkpoint`),
   the checkpoint naming this item and the released restart stages, and ``snapshot.json``
   matching the checkpoint's ``process_digest``. A checkpoint whose SHA-256 is not the
   released (or kept) one is refused with both digests, the file, and the way out
   (:class:`DigestDisagrees`: ``bees relinquish ITEM --repair`` on the computer that
   released it);
4. eligibility of the restart stage, exactly as for any start
   (:func:`~bees_cli.agents.eligibility.check_eligibility`), with the snapshot's
   ``workspace_root`` rebased to this computer's workspace (``-w`` or found from the
   current folder, always): scripts and relative folder paths resolve here;
5. only then the owner claim in Bees Cloud; then the item is recorded here as the next run
   (``run`` + 1) under its own title (``RUN/item.json``, else the team's row), starting at
   the restart stage from the top, with the checkpoint's journal seeded (an action already
   run in that stage is answered from it, not run again), ``previous`` naming the earlier
   stages' folders in the run folder, and attempts numbered after those whose logs or
   pieces the checkpoint lists (so its pieces get new names); started when ``bees run`` is
   up (else ``bees run`` starts it): the use case
   :func:`bees_cli.usecases.handover.continue_item` does that step.

Workflow ids: every run of an item keeps the item's id as its workflow id; the continued
run is started with Temporal's ``ALLOW_DUPLICATE`` reuse policy, which starts it only once
the relinquished run has ended (:func:`bees_cli.engine.client.start_item`). So ``bees
retry``, ``approve`` and ``bees action`` address the item by its id as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bees_cli.cloud.client import ask_owner, sync_cloud_for
from bees_cli.errors import Ambiguous, CloudRefused, NotFound, Refused, UserError
from bees_cli.handover.next_run import continued_title as continued_title
from bees_cli.handover.next_run import next_attempts as next_attempts
from bees_cli.handover.next_run import previous_outputs as previous_outputs
from bees_cli.handover.relinquish import main_restart
from bees_cli.handover.takeover import Takeover, offered_back
from bees_cli.machine.computer import Computer
from bees_cli.record.states import Status

if TYPE_CHECKING:
    from bees_cli.agents.snapshot import ItemSnapshot
    from bees_cli.cloud.client import CloudClient
    from bees_cli.cloud.wire import Owner
    from bees_cli.handover.adopt import Copied

Progress = Callable[[int, int], None]
Say = Callable[[str], None]


@dataclass(frozen=True)
class Continued:
    """What ``bees continue`` did: the item, its run folder, the stage it restarts at, the
    checkpoint's SHA-256, how many journal entries were seeded, the run number, and
    ``started`` (False: recorded ``pending`` until ``bees run`` starts it)."""

    item: str
    run_folder: str
    stage: str
    checkpoint_sha256: str
    journal: int
    run: int
    started: bool

    def to_json(self) -> dict[str, Any]:
        """Return the outcome as JSON (``bees continue --json``)."""
        return {"item": self.item, "run_folder": self.run_folder, "stage": self.stage,
                "checkpoint_sha256": self.checkpoint_sha256, "journal": self.journal,
                "run": self.run, "started": self.started}


class ClaimTaken(Refused):
    """Another computer claimed the item first, or owns it (exit 3, as any refusal): a
    runner then just moves on. Its code is Bees Cloud's word for it, ``not_owner``."""

    code = "not_owner"


def _done_elsewhere(here: Computer, item_id: str) -> str | None:
    """Return the computer an item finished on, per the shared record as last pulled here
    (status ``done``), or None when it did not (or the record has no row for it)."""
    from bees_cli.record.shared import SharedRecord

    row = next((t for t in SharedRecord(here.record_path).team() if t.item_id == item_id),
               None)
    return row.computer if row is not None and row.fields.get("status") == Status.DONE \
        else None


class DigestDisagrees(Refused):
    """The run folder's ``checkpoint.json`` is not the one released to Bees Cloud (or kept on
    this computer at relinquish): the message gives both digests and the file (exit 3)."""

    code = "checkpoint_digest_disagrees"


@dataclass(frozen=True)
class _Expected:
    sha256: str
    restart_stages: dict[str, str] | None  # None: no cloud; taken from the checkpoint
    source: str
    kind: Literal["cloud", "kept", "digest"] = "digest"
    by: str | None = None  # the computer that released it (cloud)
    takeover: Takeover | None = None  # released by retiring a runner (handover/takeover.py)


def _expected(here: Computer, item_id: str, digest: str | None) -> _Expected:
    """Step 1: what the checkpoint must be (see the module docstring)."""
    from bees_cli.handover.store import kept_handover

    api = sync_cloud_for(here, retries=2)
    if api is not None:
        with api:
            owner = api.get_owner(item_id)
            if owner is not None and owner.held and owner.machine_id == here.machine_id:
                owner = _claimed_by_an_unfinished_continue(api, owner)
            takeover = (offered_back(api, owner) if owner is not None and not owner.held
                        else None)
        if owner is None:
            raise NotFound(f"item {item_id} has no owner in Bees Cloud",
                           hint="`bees status` lists the team's items")
        if owner.held:
            if owner.machine_id == here.machine_id:
                raise Refused(f"item {item_id} is owned by this computer already: "
                              "nothing to continue")
            finished = _done_elsewhere(here, item_id)
            if finished is not None:
                raise ClaimTaken(f"item {item_id} is done (on {finished}): nothing to "
                                 "continue", hint=f"bees item show {item_id} shows its story")
            raise ClaimTaken(f"item {item_id} is owned by {owner.computer_name} "
                             f"({owner.person}): it must be relinquished there first",
                             hint=f"bees relinquish {item_id} on {owner.computer_name}")
        assert owner.release is not None
        released = owner.release.checkpoint_sha256
        if digest is not None and digest.strip().lower() != released:
            raise Refused(f"--digest {digest.strip()} does not match the checkpoint SHA-256 "
                          f"released to Bees Cloud by {owner.computer_name} ({released})")
        return _Expected(released, dict(owner.release.restart_stages),
                         f"released by {owner.computer_name}", "cloud", owner.computer_name,
                         takeover)
    if digest is not None:
        return _Expected(digest, None, "--digest")
    kept = kept_handover(here.record_path.parent, item_id)
    if kept is not None and isinstance(kept.get("checkpoint_sha256"), str):
        return _Expected(kept["checkpoint_sha256"], None, "kept on this computer", "kept")
    raise UserError(f"no checkpoint digest for item {item_id} on this computer",
                    hint="give --digest SHA256 (printed by bees relinquish on the computer "
                         "that relinquished it)")


def _claimed_by_an_unfinished_continue(api: CloudClient, owner: Owner) -> Owner:
    """The owner whose release a repeated ``bees continue`` must match when Bees Cloud says
    this machine holds the item but this computer has not continued it (checked before, by
    :func:`_refuse_unless_free`): an earlier continue's claim was granted and its answer
    lost (DESIGN.md, Architecture: "a claim … repeated by the same machine returns the
    same grant, never a refusal of its own claim"). That is the release of the owner
    generation before the held one (``epoch - 1``); the claim is asked again and granted
    again.

    Returns:
        That released owner row; ``owner`` itself (held: the refusal stands) when the held
        generation follows no release (the item was made here, never handed over).
    """
    before = [row for row in api.owner_history(owner.item_id)
              if row.epoch == owner.epoch - 1 and row.release is not None]
    return before[0] if before else owner


def _run_root(here: Computer, item_id: str, workspace_path: Path | None) -> Path:
    """The folder of this computer's run folders: the workspace's ``run_folder`` linked here,
    else this computer's runs folder."""
    from bees_cli.machine.links import run_folder_root
    from bees_cli.workspace.loader import load_workspace

    workspace = load_workspace(workspace_path)
    try:
        return run_folder_root(workspace, here.runs_dir)
    except UserError as error:
        raise Refused(f"cannot continue item {item_id} here: {error.message}",
                      hint=error.hint) from None


def _copied_in(here: Computer, item_id: str, from_dir: Path, expected: _Expected,
               workspace_path: Path | None, progress: Progress | None) -> Copied:
    """Step 2 with ``--from DIR``: verify DIR, copy it into this computer's run folder of
    the item, verify the copy; return what was copied (:mod:`bees_cli.handover.adopt`): a
    refused continue undoes it (:meth:`~bees_cli.handover.adopt.Copied.undo`)."""
    from bees_cli.handover.adopt import copy_in

    if not from_dir.is_dir():
        raise NotFound(f"not a folder: {from_dir}")
    source = from_dir.resolve()
    _verified(item_id, source, replace(expected, takeover=None), progress)  # a copy: strict
    from bees_cli.machine.paths import run_folder_of

    dest = run_folder_of(_run_root(here, item_id, workspace_path), item_id)
    try:
        return copy_in(source, dest, expected_sha256=expected.sha256, progress=progress)
    except OSError as error:
        raise UserError(f"cannot copy {source} to {dest}: {error.strerror or error}",
                        hint="free some room there, or link the workspace's run folder "
                             "elsewhere") from None


def _verified(item_id: str, folder: Path, expected: _Expected,
              progress: Progress | None) -> Any:
    """Step 3: verify ``folder``'s checkpoint and files against what is expected; return the
    :class:`~bees_cli.handover.checkpoint.Verification`; on an item offered back by a
    retire, :func:`~bees_cli.handover.takeover.judge` decides what still refuses.

    Raises:
        DigestDisagrees: the checkpoint file is not the released (or kept) one.
        CheckpointInvalid: any other problem, each naming its file.
    """
    from bees_cli.handover.checkpoint import CHECKPOINT_NAME, ProblemCode, verify_checkpoint
    from bees_cli.handover.problems import CheckpointInvalid, plural

    given = expected.kind == "digest"
    result = verify_checkpoint(folder, expected_sha256=expected.sha256 if given else None,
                               progress=progress)
    if not given and result.sha256 is not None and result.sha256 != expected.sha256:
        others = [p for p in result.problems if p.code != ProblemCode.CHECKPOINT_DIGEST]
        file = folder / CHECKPOINT_NAME
        if expected.kind == "cloud":
            message = (f"{file} has SHA-256 {result.sha256}, but Bees Cloud holds "
                       f"{expected.sha256}, released by {expected.by}: the run folder's "
                       "checkpoint and the release disagree")
            hint = (f"if this run folder holds the work to continue, run bees relinquish "
                    f"{item_id} --repair on {expected.by}: it verifies the folder and "
                    "re-sends the release with its digest; else put back the "
                    "checkpoint.json that was released")
        else:
            message = (f"{file} has SHA-256 {result.sha256}, but this computer kept "
                       f"{expected.sha256} when it relinquished the item: the run folder's "
                       "checkpoint and the kept digest disagree")
            hint = (f"if this run folder holds the work to continue, run bees relinquish "
                    f"{item_id} --repair here: it verifies the folder and keeps its digest")
        if others:
            message += (f" (the folder has {plural(len(others), 'other problem')} too: "
                        f"bees checkpoint verify {folder} lists them)")
        raise DigestDisagrees(message, hint=hint)
    if expected.takeover is not None:
        from bees_cli.handover.takeover import judge

        judged = judge(folder, result, expected.takeover)
        result = replace(result, ok=not judged.problems, problems=judged.problems,
                         leftovers=judged.leftovers)
    try:
        result.raise_if_invalid()
    except CheckpointInvalid as invalid:  # say how to recover, not only what is wrong
        invalid.hint = (
            "put each file named above back as it was handed over and move any file not "
            "in the checkpoint out of the run folder (keep it), then run bees continue "
            f"{item_id} again")
        raise
    return result


def _run_folder(here: Computer, item_id: str, workspace_path: Path | None) -> Path:
    """Step 2 without ``--from``: the run folder (see the module docstring)."""
    from bees_cli.handover.store import kept_handover

    kept = kept_handover(here.record_path.parent, item_id)
    if kept is not None and Path(str(kept.get("run_folder"))).is_dir():
        return Path(str(kept["run_folder"]))
    from bees_cli.machine.paths import run_folder_of

    folder = run_folder_of(_run_root(here, item_id, workspace_path), item_id)  # refuses a non-id
    if not folder.is_dir():
        raise Refused(f"cannot continue item {item_id} here: its run folder {folder} "
                      "is not on this computer",
                      hint="link the workspace's run folder here (bees link NAME PATH), or "
                           "give a copy with --from DIR")
    return folder


def _snapshot(folder: Path, checkpoint: dict[str, Any]) -> ItemSnapshot:
    """Step 3: the item's snapshot from ``RUN/snapshot.json``, matching the checkpoint."""
    from pydantic import ValidationError

    from bees_cli.agents.snapshot import ItemSnapshot
    from bees_cli.handover.store import SNAPSHOT_NAME, snapshot_path

    try:
        snapshot = ItemSnapshot.model_validate_json(snapshot_path(folder).read_bytes())
    except FileNotFoundError:
        raise Refused(f"{SNAPSHOT_NAME}: missing from the run folder {folder}") from None
    except (OSError, ValidationError) as error:
        first = str(error).splitlines()[0]
        raise Refused(f"{SNAPSHOT_NAME}: not a valid item snapshot ({first})") from None
    if snapshot.digest() != checkpoint.get("process_digest"):
        raise Refused(f"{SNAPSHOT_NAME}: its digest {snapshot.digest()} does not match the "
                      f"checkpoint's process digest {checkpoint.get('process_digest')}")
    return snapshot


def _local_workspace(item_id: str, workspace_path: Path | None) -> Path:
    """The workspace on this computer: ``-w`` or the one found from the current folder."""
    from bees_cli.workspace.loader import find_workspace

    try:
        return find_workspace(workspace_path)
    except UserError as error:
        raise UserError(f"cannot continue item {item_id} here: {error.message}",
                        hint="give this computer's workspace with -w DIR, or run bees "
                             "continue inside it") from None


def _refuse_unless_free(here: Computer, item_id: str) -> None:
    """Refuse an item this computer knows that is not free: continued here already (a second
    ``bees continue``), or running here and never relinquished."""
    from bees_cli.record.local import LocalRecord

    record = LocalRecord(here.record_path)
    try:
        row = record.item(item_id)
    except Ambiguous:
        raise
    except NotFound:
        return
    if row.status == "free":
        return
    runs = [e.data.get("run") for e in record.events(row.id) if e.kind == "continued"]
    if runs:
        raise Refused(f"item {row.id} was already continued here (run {runs[-1]})",
                      hint=f"bees item show {row.id} shows it")
    ended = row.status in (Status.DONE, Status.CANCELLED)
    where = "ended here" if ended else "runs here already"
    raise Refused(f"item {row.id} {where} (status: {row.status_text}): only a "
                  "relinquished item can be continued",
                  hint=f"bees item show {row.id} shows it")


def prepare_continue(item_id: str, *, from_dir: Path | None = None, digest: str | None = None,
                     workspace_path: Path | None = None, computer: Computer,
                     progress: Progress | None = None) -> dict[str, Any]:
    """Steps 1 to 4: everything ``bees continue`` checks before it claims; changes nothing
    but the ``--from`` copy (undone when refused).

    Returns:
        ``{"item", "folder", "checkpoint", "sha256", "restart", "snapshot", "takeover",
        "leftovers", "copied"}`` (``takeover``, ``leftovers``: :mod:`~.takeover`);
        ``copied`` (:class:`~bees_cli.handover.adopt.Copied`, None without ``--from``) is
        undone here when a check refuses, by the caller when the claim does.

    Raises:
        Refused: this computer knows the item and it is not free (never relinquished),
            owned elsewhere, run folder not here, checkpoint invalid
            (:class:`~bees_cli.handover.checkpoint.CheckpointInvalid`, each problem naming
            its file), snapshot mismatch, or not eligible here (the reasons).
        NotFound, UserError: no such item in Bees Cloud, no digest, bad ``--from``.
        CloudError: Bees Cloud cannot be reached.
    """
    here = computer
    item_id = item_id.strip().upper()
    _refuse_unless_free(here, item_id)
    expected = _expected(here, item_id, digest)
    copied: Copied | None = None
    if from_dir is not None:
        copied = _copied_in(here, item_id, from_dir, expected, workspace_path, progress)
        folder = copied.folder
    else:
        folder = _run_folder(here, item_id, workspace_path)
    try:
        ready = _checked(here, item_id, folder, expected, workspace_path, progress)
    except BaseException:
        if copied is not None:  # a refused continue leaves the disk as it was
            copied.undo()
        raise
    return {**ready, "copied": copied}


def _checked(here: Computer, item_id: str, folder: Path, expected: _Expected,
             workspace_path: Path | None, progress: Progress | None) -> dict[str, Any]:
    """Steps 3 and 4 on the run folder ``folder`` (see :func:`prepare_continue`)."""
    from bees_cli.agents.eligibility import check_eligibility

    result = _verified(item_id, folder, expected, progress)
    checkpoint = result.checkpoint
    assert checkpoint is not None and result.sha256 is not None
    if checkpoint["item"] != item_id:
        raise Refused(f"checkpoint.json: it is the checkpoint of item {checkpoint['item']}, "
                      f"not {item_id}")
    stages: dict[str, str] = dict(checkpoint["restart_stages"])
    if expected.restart_stages is not None and stages != expected.restart_stages:
        raise Refused(f"checkpoint.json: restart stages {stages} differ from those released "
                      f"to Bees Cloud {expected.restart_stages}")
    snapshot = _snapshot(folder, checkpoint)
    restart = main_restart(stages)
    # this computer's workspace, always: scripts and relative folder paths resolve here
    snapshot = snapshot.model_copy(
        update={"workspace_root": str(_local_workspace(item_id, workspace_path))})
    if restart not in [s.name for s in snapshot.process.stages]:
        raise Refused(f"checkpoint.json: restart stage {restart} is not a stage of process "
                      f"{snapshot.process_name}")
    check = check_eligibility(snapshot=snapshot, stage_name=restart, reviewed_by=None)
    if not check.ok:
        raise Refused(f"cannot continue item {item_id} here: " + "; ".join(check.reasons),
                      hint="the item stays free; fix this and run bees continue again")
    return {"item": item_id, "folder": folder, "checkpoint": checkpoint,
            "sha256": result.sha256, "restart": restart, "snapshot": snapshot,
            "takeover": expected.takeover, "leftovers": result.leftovers}


def claim_here(here: Computer, item_id: str) -> int | None:
    """Step 5: claim the item in Bees Cloud (no cloud: nothing to ask); return the owner
    generation granted (None without a cloud).

    Raises:
        Refused: another computer claimed it first (the message names it).
        CloudUnreachable: the cloud cannot be reached, or its answer was lost (nothing
            changed here; the hint says to continue again: the same claim is granted again).
        CloudError: the cloud answered with an error (nothing changed).
    """
    from bees_cli.errors import CloudUnreachable

    try:
        answer = ask_owner(here, item_id)
    except CloudRefused as error:
        refused = Refused(f"item {item_id} could not be claimed: {error.message}",
                          hint=error.hint)
        refused.code = error.code  # the server's (``machine_not_yours``…), for --json
        raise refused from None
    except CloudUnreachable as error:  # Bees Cloud may have granted it: ask again
        raise CloudUnreachable(
            error.message, hint=f"run bees continue {item_id} again once Bees Cloud "
            "answers: a claim it took is granted again, to this computer") from None
    if answer is None:
        return None
    if not answer.granted:
        raise ClaimTaken(f"item {item_id} is owned by {answer.owner.computer_name} "
                      f"({answer.owner.person}): it continued there first")
    return answer.owner.epoch

"""What a continued run carries over from the run it follows (``bees continue``, step 5 of
:mod:`bees_cli.handover.continue_`; also a recovered or retried handover): the earlier
stages' output folders, the attempt numbers after those the checkpoint lists, the title."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.machine.computer import Computer

if TYPE_CHECKING:
    from bees_cli.agents.snapshot import ItemSnapshot


def previous_outputs(folder: Path, snapshot: ItemSnapshot, restart: str) -> dict[str, str]:
    """The stages before ``restart`` whose output folder is in the run folder → that folder
    (what the stages get as ``previous`` without a handover)."""
    from bees_cli.agents.runner import stage_dir

    out: dict[str, str] = {}
    for stage in snapshot.process.stages:
        if stage.name == restart:
            break
        if stage.kind != "done" and stage_dir(folder, stage.name).is_dir():
            out[stage.name] = str(stage_dir(folder, stage.name))
    return out


_LOG_NAME = re.compile(r"^logs/(?P<stage>.+)-r(?P<round>[0-9]+)-a(?P<attempt>[0-9]+)\.")


def next_attempts(checkpoint: dict[str, Any]) -> dict[str, int]:
    """``"STAGE:ROUND"`` → one more than the highest attempt whose logs the checkpoint lists
    or that handed out one of its ``pieces``, so the continued run's logs never overwrite
    them and its pieces (``rR-aA-pN``, named by the attempt) never take an earlier run's
    name: a continued stage never reads a piece's end from before the handover, it waits
    for its pieces' new run (issue 23, point 3; a model agent's stage keeps no log named by
    its attempt, so without the pieces it would start at attempt 1 again).

    Args:
        checkpoint: the checkpoint's document: ``files`` (each with its ``path``) and,
            since format 3, ``pieces`` (each with its ``stage``, ``round`` and ``attempt``).
    """
    out: dict[str, int] = {}
    for entry in checkpoint.get("files", []):
        found = _LOG_NAME.match(str(entry.get("path", "")))
        if found is not None:
            key = f"{found['stage']}:{int(found['round'])}"
            out[key] = max(out.get(key, 1), int(found["attempt"]) + 1)
    for piece in checkpoint.get("pieces") or []:
        key = f"{piece['stage']}:{int(piece['round'])}"
        out[key] = max(out.get(key, 1), int(piece["attempt"]) + 1)
    return out


def continued_title(here: Computer, item_id: str, folder: Path, row: Any, given: str | None,
                    snapshot: ItemSnapshot) -> str:
    """The item's title: ``RUN/item.json`` (written at relinquish), else this computer's
    row, else the team's row, else ``given``, else the process's title."""
    from bees_cli.handover.store import read_item
    from bees_cli.record.sync import SharedRecord

    title = read_item(folder).get("title")
    if isinstance(title, str) and title.strip():
        return title
    if row is not None and row.title:
        return str(row.title)
    for team in SharedRecord(here.record_path).team():
        if team.item_id == item_id and team.fields.get("title"):
            return str(team.fields["title"])
    return given or snapshot.process.title or snapshot.process_name

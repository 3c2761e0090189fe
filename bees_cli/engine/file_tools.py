"""A model agent's file tools (``read_file``, ``write_file``) and the files it is given.

Paths follow the checkpoint's rules; a write goes only where the stage may write now
(:func:`~bees_cli.rules.write_refusal`: no side doors, issue 25, point 5).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bees_cli.agents.model_steps import READ_FILE
from bees_cli.agents.pieces import work_folder
from bees_cli.engine.model_models import ToolAsk, ToolResult, TurnContext
from bees_cli.engine.snapshot_store import load_snapshot

if TYPE_CHECKING:
    from bees_cli.record.local import LocalRecord
    from bees_cli.rules import WriteFolder

STAGE_FOLDER = "stage"
"""The name by which the file tools mean the stage's own folder."""
FILE_CHARS = 20_000
"""At most this many characters of a file are given back by ``read_file``."""


def attachments(context: TurnContext, names: list[str]) -> dict[str, str]:
    """Return the text files of the folders ``names`` (the stage's linked folders or earlier
    stages' folders), by ``FOLDER/FILE``: top-level files that are UTF-8 text, not hidden,
    in name order, at most :data:`FILE_CHARS` characters in all (an agent's ``attach``)."""
    roots = {**context.previous, **context.folders}
    found: dict[str, str] = {}
    left = FILE_CHARS
    for name in names:
        root = Path(roots[name]) if name in roots else None
        if root is None or not root.is_dir():
            continue
        for path in sorted(root.iterdir()):
            if left <= 0 or path.name.startswith(".") or not path.is_file():
                continue
            try:
                text = path.read_text(encoding="utf-8")[:left]
            except (OSError, UnicodeDecodeError):
                continue
            found[f"{name}/{path.name}"] = text
            left -= len(text)
    return found


class FileTools:
    """Runs a model agent's file tools for this computer's worker.

    Args:
        record: the local record (the item's snapshot, its approvals).
    """

    def __init__(self, record: LocalRecord) -> None:
        self.record = record

    def _approved(self, context: TurnContext) -> bool:
        """Tell whether a person approved a request of the stage's current round (the local
        record: ``bees approve`` writes it there before the held action runs)."""
        return any(request.get("stage") == context.stage
                   and request.get("round") == context.round
                   for request in self.record.approvals(context.item_id, status="approved"))

    def _write_refusal(self, context: TurnContext, name: str, target: Path) -> str | None:
        """Return why the stage's model may not write file ``target`` (asked in folder
        ``name``) now, or None (:func:`~bees_cli.rules.write_refusal`: no side doors, issue
        25, point 5). Where ``target`` lands is read from its resolved path, the innermost
        folder holding it: the stage's own, one under the stage's ``writes:``, another
        linked folder, or none (a link that leads out)."""
        from bees_cli.agents.eligibility import find_stage
        from bees_cli.rules import write_refusal

        snapshot = load_snapshot(self.record, context.item_id, context.snapshot_digest)
        stage = find_stage(snapshot, context.stage)
        own = work_folder(context.run_folder, context.stage, context.piece)
        holders = [(Path(path).resolve(), folder) for folder, path in context.folders.items()]
        holders.append((own.resolve(), STAGE_FOLDER))
        holding = [(root, folder) for root, folder in holders if target.is_relative_to(root)]
        where: WriteFolder = "outside"
        folder = name
        if holding:
            _, folder = max(holding, key=lambda held: len(held[0].parts))
            where = ("run" if folder == STAGE_FOLDER else
                     "writes" if folder in stage.writes else "reads")
        required = stage.approval == "required"
        return write_refusal(where, folder=folder, approval_required=required,
                             approved=required and where == "writes"
                             and self._approved(context))

    def run(self, context: TurnContext, ask: ToolAsk) -> ToolResult:
        """Read or write a file inside the stage's folder, a linked folder, or (reading
        only) an earlier stage's folder; paths follow the checkpoint's rules. A write is
        refused, with the reason as the tool's result, where the stage may not write now
        (:meth:`_write_refusal`)."""
        from bees_cli.handover.folder import path_problem

        name = str(ask.arguments.get("folder") or STAGE_FOLDER)
        roots = {STAGE_FOLDER: str(work_folder(context.run_folder, context.stage,
                                               context.piece)),
                 **context.folders}
        if ask.tool == READ_FILE:
            roots = {**context.previous, **roots}
        if name not in roots:
            return ToolResult(content=f"refused: no folder {name!r} (folders: "
                              f"{', '.join(roots)})", outcome="refused")
        relative = str(ask.arguments.get("path", ""))
        problem = path_problem(relative)
        if problem is not None:
            return ToolResult(content=f"refused: {relative!r}: {problem.message}",
                              outcome="refused")
        root = Path(roots[name])
        root.mkdir(parents=True, exist_ok=True)
        target = (root / relative).resolve()
        if ask.tool != READ_FILE:
            refusal = self._write_refusal(context, name, target)
            if refusal is not None:
                return ToolResult(content=f"refused: {refusal}", outcome="refused")
        if not target.is_relative_to(root.resolve()):
            return ToolResult(content=f"refused: {relative!r} goes outside folder {name}",
                              outcome="refused")
        try:
            if ask.tool == READ_FILE:
                return ToolResult(content=target.read_text(encoding="utf-8")[:FILE_CHARS])
            target.parent.mkdir(parents=True, exist_ok=True)
            content = str(ask.arguments.get("content", ""))
            target.write_text(content, encoding="utf-8")
            return ToolResult(content=f"wrote {len(content.encode())} bytes to {relative}")
        except OSError as error:
            return ToolResult(content=f"failed: {relative}: {error.strerror or error}",
                              outcome="failed")

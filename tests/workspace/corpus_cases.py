"""Build corpus workspaces: ``_base`` plus a case's ``files/`` overlay, minus its ``remove.txt``.

A case folder under ``corpus/`` holds:

- ``files/``: files copied over the base workspace (same relative paths);
- ``remove.txt`` (optional): base files to delete, one relative path a line;
- ``expected.txt``: the exact problem lines ``bees validate`` prints, in order.

The oversized-file case is made in code (a 1 MiB file does not belong in git).
"""

from __future__ import annotations

import shutil
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"
BASE = CORPUS / "_base"


def case_names() -> list[str]:
    """Every case folder name, sorted (``_base`` excluded)."""
    return sorted(p.name for p in CORPUS.iterdir() if p.is_dir() and not p.name.startswith("_"))


def build(name: str, target: Path) -> Path:
    """Write the workspace of case ``name`` into ``target`` (created); return ``target``."""
    shutil.copytree(BASE, target)
    case = CORPUS / name
    overlay = case / "files"
    if overlay.is_dir():
        for path in sorted(overlay.rglob("*")):
            if path.is_file():
                destination = target / path.relative_to(overlay)
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, destination)
    removals = case / "remove.txt"
    if removals.is_file():
        for line in removals.read_text("utf-8").splitlines():
            if line.strip():
                (target / line.strip()).unlink()
    return target


def expected(name: str) -> list[str]:
    """The exact problem lines expected for case ``name``."""
    return (CORPUS / name / "expected.txt").read_text("utf-8").splitlines()

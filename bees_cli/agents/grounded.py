"""Grounded arguments (issue 26, point 6): an action's ``enum_from`` resolved to the values
that exist, before the call, so a model can only choose something that is there."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bees_cli.workspace.grounded import FILE_NAME, GROUND_KEY, EnumFrom

FolderOf = Callable[[str], Path]
"""Folder name → its directory (:func:`folder_finder`)."""
FRONT_MATTER = "---"
"""The line opening and closing a .md file's YAML front matter."""
READ_BYTES = 1_000_000
"""A file larger than this gives no value (it is not read)."""


def folder_finder(run_folder: str | Path, linked: Mapping[str, str]) -> FolderOf:
    """Return where an ``enum_from`` folder is: a linked folder of the item (``linked``: name
    → directory here) first, else that folder of the run folder (an earlier stage's)."""
    def folder_of(name: str) -> Path:
        return Path(linked[name]) if name in linked else Path(run_folder) / name
    return folder_of


def _field(path: Path, field: str) -> Any:
    """Return ``field`` of file ``path``: a key of its YAML front matter (.md) or of its
    top-level JSON object (.json); None when it has none or cannot be read."""
    try:
        if path.stat().st_size > READ_BYTES:
            return None
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            data = json.loads(text)
        else:
            lines = text.splitlines()
            if not lines or lines[0].strip() != FRONT_MATTER:
                return None
            end = next((i for i, line in enumerate(lines[1:], 1)
                        if line.strip() == FRONT_MATTER), None)
            if end is None:
                return None
            from ruamel.yaml import YAML

            data = YAML(typ="safe", pure=True).load("\n".join(lines[1:end]))
    except Exception:  # noqa: BLE001 - a file that cannot be read or parsed gives no value
        return None
    return data.get(field) if isinstance(data, dict) else None


def grounded_values(ref: EnumFrom, folder: Path) -> list[str]:
    """Return the values the files of ``folder`` matching ``ref.glob`` give, sorted, each
    once: the file name without its extension (``field: name``) or the field's value
    (a string, or a number written as text); hidden files, files without the field and
    files that cannot be read give none; a missing folder gives none."""
    if not folder.is_dir():
        return []
    found: set[str] = set()
    for path in folder.glob(ref.glob):
        if path.name.startswith(".") or not path.is_file():
            continue
        value = path.stem if ref.field == FILE_NAME else _field(path, ref.field)
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            continue
        found.add(str(value))
    return sorted(found)


def ground_schema(schema: Any, folder_of: FolderOf, *, keep: bool = False) -> Any:
    """Return a copy of JSON Schema ``schema`` where each node's ``enum_from`` became an
    ``enum`` of the values that exist (:func:`grounded_values`); ``enum_from`` is left out
    (servers refuse unknown keywords) unless ``keep`` (the gate's check names it in its
    reason). A reference that does not parse is left out without an enum (``bees
    validate`` reports it)."""
    if isinstance(schema, list):
        return [ground_schema(value, folder_of, keep=keep) for value in schema]
    if not isinstance(schema, dict):
        return schema
    grounded = {key: ground_schema(value, folder_of, keep=keep)
                for key, value in schema.items() if key != GROUND_KEY}
    if GROUND_KEY in schema:
        try:
            ref = EnumFrom.model_validate(schema[GROUND_KEY])
        except ValueError:
            return grounded
        grounded["enum"] = grounded_values(ref, folder_of(ref.folder))
        if keep:
            grounded[GROUND_KEY] = schema[GROUND_KEY]
    return grounded

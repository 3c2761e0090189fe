"""Grounded arguments (issue 26, point 6): ``enum_from`` in an add-on action's input schema."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from bees_cli.workspace.fields import Name, Strict

GROUND_KEY = "enum_from"
"""The keyword of an input schema's node that takes its allowed values from a folder."""
FILE_NAME = "name"
"""``field: name``: each file gives its name without its extension."""
GLOB_PATTERN = r"^[^/\\]{1,100}$"
"""A file-name pattern (``*.md``): matched in the folder itself, never in sub-folders."""
FIELD_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"
"""A front-matter or top-level JSON key, e.g. ``id``."""


class EnumFrom(Strict):
    """``enum_from: {folder, glob, field}``: the values that exist, read before each call.

    ``folder`` is a folder the item reads (declared in ``folders/``, its link on this
    computer) or else a folder of the run folder (an earlier stage's, e.g. ``Triage``).
    """

    folder: Name = Field(description="A folder the item reads (folders/NAME.yaml), else a "
                         "folder of the run folder such as an earlier stage's.")
    glob: Annotated[str, StringConstraints(pattern=GLOB_PATTERN)] = Field(
        description="Which files of the folder give a value, e.g. '*.md' (no sub-folders).")
    field: Annotated[str, StringConstraints(pattern=FIELD_PATTERN)] = Field(
        description="'name' (the file name without its extension), or a key of a .md "
        "file's YAML front matter or of a .json file's top-level object, e.g. 'id'.")

    @property
    def where(self) -> str:
        """``FOLDER/GLOB``, as messages name it (``bug-reports/*.md``)."""
        return f"{self.folder}/{self.glob}"


def references(schema: Any, path: tuple[str | int, ...] = ()
               ) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Yield ``(path, raw enum_from value)`` for each node of JSON Schema ``schema`` that has
    ``enum_from``, ``path`` leading from the schema to that value (``("properties", "bug",
    "enum_from")``); the value is not checked here (:class:`EnumFrom` does)."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == GROUND_KEY:
                yield (*path, key), value
            else:
                yield from references(value, (*path, key))
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from references(value, (*path, index))

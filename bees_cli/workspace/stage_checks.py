"""A review stage's ``checks:``: deterministic tests run before its reviewer (issue 26, point 5).

Each check is a mapping with exactly one key: ``file_exists: PATH``, ``json_schema: {file:
PATH, schema: SCHEMA}`` or ``command: [argv...]``. ``PATH`` is relative to the item's run
folder; a ``json_schema``'s ``schema`` is a file relative to the workspace or an inline
schema. They are evaluated by :mod:`bees_cli.agents.review_checks`.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Discriminator, Field, Tag

from bees_cli.workspace.fields import Strict, Text


def _relative(path: str) -> str:
    """Accept a relative path that stays inside its folder (no ``..``, not absolute)."""
    pure = PurePosixPath(path.replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts or path[1:3] == ":\\":
        raise ValueError(f"'{path}' must be a path inside the folder, without '..'")
    return path


RelPath = Annotated[Text, AfterValidator(_relative)]
"""A path relative to a folder (the run folder, the workspace) that stays inside it."""


class FileExists(Strict):
    """Passes when ``file_exists`` (relative to the run folder) is a file."""

    file_exists: RelPath = Field(description="A file that must exist, relative to the run "
                                 "folder (e.g. Draft/summary.json).")


class JsonFile(Strict):
    """A JSON file (relative to the run folder) and the schema it must validate against."""

    model_config = ConfigDict(**Strict.model_config, serialize_by_alias=True)

    file: RelPath = Field(description="The JSON file, relative to the run folder.")
    schema_: RelPath | dict[str, Any] = Field(
        alias="schema", description="A JSON schema file relative to the workspace, or the "
        "schema itself.")


class DeclaredOutput(Strict):
    """A work stage's declared output: a file its agent must leave in the stage's folder,
    optionally JSON valid against a schema (issue 26, point 5)."""

    model_config = ConfigDict(**Strict.model_config, serialize_by_alias=True)

    file: RelPath = Field(description="The file, relative to the stage's folder "
                          "(e.g. summary.json).")
    schema_: RelPath | dict[str, Any] | None = Field(
        default=None, alias="schema", description="A JSON schema file relative to the "
        "workspace, or the schema itself; the file must then be JSON valid against it.")


class JsonSchema(Strict):
    """Passes when ``json_schema.file`` is JSON that validates against its schema."""

    json_schema: JsonFile = Field(description="The file and its schema.")


class CommandCheck(Strict):
    """Passes when ``command`` exits 0 within ``timeout_seconds``, run in the run folder with
    the minimal environment (no secrets) Bees gives every child."""

    command: list[Text] = Field(min_length=1, description="The program and its arguments, "
                                "run with the run folder as its working directory.")
    timeout_seconds: Annotated[int, Field(ge=1, le=3600)] = Field(
        default=60, description="Seconds before the command is stopped and the check fails.")


CHECK_TAGS: dict[str, type[Strict]] = {
    "file-exists": FileExists, "json-schema": JsonSchema, "command-check": CommandCheck}
"""Tag of each check model (pydantic puts the tag in error locations; the loader drops it)."""

_KEYS = {"file_exists": "file-exists", "json_schema": "json-schema", "command": "command-check"}


def _check_tag(value: Any) -> str | None:
    """Pick the check model from its key: exactly one of ``file_exists``, ``json_schema``,
    ``command``."""
    if isinstance(value, Strict):
        return next(tag for tag, model in CHECK_TAGS.items() if isinstance(value, model))
    if not isinstance(value, dict):
        return None
    found = [tag for key, tag in _KEYS.items() if key in value]
    return found[0] if len(found) == 1 else None


Check = Annotated[
    Annotated[FileExists, Tag("file-exists")] | Annotated[JsonSchema, Tag("json-schema")]
    | Annotated[CommandCheck, Tag("command-check")],
    Discriminator(
        _check_tag,
        custom_error_type="check_kind",
        custom_error_message="a check needs exactly one of 'file_exists', 'json_schema' or "
        "'command'",
    ),
]
"""One check of a review stage's ``checks:``."""


def check_label(check: FileExists | JsonSchema | CommandCheck) -> str:
    """Return how a check is named to people: ``file_exists Draft/summary.json``,
    ``json_schema Draft/summary.json``, ``command pytest -q``."""
    if isinstance(check, FileExists):
        return f"file_exists {check.file_exists}"
    if isinstance(check, JsonSchema):
        return f"json_schema {check.json_schema.file}"
    return "command " + " ".join(check.command)


def load_schema(schema: str | dict[str, Any], root: Path) -> tuple[dict[str, Any] | None,
                                                                   str | None]:
    """Return ``(schema, None)`` for a valid JSON schema, else ``(None, why)``.

    ``schema``: inline, or a file relative to the workspace folder ``root``. ``why`` says
    plainly what is wrong: ``schema file 'schemas/s.json' does not exist in the workspace``,
    ``schema file 'schemas/s.json' is not JSON: ...``, ``not a valid JSON schema: ...``.
    """
    import jsonschema

    if isinstance(schema, str):
        path = root / schema
        if not path.is_file():
            return None, f"schema file '{schema}' does not exist in the workspace"
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            return None, f"schema file '{schema}' is not JSON: {error}"
    else:
        loaded = schema
    if not isinstance(loaded, dict):
        return None, "not a valid JSON schema: it must be an object"
    try:
        jsonschema.validators.validator_for(loaded).check_schema(loaded)
    except jsonschema.SchemaError as error:
        return None, f"not a valid JSON schema: {error.message}"
    return loaded, None

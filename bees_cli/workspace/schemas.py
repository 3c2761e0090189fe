"""JSON Schemas of the workspace's YAML kinds, generated from the models.

Run ``python -m bees_cli.workspace.schemas [DIR]`` (or ``bees schemas write [DIR]``) to
write them; DIR defaults to ``./schemas``. Editors read them through the
``# yaml-language-server: $schema=…`` line at the top of each YAML file.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

from bees_cli.workspace.models import (
    Addon,
    Agent,
    Folder,
    Process,
    Schedule,
    Strict,
    WorkspaceConfig,
)

SCHEMA_FILES: dict[str, type[Strict]] = {
    "workspace.json": WorkspaceConfig,
    "process.json": Process,
    "agent.json": Agent,
    "schedule.json": Schedule,
    "folder.json": Folder,
    "addon.json": Addon,
}
"""File name of each schema → the model it describes."""

SCHEMA_FOR_KIND: dict[str, str] = {
    "processes": "process.json",
    "agents": "agent.json",
    "schedules": "schedule.json",
    "folders": "folder.json",
    "addons": "addon.json",
}
"""Kind folder → its schema file (``bees.yaml`` uses ``workspace.json``)."""


def generate() -> dict[str, str]:
    """Return file name → JSON text (2-space indent, trailing newline) for each kind.

    Why cached: the models do not change within a process, and building their schemas is
    most of ``bees init``'s CPU (a process that writes them twice, or a test's in-process
    runs, builds them once); each call gets its own dict.
    """
    return dict(_generated())


@functools.cache
def _generated() -> dict[str, str]:
    out: dict[str, str] = {}
    for file_name, model in SCHEMA_FILES.items():
        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            **model.model_json_schema(),
        }
        out[file_name] = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    return out


def write(folder: Path) -> list[Path]:
    """Write every schema into ``folder`` (created if missing); return the paths written.

    Raises:
        UserError: ``folder`` is an existing file (exit 2).
        DiskError: a read-only or full disk, or no permission (exit 1).
        IoFailure: any other I/O error, e.g. a parent that is a file (exit 1).
    """
    from bees_cli.errors import IoFailure, UserError, disk_error_of
    from bees_cli.files import write_atomic

    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder}: not a folder", hint="give a folder to write the *.json into")
    written = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for file_name, text in generate().items():
            path = folder / file_name
            write_atomic(path, text.encode("utf-8"))
            written.append(path)
    except OSError as error:  # an I/O error is a failure (exit 1), not bad usage
        where = error.filename or folder
        raise disk_error_of(error) or IoFailure(
            f"{where}: cannot write: {error.strerror or error}") from None
    return written


def main(argv: list[str] | None = None) -> int:
    """Write the schemas to ``argv[0]`` (default ``./schemas``); print each path; return 0."""
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else Path("schemas")
    for path in write(folder):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The checkpoint document: a strict pydantic model of ``checkpoint.json`` and how it is read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
)
from pydantic_core import ErrorDetails

from bees_cli.handover.checkpoint_pieces import CheckpointPiece
from bees_cli.handover.problems import Problem, ProblemCode
from bees_cli.record.story import Story
from bees_cli.utc import parse_utc

CHECKPOINT_NAME = "checkpoint.json"
FORMAT: Final = 3
"""The newest checkpoint format a handover writes (the document's ``format`` field): format 2
and the run's ``pieces`` (each unfinished piece with its restart stage, each finished one
with its saved result; issue 14). A run without pieces is still written as format 2, the
item's ``story`` added to format 1, so a Bees that reads only 1 and 2 can continue it."""

FORMATS: Final = (1, 2, 3)
"""The formats this Bees reads: 1 (no story: checkpoints of earlier versions), 2 (a story)
and 3 (a story and the pieces)."""

_TIME_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$"
_SHA256_PATTERN = r"^[0-9a-f]{64}$"


def _exact_int(value: Any) -> Any:
    """Refuse anything but a JSON integer (``Literal[1]`` alone accepts ``true`` and ``1.0``)."""
    if type(value) is not int:
        raise ValueError("must be a whole number")
    return value


def _real_time(value: str) -> str:
    """Refuse a time shaped right but not a real one (``2026-02-30T…``)."""
    parse_utc(value)
    return value


NonEmpty = Annotated[str, StringConstraints(min_length=1)]
UtcTime = Annotated[str, StringConstraints(pattern=_TIME_PATTERN), AfterValidator(_real_time)]
Sha256Hex = Annotated[str, StringConstraints(pattern=_SHA256_PATTERN)]


class FileEntry(BaseModel):
    """One listed file of the run folder.

    Attributes:
        path: relative POSIX path inside the run folder (checked apart, see ``folder.py``).
        size: size in bytes, 0 or more.
        sha256: SHA-256 of its bytes, 64 lowercase hex digits.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    path: str
    size: Annotated[int, Field(ge=0)]
    sha256: Sha256Hex


class CheckpointDocument(BaseModel):
    """``checkpoint.json``: what a handover carries (the post's "Handing a run over").

    Written in canonical JSON (:func:`canonical_json`) so its SHA-256 is reproducible.

    Attributes:
        format: the format version: 3 with a ``story`` and ``pieces``, 2 with a ``story``,
            1 without (:data:`FORMATS`).
        item: the item id.
        workspace: the workspace name.
        process_digest: digest of the item's process snapshot (``snapshot.json``).
        restart_stages: piece name → the stage it restarts at from the top (at least
            one): ``main`` (the run's stages), and since format 3 each unfinished piece.
        files: every regular file of the run folder, sorted by path.
        computer: the computer that relinquished the run.
        machine_id: that computer's machine id.
        time: UTC time of the handover, ISO 8601 ending in ``Z``.
        journal: the item's journal entries (objects; read as journal entries on continue).
        story: the item's story (:class:`~bees_cli.record.story.Story`), in formats 2 and
            3; the checkpoint's SHA-256 covers it like every listed file.
        pieces: the run's pieces (:class:`~bees_cli.handover.checkpoint_pieces.
            CheckpointPiece`), in format 3 only.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    format: Annotated[Literal[1, 2, 3], BeforeValidator(_exact_int)]
    item: NonEmpty
    workspace: NonEmpty
    process_digest: NonEmpty
    restart_stages: Annotated[dict[NonEmpty, NonEmpty], Field(min_length=1)]
    files: list[FileEntry]
    computer: NonEmpty
    machine_id: NonEmpty
    time: UtcTime
    journal: list[dict[str, Any]]
    story: Annotated[Story | None, Field(exclude_if=lambda story: story is None)] = None
    """Not dumped when None: a format 1 document has no ``story`` key at all."""
    pieces: Annotated[list[CheckpointPiece] | None,
                      Field(exclude_if=lambda pieces: pieces is None)] = None
    """Not dumped when None: formats 1 and 2 have no ``pieces`` key at all."""


def canonical_json(value: Any) -> bytes:
    """Return ``value`` as canonical JSON: sorted keys, ``,``/``:`` separators, UTF-8, newline.

    Why: the same checkpoint must give the same bytes, hence the same SHA-256, everywhere.

    Raises:
        ValueError: ``value`` holds NaN or infinity.
        TypeError: ``value`` holds something JSON cannot carry.
    """
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
    return (text + "\n").encode("utf-8")


# ---------------------------------------------------------------------------- reading


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def parse_json(data: bytes) -> tuple[Any, Problem | None]:
    """Parse the checkpoint's bytes as strict JSON, before any schema.

    Why not ``model_validate_json``: its parser keeps the last of two equal keys (two
    readers could then read one released digest as two documents), accepts ``NaN``, and
    rejects a lone surrogate escape that the path checks name precisely (``path_control``).

    Args:
        data: the bytes of ``checkpoint.json``.

    Returns:
        (the JSON value, None), or (None, a ``checkpoint_malformed`` problem) when the bytes
        are not UTF-8, not JSON, hold a duplicate key or ``NaN``/``Infinity``, or nest too
        deeply.
    """
    def malformed(detail: str) -> tuple[Any, Problem]:
        return None, Problem(ProblemCode.CHECKPOINT_MALFORMED, CHECKPOINT_NAME,
                             f"not valid JSON: {detail}")

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return malformed(f"not UTF-8 at byte {error.start}")
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicate_keys,
                           parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        return malformed(f"{error.msg} at line {error.lineno} column {error.colno}")
    except (ValueError, RecursionError) as error:
        return malformed(str(error) if isinstance(error, ValueError) else "nested too deeply")
    return value, None


@dataclass(frozen=True)
class CheckedDocument:
    """What :func:`check_document` found.

    Attributes:
        document: the validated document, or None when any field is wrong.
        problems: a ``checkpoint_format`` problem alone when the format is not one of
            :data:`FORMATS` (nothing else is judged then), else one ``checkpoint_schema``
            problem per wrong field, in a stable order.
        entries: the well-formed file entries (all of them when ``document`` is valid), so
            their files can still be checked on disk.
    """

    document: CheckpointDocument | None
    problems: list[Problem]
    entries: list[FileEntry]


_NON_EMPTY = ("item", "workspace", "process_digest", "computer", "machine_id")
_FIELD_ORDER = (*_NON_EMPTY, "restart_stages", "time", "journal", "story", "pieces",
                "files")
_FIELD_MESSAGES = {
    **{name: f"'{name}' must be a non-empty string" for name in _NON_EMPTY},
    "restart_stages": "'restart_stages' must map each piece to a stage name",
    "time": "'time' must be a UTC time like 2026-01-05T09:30:00Z",
    "journal": "'journal' must be a list of objects",
    "story": "'story' must be an object (format 2)",
    "pieces": "'pieces' must be a list of pieces (format 3)",
    "files": "'files' must be a list",
}
_ENTRY_MESSAGES = {
    "path": "must be a string",
    "size": "must be a whole number of bytes, 0 or more",
    "sha256": "must be 64 lowercase hex digits",
}
_ENTRY_KEYS = tuple(_ENTRY_MESSAGES)

_SortKey = tuple[int, str, int, int, int]


def _story_problem(doc: dict[str, Any]) -> list[tuple[_SortKey, str]]:
    """Return (sort key, message) for each of ``story`` and ``pieces`` that does not go with
    the format: formats 2 and 3 carry a story, format 1 (written before stories travelled)
    has none; format 3 lists the pieces, formats 1 and 2 have none."""
    version = doc.get("format") if type(doc.get("format")) is int else None
    found: list[tuple[_SortKey, str]] = []
    if version in (2, 3) and "story" not in doc:
        found.append(((0, "story", 0, 0, 0),
                      f"missing field 'story' (format {version} carries the item's story)"))
    elif version in (2, 3) and doc["story"] is None:
        found.append(((2, "", _FIELD_ORDER.index("story"), 0, 0),
                      f"'story' must be an object (format {version})"))
    if version == 1 and "story" in doc:
        found.append(((1, "story", 0, 0, 0),
                      "unknown field 'story' in format 1 (it came with format 2)"))
    if version == 3 and "pieces" not in doc:
        found.append(((0, "pieces", 0, 0, 0),
                      "missing field 'pieces' (format 3 lists the run's pieces)"))
    elif version == 3 and doc["pieces"] is None:
        found.append(((2, "", _FIELD_ORDER.index("pieces"), 0, 0), _FIELD_MESSAGES["pieces"]))
    if version in (1, 2) and "pieces" in doc:
        found.append(((1, "pieces", 0, 0, 0),
                      f"unknown field 'pieces' in format {version} (it came with format 3)"))
    return found


def _schema_message(error: ErrorDetails, number: int = 0) -> tuple[_SortKey, str]:
    """Return (sort key, message) for one validation error of :class:`CheckpointDocument`.

    The key orders missing fields, then unknown fields (each by name), then wrong fields
    in document order, file entries by index, the story's errors by ``number`` (their order
    in pydantic's list); errors with one key share one message.
    """
    loc, kind = error["loc"], error["type"]
    name = str(loc[0])
    if len(loc) == 1 and kind == "missing":
        return (0, name, 0, 0, 0), f"missing field '{name}'"
    if len(loc) == 1 and kind == "extra_forbidden":
        return (1, name, 0, 0, 0), f"unknown field {name!r}"
    order = _FIELD_ORDER.index(name)
    if name in ("story", "pieces") and len(loc) > 1:
        where = name + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[1:])
        text = error["msg"]
        return (2, "", order, number, 0), f"{where}: {text[:1].lower()}{text[1:]}"
    if name != "files" or len(loc) == 1:
        return (2, "", order, 0, 0), _FIELD_MESSAGES[name]
    index = int(loc[1])
    where = f"files[{index}]"
    if len(loc) == 2:
        return (2, "", order, index, 0), f"{where} must be an object"
    key = str(loc[2])
    if kind in ("missing", "extra_forbidden"):
        return (2, "", order, index, 0), f"{where} must have exactly 'path', 'size' and 'sha256'"
    message = f"{where}.{key} {_ENTRY_MESSAGES[key]}"
    return (2, "", order, index, 1 + _ENTRY_KEYS.index(key)), message


def check_document(doc: dict[str, Any]) -> CheckedDocument:
    """Validate a parsed checkpoint against :class:`CheckpointDocument`; name each wrong field.

    Every wrong field is named once, as the hand-written checks of earlier versions did: a
    file entry without exactly ``path``, ``size`` and ``sha256`` is named once for that,
    otherwise each wrong key of it is named.

    Args:
        doc: the JSON object read by :func:`parse_json`.

    Returns:
        A :class:`CheckedDocument`; its problems are empty when the document is valid.
    """
    paired = _story_problem(doc)
    try:
        document = CheckpointDocument.model_validate(doc)
    except ValidationError as error:
        errors = error.errors()
    else:
        if not paired:
            return CheckedDocument(document, [], list(document.files))
        problems = [Problem(ProblemCode.CHECKPOINT_SCHEMA, CHECKPOINT_NAME, message)
                    for _, message in sorted(paired)]
        return CheckedDocument(None, problems, list(document.files))
    if any(e["loc"][:1] == ("format",) for e in errors):
        version = json.dumps(doc.get("format"))
        return CheckedDocument(None, [Problem(
            ProblemCode.CHECKPOINT_FORMAT, CHECKPOINT_NAME,
            f"unknown checkpoint format {version} (this Bees reads formats "
            f"{', '.join(str(f) for f in FORMATS[:-1])} and {FORMATS[-1]})",
        )], [])
    entry_errors = [e for e in errors if e["loc"][0] == "files" and len(e["loc"]) > 1]
    misshapen = {e["loc"][1] for e in entry_errors
                 if len(e["loc"]) == 3 and e["type"] in ("missing", "extra_forbidden")}
    messages: dict[_SortKey, str] = dict(paired)
    for number, each in enumerate(errors):
        loc = each["loc"]
        if len(loc) == 3 and loc[0] == "files" and loc[1] in misshapen:
            each = {**each, "type": "missing"}  # named once, as a wrong shape
        key, message = _schema_message(each, number)
        messages.setdefault(key, message)
    problems = [Problem(ProblemCode.CHECKPOINT_SCHEMA, CHECKPOINT_NAME, messages[key])
                for key in sorted(messages)]
    bad = {e["loc"][1] for e in entry_errors}
    files = doc.get("files")
    entries = [FileEntry.model_validate(entry) for index, entry in enumerate(files)
               if index not in bad] if isinstance(files, list) else []
    return CheckedDocument(None, problems, entries)

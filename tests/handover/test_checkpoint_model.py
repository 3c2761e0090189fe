"""The checkpoint document: strict JSON, the pydantic model, and the field each problem names."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bees_cli.handover.checkpoint import (
    CheckpointDocument,
    FileEntry,
    canonical_json,
    verify_checkpoint,
)
from tests.handover.helpers import CAFE, FILES, found, make_run, rewrite, sha, write


def listing_format(value: object) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["format"] = value

    return change


def test_unknown_format(run: Path) -> None:
    values: list[tuple[object, str]] = [(4, "4"), ("1", '"1"'), (True, "true"), (None, "null"),
                                        (1.0, "1.0"), (2.0, "2.0")]
    for value, shown in values:
        rewrite(run, listing_format(value))
        verification = verify_checkpoint(run)
        assert found(verification) == [
            ("checkpoint_format", "checkpoint.json",
             f"unknown checkpoint format {shown} (this Bees reads formats 1, 2 and 3)"),
        ]
        assert verification.files == 0


def test_malformed_checkpoints(run: Path) -> None:
    path = run / "checkpoint.json"
    cases = [
        (b"{not json", "Expecting property name enclosed in double quotes at line 1 column 2"),
        (b'{"format": 1}\n{}', "Extra data at line 2 column 1"),
        (b'{"format": 1, "format": 1}', "duplicate key 'format'"),
        (b'{"format": NaN}', "NaN is not allowed"),
        (b'{"format": 1, "item": "\xff"}', "not UTF-8 at byte 23"),
        (b"[" * 100_000, "nested too deeply"),
    ]
    for data, detail in cases:
        path.write_bytes(data)
        verification = verify_checkpoint(run)
        assert found(verification) == [
            ("checkpoint_malformed", "checkpoint.json", f"not valid JSON: {detail}"),
        ]
        assert (verification.checkpoint, verification.sha256) == (None, sha(data))
    path.write_bytes(b"[1]")
    assert found(verify_checkpoint(run)) == [
        ("checkpoint_schema", "checkpoint.json", "must be a JSON object"),
    ]


def test_schema_problems_name_the_field(run: Path) -> None:
    def damage(doc: dict[str, Any]) -> None:
        del doc["machine_id"]
        doc["extra"] = 1
        doc["item"] = ""
        doc["restart_stages"] = {}
        doc["time"] = "2026-01-05 09:30"
        doc["journal"] = [1]
        doc["files"][0]["size"] = -1
        doc["files"][1]["sha256"] = "XYZ"
        doc["files"][2] = {"path": 3, "size": 5, "sha256": "0" * 64}
        doc["files"].append({"path": "x"})
        doc["files"].append("x")

    rewrite(run, damage)
    assert found(verify_checkpoint(run)) == [
        ("checkpoint_schema", "checkpoint.json", message) for message in [
            "missing field 'machine_id'",
            "unknown field 'extra'",
            "'item' must be a non-empty string",
            "'restart_stages' must map each piece to a stage name",
            "'time' must be a UTC time like 2026-01-05T09:30:00Z",
            "'journal' must be a list of objects",
            "files[0].size must be a whole number of bytes, 0 or more",
            "files[1].sha256 must be 64 lowercase hex digits",
            "files[2].path must be a string",
            "files[3] must have exactly 'path', 'size' and 'sha256'",
            "files[4] must be an object",
        ]
    ] + [
        ("extra_file", CAFE, "extra file not in the checkpoint"),
    ]


def test_a_checkpoint_without_format_is_of_unknown_format(run: Path) -> None:
    rewrite(run, lambda doc: doc.pop("format"))
    assert found(verify_checkpoint(run)) == [
        ("checkpoint_format", "checkpoint.json",
         "unknown checkpoint format null (this Bees reads formats 1, 2 and 3)"),
    ]


def test_each_wrong_key_of_an_entry_is_named(run: Path) -> None:
    def damage(doc: dict[str, Any]) -> None:
        doc["files"][0].update(size=True, sha256="0" * 63)
        doc["files"][1].update(path=None, size=1.5)
        doc["files"][2].update(extra=1, size=-1)

    rewrite(run, damage)
    assert found(verify_checkpoint(run)) == [
        ("checkpoint_schema", "checkpoint.json", message) for message in [
            "files[0].size must be a whole number of bytes, 0 or more",
            "files[0].sha256 must be 64 lowercase hex digits",
            "files[1].path must be a string",
            "files[1].size must be a whole number of bytes, 0 or more",
            "files[2] must have exactly 'path', 'size' and 'sha256'",
        ]
    ] + [
        ("extra_file", "logs/stage.log", "extra file not in the checkpoint"),
    ]


def test_a_valid_checkpoint_is_a_document(run: Path) -> None:
    data = (run / "checkpoint.json").read_bytes()
    verification = verify_checkpoint(run)
    assert verification.ok is True
    assert verification.document == CheckpointDocument.model_validate_json(data)
    assert verification.document.files[2] == FileEntry(path=CAFE, size=5, sha256=sha(FILES[CAFE]))
    assert verification.document.restart_stages == {"main": "Draft"}
    assert canonical_json(verification.document.model_dump()) == data
    assert verification.checkpoint == json.loads(data)


def test_an_invalid_checkpoint_has_no_document(run: Path) -> None:
    rewrite(run, lambda doc: doc.update(item=""))
    verification = verify_checkpoint(run)
    assert (verification.ok, verification.document) == (False, None)
    assert verification.checkpoint is not None and verification.checkpoint["item"] == ""


def test_the_model_is_strict() -> None:
    entry = {"path": "a.md", "size": 1, "sha256": "0" * 64}
    assert FileEntry.model_validate(entry) == FileEntry(path="a.md", size=1, sha256="0" * 64)
    for wrong in ({"size": "1"}, {"size": True}, {"sha256": "0" * 65}, {"path": b"a.md"},
                  {"mode": 420}):
        with pytest.raises(ValidationError):
            FileEntry.model_validate({**entry, **wrong})


def test_write_refuses_fields_verify_would_reject_before_reading_files(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run")
    wrong: list[tuple[dict[str, Any], str]] = [
        ({"item_id": ""}, "item"), ({"machine_id": ""}, "machine_id"),
        ({"restart_stages": {}}, "restart_stages"),
        ({"restart_stages": {"main": ""}}, "restart_stages"), ({"journal": [1]}, "journal"),
    ]
    for overrides, field in wrong:
        with pytest.raises(ValidationError) as caught:  # a ValueError: a bug in the caller
            write(folder, **overrides)
        assert [e["loc"][0] for e in caught.value.errors()] == [field]
    assert not (folder / "checkpoint.json").exists()

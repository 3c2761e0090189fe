"""Atomic writes: the file being written is named when its folder refuses the temporary file;
only a durable write is fsynced."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from bees_cli.files import write_atomic


def test_a_refused_temporary_file_is_reported_as_the_file_being_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    def refuse(**kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, "Read-only file system",
                      str(tmp_path / ".links.json.vjwcbs8o.tmp"))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(OSError) as raised:
        write_atomic(tmp_path / "links.json", b"{}")
    assert (raised.value.errno, raised.value.filename) == (errno.EROFS,
                                                           str(tmp_path / "links.json"))
    assert not (tmp_path / "links.json").exists()


@pytest.mark.parametrize(("durable", "synced"), [(True, 1), (False, 0)])
def test_only_a_durable_write_is_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          durable: bool, synced: int) -> None:
    calls: list[int] = []
    monkeypatch.setattr("bees_cli.files.os.fsync", calls.append)
    path = tmp_path / "context.json"
    write_atomic(path, b"{}\n", durable=durable)
    assert path.read_bytes() == b"{}\n"
    assert len(calls) == synced

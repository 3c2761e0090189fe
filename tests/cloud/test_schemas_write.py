"""``bees schemas write`` into a target that is not a folder (a new user's report).

It lives here, not in tests/workspace, only because of who was editing which files.
"""

from __future__ import annotations

from pathlib import Path

from ..conftest import BeesRunner


def test_schemas_write_into_a_file_is_a_user_error(bees: BeesRunner, tmp_path: Path) -> None:
    target = tmp_path / "hostname"
    target.write_text("vm\n")
    done = bees("schemas", "write", str(target))
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"error: {target}: not a folder\nhint: give a folder to write the *.json into\n",
    )
    below = bees("schemas", "write", str(target / "sub"))
    assert (below.returncode, below.stderr) == (  # an I/O error, as the table says (issue 23)
        1,
        f"error: {target / 'sub'}: cannot write: Not a directory\n",
    )
    assert target.read_text() == "vm\n"

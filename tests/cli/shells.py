"""Helpers for the completion and man page tests: find a shell tool, run ``bees`` to complete."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bees_cli.cli.completion import COMPLETE_VAR


def need(tool: str, package: str) -> str:
    """Return the path of ``tool``; where it is missing, skip the test on a developer's
    machine and fail it under CI (``CI`` set, as ``.ci/run`` does, which installs
    Debian's ``package``): a skip there would hide a gap."""
    found = shutil.which(tool)
    if found is None:
        why = f"{tool} is not installed (Debian package {package})"
        if os.environ.get("CI"):
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return found


def with_bees_on_path(env: dict[str, str]) -> dict[str, str]:
    """Return ``env`` with the folder of this Python (where ``bees`` is installed) first on
    ``PATH``, as the shells' scripts call ``bees`` by name."""
    scripts = Path(sys.executable).parent
    assert (scripts / "bees").is_file(), f"no bees script beside {sys.executable}"
    return dict(env, PATH=f"{scripts}{os.pathsep}{env.get('PATH', '')}")


def complete_bash(words: str, *, home: Path, cwd: Path,
                  env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Ask ``bees`` for the completions of the last word of ``words`` as the bash script
    does (``COMP_WORDS``, ``COMP_CWORD``); ``words`` ending in a space completes an empty
    word. Returns the finished process (stdout: one value a line)."""
    count = len(words.split()) + (1 if words.endswith(" ") else 0)
    full = dict(os.environ, BEES_HOME=str(home), COMP_WORDS=words, COMP_CWORD=str(count - 1))
    full[COMPLETE_VAR] = "complete_bash"
    full.pop("BEES_WORKSPACE", None)
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "bees_cli"], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=60, check=False)

"""Every shell command in ``docs/`` runs: each page's ``sh`` blocks, in order, in one shell.

A page's blocks run as one ``bash -euo pipefail`` script in a scratch folder holding a copy
of ``examples/``, with this test's ``bees`` first on ``PATH`` and ``HOME`` pointing at the
scratch folder, in a process group of its own that is killed at the end (so a server a page
starts in the background never outlives the test). Shell commands are only allowed in
``sh`` blocks (``console``, ``bash`` and ``shell`` blocks are refused), so nothing a reader
may paste escapes the test. A page that uses ``$CLOUD_DB`` gets a fresh PostgreSQL database
there (the Bees Cloud tests' cluster).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
_FENCE = re.compile(r"^```(\S*)\s*$")


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Return ``(language, body)`` for each fenced block of a Markdown text, in order."""
    blocks: list[tuple[str, str]] = []
    language: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        match = _FENCE.match(line)
        if language is None and match:
            language, lines = match.group(1), []
        elif language is not None and line.strip() == "```":
            blocks.append((language, "\n".join(lines)))
            language = None
        elif language is not None:
            lines.append(line)
    return blocks


def _port_taken(port: int) -> bool:
    """True when something already listens on ``127.0.0.1:port`` (a page's server would not
    start, and its waits would talk to that other program)."""
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _stop_group(group: int) -> None:
    """Stop what a page left running in its process group: SIGTERM, then SIGKILL after 10 s."""
    for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


def _copy_tracked(source: Path, target: Path) -> None:
    """Copy the files git tracks under ``source`` into ``target`` (no mail a run delivered)."""
    listed = subprocess.run(["git", "ls-files", "-z", "."], cwd=source, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / name, target / name)


def _pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def _pages_with_commands() -> list[Path]:
    return [page for page in _pages()
            if any(lang == "sh" for lang, _ in fenced_blocks(page.read_text("utf-8")))]


def test_fenced_blocks_reads_languages_and_bodies() -> None:
    text = "intro\n```sh\nbees status\nbees run\n```\n\n```yaml\nname: x\n```\n"
    assert fenced_blocks(text) == [("sh", "bees status\nbees run"), ("yaml", "name: x")]


@pytest.mark.parametrize("page", _pages(), ids=lambda page: page.name)
def test_shell_commands_are_only_in_sh_blocks(page: Path) -> None:
    for language, body in fenced_blocks(page.read_text("utf-8")):
        assert language not in {"bash", "shell", "console", "zsh"}, (
            f"{page.name}: a ```{language} block is not run by the docs test; use ```sh "
            f"(run) or ```text (output)\n{body[:200]}"
        )


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages_with_commands(), ids=lambda page: page.name)
def test_every_command_of_the_page_runs(page: Path, tmp_path: Path,
                                        request: pytest.FixtureRequest) -> None:
    script = "\n".join(body for lang, body in fenced_blocks(page.read_text("utf-8"))
                       if lang == "sh")
    work = tmp_path / "work"
    _copy_tracked(REPO / "examples", work / "examples")
    env = {key: value for key, value in os.environ.items() if not key.startswith("BEES_")}
    env.update(HOME=str(tmp_path), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
               NO_COLOR="1")
    busy = [port for port in sorted(set(re.findall(r"--port (\d+)", script)))
            if _port_taken(int(port))]
    assert not busy, f"{page.name} serves on port(s) {busy}, taken by another program here"
    if "$CLOUD_DB" in script:  # the page's PostgreSQL: a fresh database of the test cluster
        env["CLOUD_DB"] = str(request.getfixturevalue("postgres_url"))
    process = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], cwd=work, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=600)
    finally:
        _stop_group(process.pid)
    assert process.returncode == 0, f"{page.name}: a command failed\n{output[-4000:]}"
    if page.name == "ci.md":  # the page says where the wait ends as the job prints it
        said = re.search(r"ends with exit (\d+) and the\s+item at `([^`]+)`",
                         page.read_text("utf-8"))
        assert said is not None
        assert f"ended the wait with exit {said.group(1)} at {said.group(2)}\n" in output, \
            output[-4000:]

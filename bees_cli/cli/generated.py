"""The shipped completions and man pages, made from the command tree; write or check them.

Run ``python -m bees_cli.cli.generated`` in the repository to write ``completions/`` and
``man/``; ``--check`` only says which files are stale, missing or left over (exit 1), as
tests/cli/test_generated_files.py does in memory (STYLE.md, habit 6).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from bees_cli.cli.completion import PROG, Shell, completion_script

if TYPE_CHECKING:
    from typer import _click as click  # typer vendors click: its command tree is made of these

COMPLETION_FILES: dict[Shell, str] = {
    Shell.BASH: "bees.bash",
    Shell.ZSH: "_bees",
    Shell.FISH: "bees.fish",
}
"""Each shell's script in ``completions/``, named as the shell's own folders want it."""

FOLDERS = ("completions", "man")
"""The folders at the repository's top level that hold only generated files."""


def root_command() -> click.Command:
    """Return the ``bees`` command tree, every command module registered
    (:func:`~bees_cli.cli.main.whole_command`)."""
    from bees_cli.cli import main

    command: click.Command = main.whole_command()
    return command


def expected_files(command: click.Command | None = None) -> dict[str, str]:
    """Return every generated file: path relative to the repository -> text.

    Args:
        command: the command tree (default: :func:`root_command`).
    """
    from bees_cli import __version__
    from bees_cli.cli.manpages import man_pages

    command = command or root_command()
    files = {f"completions/{name}": completion_script(shell)
             for shell, name in COMPLETION_FILES.items()}
    for name, text in man_pages(command, prog=PROG, version=__version__).items():
        files[f"man/{name}"] = text
    return files


def differences(repo: Path, files: dict[str, str]) -> list[str]:
    """Return one line per generated file of ``repo`` that differs from ``files``:
    ``stale PATH``, ``missing PATH`` or ``extra PATH`` (a file no command makes any more)."""
    found: list[str] = []
    for relative, text in files.items():
        path = repo / relative
        if not path.is_file():
            found.append(f"missing {relative}")
        elif path.read_text(encoding="utf-8") != text:
            found.append(f"stale {relative}")
    for folder in FOLDERS:
        if (repo / folder).is_dir():
            for path in sorted((repo / folder).iterdir()):
                relative = f"{folder}/{path.name}"
                if relative not in files:
                    found.append(f"extra {relative}")
    return found


def write(repo: Path, files: dict[str, str]) -> list[Path]:
    """Write ``files`` under ``repo`` and remove other files of the generated folders.

    Returns:
        The paths written or removed.
    """
    changed: list[Path] = []
    for relative, text in files.items():
        path = repo / relative
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        changed.append(path)
    for folder in FOLDERS:
        for path in sorted((repo / folder).iterdir()) if (repo / folder).is_dir() else []:
            if f"{folder}/{path.name}" not in files and path.is_file():
                path.unlink()
                changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) the generated files of the repository at DIR.

    Returns:
        0, or 1 when ``--check`` found a difference.
    """
    parser = argparse.ArgumentParser(prog="python -m bees_cli.cli.generated",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("repo", nargs="?", type=Path, default=Path("."),
                        help="the repository's top folder (default: here)")
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if stale")
    args = parser.parse_args(argv)
    files = expected_files()
    if args.check:
        found = differences(args.repo, files)
        for line in found:
            print(line)
        return 1 if found else 0
    for path in write(args.repo, files):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

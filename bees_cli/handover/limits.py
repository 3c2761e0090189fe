"""The limits of a handover, one named constant per rule of the post's "What this costs",
and the one place they are judged (:meth:`Limits.problems`): relinquish (before the stage
stops, and when the run writes the checkpoint), ``bees checkpoint verify`` and ``bees
continue`` all ask it, so they refuse the same run folder with the same sentence."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bees_cli.handover.problems import Problem, ProblemCode, format_bytes, plural
from bees_cli.rules import MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES

__all__ = ["DEFAULT_LIMITS", "MAX_CHECKPOINT_BYTES", "MAX_FILES", "MAX_FILE_BYTES",
           "MAX_TOTAL_BYTES", "Limits"]

MAX_CHECKPOINT_BYTES = 16 * 1024 * 1024
"""Largest ``checkpoint.json`` read or written, in bytes (16 MiB).

Not a rule of the post: Bees' own bound, so that a hostile checkpoint cannot make a reader
load an unbounded document into memory.
"""


@dataclass(frozen=True)
class Limits:
    """The limits of a handover, in files and bytes (1 MB = 10^6 bytes).

    Defaults are the post's rules (:data:`MAX_FILES`, :data:`MAX_FILE_BYTES`,
    :data:`MAX_TOTAL_BYTES`); tests and benchmarks may pass others.

    Attributes:
        max_files: most regular files a run folder may hold (checkpoint.json excluded).
        max_file_bytes: largest size of one file, in bytes.
        max_total_bytes: largest size of all files together, in bytes.
    """

    max_files: int = MAX_FILES
    max_file_bytes: int = MAX_FILE_BYTES
    max_total_bytes: int = MAX_TOTAL_BYTES

    def problems(self, files: Iterable[tuple[str, int]], *,
                 count: int | None = None) -> list[Problem]:  # pragma: no mutate
        """Judge files against the post's rule "a handover takes at most 1,000 files, 20 MB
        each and 250 MB in all" (Rules: handover; DESIGN.md, Handover): the one place
        relinquish, verify and continue decide it.

        Args:
            files: ``(path, size in bytes)`` of each file in the order they are listed
                (sorted paths). Read lazily and no further than the file that brings the
                total past its limit, so a caller that hashes as it goes reads no more.
            count: how many files there are, when ``files`` is not all of them or is read
                lazily (verify gives the number the checkpoint lists); default: every one
                of ``files``.

        Returns:
            The problems, in this order: ``too_many_files`` (no path) when there are more
            than ``max_files``; then, file by file, ``file_too_large`` for each file over
            ``max_file_bytes`` and ``total_too_large`` for the file that brings the sum
            past ``max_total_bytes`` (the last: files after it are not judged). Empty when
            the files fit. At a limit exactly is within it.
        """
        if count is None:
            files = list(files)
            count = len(files)
        found: list[Problem] = []
        if count > self.max_files:
            found.append(Problem(ProblemCode.TOO_MANY_FILES, None,
                                 f"{plural(count, 'file')} to hand over; "
                                 f"the limit is {plural(self.max_files, 'file')}"))
        total = 0
        for path, size in files:
            if size > self.max_file_bytes:
                found.append(Problem(ProblemCode.FILE_TOO_LARGE, path,
                                     "is larger than the limit of "
                                     f"{format_bytes(self.max_file_bytes)} per file"))
            total += size
            if total > self.max_total_bytes:
                found.append(Problem(ProblemCode.TOTAL_TOO_LARGE, path,
                                     "brings the files past the limit of "
                                     f"{format_bytes(self.max_total_bytes)} in all"))
                break
        return found

    def describe(self) -> str:
        """Return the limits in words for a hint: ``at most 1,000 files, 20 MB each, 250 MB
        in all`` (whole megabytes as MB, else bytes)."""
        return (f"at most {plural(self.max_files, 'file')}, {_amount(self.max_file_bytes)} "
                f"each, {_amount(self.max_total_bytes)} in all")


def _amount(n: int) -> str:
    """``20 MB`` for a whole number of megabytes (10^6 bytes), else ``30 bytes``."""
    megabytes, rest = divmod(n, 1_000_000)
    if n and not rest:
        return f"{megabytes:,} MB"
    return f"{n:,} bytes"


DEFAULT_LIMITS = Limits()

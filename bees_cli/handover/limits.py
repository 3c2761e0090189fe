"""The limits of a handover, one named constant per rule of the post's "What this costs"."""

from __future__ import annotations

from dataclasses import dataclass

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


DEFAULT_LIMITS = Limits()

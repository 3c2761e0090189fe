"""The checkpoint: ``checkpoint.json`` atop a run folder, written on relinquish, checked later.

A checkpoint lists every regular file of the run folder with its size in bytes and its
SHA-256, and says which stage each piece of the run restarts at. It is canonical JSON
(sorted keys, fixed separators, UTF-8), so its own SHA-256 is reproducible and can be
released to Bees Cloud (or kept on this computer) and checked by the computer that
continues the run.

Limits of a handover (the post's "What this costs"): at most 1,000 files, 20 MB each,
250 MB in all. MB means 10^6 bytes here, as the post says MB, not MiB: 20,000,000 bytes
per file, 250,000,000 bytes in all. Sizes are always counted from the bytes actually
read from disk, never from the sizes a checkpoint claims.

This module is the public door; the work lives in sibling modules:

- :mod:`~bees_cli.handover.checkpoint_model`: the document, a strict pydantic model, and
  how its bytes are parsed and validated;
- :mod:`~bees_cli.handover.limits`: the limits, one named constant per rule;
- :mod:`~bees_cli.handover.problems`: the problem codes, :class:`Problem` and
  :class:`CheckpointInvalid`;
- :mod:`~bees_cli.handover.folder`: the path, collision and on-disk checks;
- :mod:`~bees_cli.handover.write` and :mod:`~bees_cli.handover.verify`.
"""

from __future__ import annotations

from bees_cli.handover.checkpoint_model import (
    CHECKPOINT_NAME,
    FORMAT,
    CheckpointDocument,
    FileEntry,
    canonical_json,
)
from bees_cli.handover.folder import CHUNK_BYTES
from bees_cli.handover.limits import (
    DEFAULT_LIMITS,
    MAX_CHECKPOINT_BYTES,
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_TOTAL_BYTES,
    Limits,
)
from bees_cli.handover.problems import CheckpointInvalid, Problem, ProblemCode, display_path
from bees_cli.handover.verify import (
    MAX_EXTRA_REPORTED,
    Progress,
    Verification,
    verify_checkpoint,
)
from bees_cli.handover.write import CheckpointInfo, write_checkpoint

__all__ = [
    "CHECKPOINT_NAME",
    "CHUNK_BYTES",
    "DEFAULT_LIMITS",
    "FORMAT",
    "MAX_CHECKPOINT_BYTES",
    "MAX_EXTRA_REPORTED",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_TOTAL_BYTES",
    "CheckpointDocument",
    "CheckpointInfo",
    "CheckpointInvalid",
    "FileEntry",
    "Limits",
    "Problem",
    "ProblemCode",
    "Progress",
    "Verification",
    "canonical_json",
    "display_path",
    "verify_checkpoint",
    "write_checkpoint",
]

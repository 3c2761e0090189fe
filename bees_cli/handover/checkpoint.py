"""The checkpoint's public door: `checkpoint.json`, written on relinquish, verified on continue."""

# A checkpoint lists every regular file of the run folder with its size and SHA-256 and
# the stage each piece restarts at, in canonical JSON so its own SHA-256 is reproducible.
# The work lives in sibling modules:
#   checkpoint_model  the document (a strict pydantic model), parsing and validation
#   limits            the post's limits, one named constant per rule, and Limits.problems
#                     (the one place relinquish, verify and continue judge them)
#   problems          the problem codes, Problem and CheckpointInvalid
#   folder            the path, collision and on-disk checks
#   write, verify     write_checkpoint and verify_checkpoint
#   checkpoint_read   reading checkpoint.json for verify_checkpoint

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

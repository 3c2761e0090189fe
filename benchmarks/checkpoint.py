"""Benchmark: verify a checkpoint of 250 MB in 1,000 files, beside ``sha256sum`` on the same files.

Run: ``.venv/bin/python benchmarks/checkpoint.py`` (needs ``sha256sum`` on PATH and ~250 MB
free in the temporary folder). Both sides read from a warm page cache; each is timed three
times and the median is printed, with the ratio verify / sha256sum.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bees_cli.handover.checkpoint import verify_checkpoint, write_checkpoint

FILES = 1_000
FILE_BYTES = 250_000  # 1,000 x 250,000 bytes = 250 MB, the handover limit in all
FOLDERS = 10
RUNS = 3


def make_folder(root: Path) -> list[str]:
    """Fill ``root`` with FILES files of random bytes; return their relative paths."""
    paths = []
    for n in range(FILES):
        rel = f"stage{n % FOLDERS:02}/file{n:04}.bin"
        path = root / rel
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(os.urandom(FILE_BYTES))
        paths.append(rel)
    return paths


def median_seconds(action: Callable[[], object]) -> float:
    """Run ``action`` once to warm up, then RUNS times; return the median wall time in seconds."""
    action()
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    """Build the folder, write the checkpoint, time both verifications, print the figures."""
    if shutil.which("sha256sum") is None:
        print("sha256sum not found on PATH", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="bees-bench-") as tmp:
        root = Path(tmp) / "run"
        root.mkdir()
        paths = make_folder(root)
        start = time.perf_counter()
        info = write_checkpoint(
            root, item_id="bench", workspace="bench", process_digest="bench",
            restart_stages={"main": "Draft"}, computer="bench", machine_id="0" * 32,
            journal=[], now=datetime.now(UTC),
        )
        written = time.perf_counter() - start

        def verify() -> None:
            result = verify_checkpoint(root, expected_sha256=info.sha256)
            if not result.ok:
                raise SystemExit(f"benchmark folder did not verify: {result.problems[:3]}")

        def sha256sum() -> None:
            subprocess.run(["sha256sum", "--", *paths], cwd=root, check=True,
                           stdout=subprocess.DEVNULL)

        ours = median_seconds(verify)
        theirs = median_seconds(sha256sum)
    megabytes = info.total_bytes / 1e6
    print(f"folder:           {info.files:,} files, {info.total_bytes:,} bytes")
    print(f"write_checkpoint: {written:.3f} s (once, cold-ish cache)")
    print(f"verify_checkpoint {ours:.3f} s median of {RUNS}  ({megabytes / ours:,.0f} MB/s)")
    print(f"sha256sum         {theirs:.3f} s median of {RUNS}  ({megabytes / theirs:,.0f} MB/s)")
    print(f"ratio verify / sha256sum: {ours / theirs:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

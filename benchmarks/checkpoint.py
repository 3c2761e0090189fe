"""Benchmark: ``bees checkpoint verify`` of 250 MB in 1,000 files, beside ``openssl dgst -sha256``.

Run: ``.venv/bin/python benchmarks/checkpoint.py [--rounds N] [--bees PATH]`` (``--quick``:
one round over 100 files, a smoke run; needs ``openssl`` on PATH and ~250 MB free in the
temporary folder). The floor is OpenSSL hashing the same files in one process (it uses the
CPU's SHA instructions; coreutils ``sha256sum`` may not, so it is not the floor). Sides,
each a fresh process but the second:

* ``bees checkpoint verify DIR --digest SHA256``: the command as a person runs it (start-up
  included; ``--bees``, default the ``bees`` beside this interpreter; run from the
  temporary folder, so an installed Bees is imported as installed); ``--base-bees PATH`` adds
  another one (main's, say) to the same rounds, for before/after figures from one run;
* ``verify_checkpoint`` in this process (the hashing alone, for reference);
* ``openssl dgst -sha256`` over the same files (the floor).

All read from a warm page cache, one warm-up each, then N rounds (default 7) interleaved so
machine noise hits them alike. Prints each side's median and spread (min–max), the load,
and the throughput ratios openssl time / side time in the same round (≥ 1.0 means as fast
as openssl; issue 29's goal for the command: ≥ 0.8), and the same in CPU time (user +
system of the child, or of this process for the in-process call), which says where a
command's time goes on a loaded machine: a process waits for a core about in proportion to
the CPU it needs. It measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
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


def make_folder(root: Path, files: int = FILES) -> list[str]:
    """Fill ``root`` with ``files`` files of random bytes; return their relative paths."""
    paths = []
    for n in range(files):
        rel = f"stage{n % FOLDERS:02}/file{n:04}.bin"
        path = root / rel
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(os.urandom(FILE_BYTES))
        paths.append(rel)
    return paths


CPU: dict[str, list[float]] = {}
"""Side -> CPU seconds (user + system) of each timed run: of the child process for a command,
of this process (every thread) for the in-process call; filled by :func:`interleaved`."""


def _cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def seconds(action: Callable[[], object]) -> tuple[float, float]:
    """Wall time and CPU time (this process and the children it waited for) of one run of
    ``action``, in seconds."""
    cpu, start = _cpu_now(), time.perf_counter()
    action()
    return time.perf_counter() - start, _cpu_now() - cpu


def interleaved(sides: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Run each side once to warm up, then ``rounds`` times in turn; return the seconds (the
    CPU seconds go to :data:`CPU`)."""
    for action in sides.values():
        action()
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for name in sides:
        CPU[name] = []
    for _ in range(rounds):
        for name, action in sides.items():
            wall, cpu = seconds(action)
            samples[name].append(wall)
            CPU[name].append(cpu)
    return samples


def spread(times: list[float]) -> str:
    """``median ms (min–max)`` of ``times`` in seconds."""
    return (f"{statistics.median(times) * 1e3:7.1f} ms "
            f"({min(times) * 1e3:.1f}–{max(times) * 1e3:.1f})")


def main() -> int:
    """Build the folder, write the checkpoint, time both sides interleaved, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds (default 7, >= 5)")
    parser.add_argument("--bees", default=str(Path(sys.executable).parent / "bees"),
                        help="the bees command to time (default: beside this interpreter)")
    parser.add_argument("--base-bees",
                        help="another bees command (e.g. main's, non-editable) timed in the "
                        "same rounds, as 'base: bees checkpoint verify'")
    parser.add_argument("--files", type=int, default=FILES, help=f"files (default {FILES})")
    parser.add_argument("--quick", action="store_true",
                        help="one round over 100 files (a smoke run)")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.files = 1, 100
    openssl = shutil.which("openssl")
    if openssl is None:
        print("openssl not found on PATH", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="bees-bench-") as tmp:
        root = Path(tmp) / "run"
        root.mkdir()
        paths = make_folder(root, args.files)
        info = write_checkpoint(
            root, item_id="bench", workspace="bench", process_digest="bench",
            restart_stages={"main": "Draft"}, computer="bench", machine_id="0" * 32,
            journal=[], now=datetime.now(UTC),
        )

        def verify() -> None:
            result = verify_checkpoint(root, expected_sha256=info.sha256)
            if not result.ok:
                raise SystemExit(f"benchmark folder did not verify: {result.problems[:3]}")

        def command(bees: str = args.bees) -> None:
            subprocess.run([bees, "checkpoint", "verify", str(root), "--digest",
                            info.sha256], cwd=tmp, check=True, stdout=subprocess.DEVNULL)

        def base_command() -> None:
            command(args.base_bees)

        def dgst() -> None:
            subprocess.run([openssl, "dgst", "-sha256", *paths], cwd=root, check=True,
                           stdout=subprocess.DEVNULL)

        load = os.getloadavg()[0]
        sides: dict[str, Callable[[], object]] = {"bees checkpoint verify": command}
        if args.base_bees:
            sides["base: bees checkpoint verify"] = base_command
        samples = interleaved({**sides, "verify_checkpoint": verify,
                               "openssl dgst -sha256": dgst}, args.rounds)
    megabytes = info.total_bytes / 1e6
    print(f"folder: {info.files:,} files, {info.total_bytes:,} bytes; "
          f"{args.rounds} interleaved rounds, median (min–max); load {load:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after on {os.cpu_count()} cores")
    for name, times in samples.items():
        print(f"{name:<29} {spread(times)}  {megabytes / statistics.median(times):,.0f} MB/s; "
              f"CPU {spread(CPU[name])}")
    goals = [("bees checkpoint verify", 0.8), ("verify_checkpoint", 1.0)]
    if args.base_bees:
        goals.insert(1, ("base: bees checkpoint verify", 0.8))
    for name, goal in goals:
        ratios = [theirs / ours for ours, theirs in
                  zip(samples[name], samples["openssl dgst -sha256"], strict=True)]
        cpu = [theirs / ours for ours, theirs in
               zip(CPU[name], CPU["openssl dgst -sha256"], strict=True)]
        print(f"throughput {name} / openssl: {statistics.median(ratios):.2f} "
              f"({min(ratios):.2f}–{max(ratios):.2f}) per round; goal >= {goal}; "
              f"in CPU {statistics.median(cpu):.2f} ({min(cpu):.2f}–{max(cpu):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

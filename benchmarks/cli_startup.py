"""Start-up time of `bees --help`, `bees validate examples/weekly-report` and `python -c pass`.

Run: ``.venv/bin/python benchmarks/cli_startup.py [--runs N]``. Each command runs N times
(default 15, after one warm-up) in a fresh interpreter, interleaved so that machine noise
hits all three alike; the script prints the median wall time of each and its ratio to
bare Python. It measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "weekly-report"

COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "bees --help": [sys.executable, "-m", "bees_cli", "--help"],
    "bees validate examples/weekly-report": [
        sys.executable,
        "-m",
        "bees_cli",
        "validate",
        str(EXAMPLE),
    ],
}


def _time_once(argv: list[str], env: dict[str, str]) -> float:
    """Seconds of wall time for one run of ``argv``; raises if it fails."""
    start = time.perf_counter()
    subprocess.run(
        argv, env=env, cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - start


def measure(runs: int) -> dict[str, float]:
    """Return command label → median seconds over ``runs`` interleaved runs (one warm-up each)."""
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "BEES_HOME": home}
        samples: dict[str, list[float]] = {label: [] for label in COMMANDS}
        for argv in COMMANDS.values():
            _time_once(argv, env)
        for _ in range(runs):
            for label, argv in COMMANDS.items():
                samples[label].append(_time_once(argv, env))
    return {label: statistics.median(times) for label, times in samples.items()}


def main() -> int:
    """Parse ``--runs``, measure, print a table of medians and ratios; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per command (default 15)")
    args = parser.parse_args()
    medians = measure(args.runs)
    bare = medians["python -c pass"]
    width = max(len(label) for label in medians)
    print(f"{'command':<{width}}  median ms  × python -c pass   ({args.runs} runs each)")
    for label, seconds in medians.items():
        print(f"{label:<{width}}  {seconds * 1000:9.1f}  {seconds / bare:6.1f}")
    help_s = medians["bees --help"]
    validate_s = medians["bees validate examples/weekly-report"]
    print(f"validate / --help: {validate_s / help_s:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Run ``bees demo --yes --json`` N times, each on a fresh computer (its own ``BEES_HOME``),
and judge each result as a person would (issue 28, point 2).

    .venv/bin/python scripts/demo_trials.py [N] [--out FILE.jsonl]

One at a time (the machine is shared): a line per run (outcome, seconds, the recipient, the
report's counts, review rounds, and the judge's problems), then how many passed. The judge
is ``tests/support/demo_result.py``: one mail, to an address of the team, whose body is the
report; each person of the team named once with the count and lines of their notes; the
highlight a note of its person.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.demo_result import judge_demo  # noqa: E402


def draft_rounds(run_folder: Path) -> int:
    """How many rounds the Draft stage took (1: the review's check passed it at once)."""
    path = run_folder / "logs" / "Draft.transcript.jsonl"
    if not path.is_file():
        return 0
    rounds = {json.loads(line).get("round") for line in path.read_text().splitlines() if line}
    return len(rounds)


def one_run(n: int) -> dict[str, object]:
    """Run the demo once on a fresh BEES_HOME; return what it made, judged."""
    home = Path(tempfile.mkdtemp(prefix=f"demo-run-{n}-")) / "bees-home"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "bees_cli", "demo", "--yes", "--json"],
                          capture_output=True, text=True, timeout=3600,
                          env={**os.environ, "BEES_HOME": str(home)})
    seconds = round(time.monotonic() - started, 1)
    row: dict[str, object] = {"run": n, "exit": done.returncode, "seconds": seconds,
                              "home": str(home)}
    try:
        summary = json.loads(done.stdout)
    except ValueError:
        row.update(outcome="no summary", ok=False, problems=[done.stderr[-300:]])
        return row
    judged = judge_demo(Path(summary["workspace"]), Path(summary["run_folder"]))
    problems = list(judged.problems)
    if summary["outcome"] != "done":
        problems.insert(0, f"the demo ended {summary['outcome']} at {summary['stage']}")
    row.update(outcome=summary["outcome"], to=judged.to, counts=judged.counts,
               highlight=judged.highlight,
               rounds=draft_rounds(Path(summary["run_folder"])), ok=not problems,
               problems=problems)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, nargs="?", default=20)
    parser.add_argument("--out", type=Path, default=None, help="append each row (JSON lines)")
    args = parser.parse_args()
    passed = 0
    for n in range(1, args.n + 1):
        row = one_run(n)
        passed += bool(row["ok"])
        print(json.dumps(row), flush=True)
        if args.out is not None:
            with args.out.open("a", encoding="utf-8") as out:
                out.write(json.dumps(row) + "\n")
    print(f"{passed} of {args.n} runs passed the judge", flush=True)


if __name__ == "__main__":
    main()

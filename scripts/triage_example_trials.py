"""Run examples/bug-triage-model N times on the embedded model and classify each outcome.

Each trial starts from a fresh ``BEES_HOME`` and a fresh copy of the example and runs
README's flow through the CLI: ``bees item create bug-triage``, ``bees run
--exit-when-idle``, then ``bees approve`` and ``bees run --exit-when-idle`` again while the
item waits for an approval (the held ``tracker.file``). Each outcome is one of (issue 26,
done-when):

- ``acted``: the item is done and the tracker filed exactly one bug, one of the folder's;
- ``sent back``: a review check sent the pick back at least once; the line says what
  happened after (``then acted``, or ``then stopped: …`` at the review limit);
- ``other``: anything else: failed, over the time limit, nothing or several filed, or a
  filed id not in the folder (grounded arguments refuse it: this must never happen).

It also says which bug was filed and whether it is the worst (severity ``critical``). One
``bees model serve`` (started here on a free port unless ``--base-url`` is given) serves
every trial: the model keeps no state between requests, and one server avoids loading the
model 20 times on a busy machine. Prints one line per trial and the counts.

Usage::

    .venv/bin/python scripts/triage_example_trials.py [--runs 20] [--base-url URL]
        [--example DIR] [--limit SECONDS]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_example_trials import DEFAULT_URL, bees, serve, show, status  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "bug-triage-model"
WORST = "critical"
MAX_APPROVALS = 3
"""More approvals than this in one trial is an ``other`` outcome (one is expected)."""


class Trial(BaseModel):
    """One trial: its outcome, the check send-backs, what was filed, how long it took."""

    number: int
    outcome: str = "other"
    sent_back: int = 0
    after: str = ""
    filed: list[str] = []
    worst: bool = False
    problem: str | None = None
    seconds: float = 0.0


def reports(folder: Path) -> dict[str, str]:
    """Return each report's id → severity, from the front matter of ``folder/*.md``."""
    found: dict[str, str] = {}
    for path in folder.glob("*.md"):
        head = path.read_text(encoding="utf-8").split("---")[1]
        fields = dict(re.findall(r"^(\w+):\s*(.+)$", head, re.MULTILINE))
        found[fields["id"]] = fields["severity"]
    return found


def trial(number: int, base_url: str, example: Path, scratch: Path, limit: float) -> Trial:
    """Run the example once in ``scratch`` (a fresh home, a fresh copy of ``example``)."""
    result = Trial(number=number)
    started = time.monotonic()
    home, space = scratch / "home", scratch / "example"
    shutil.copytree(example, space, ignore=shutil.ignore_patterns("filed.json"))
    for path in (space / "agents").glob("*.yaml"):
        path.write_text(path.read_text().replace(DEFAULT_URL, base_url))
    known = reports(space / "bug-reports")
    try:
        item = bees(home, "item", "create", "bug-triage", "-w", str(space),
                    "--title", "Worst bug").strip()
        bees(home, "run", "-w", str(space), "--exit-when-idle")
        approvals = 0
        while status(show(home, item))[0] == "waiting for approval":
            approvals += 1
            if approvals > MAX_APPROVALS or time.monotonic() - started > limit:
                break
            bees(home, "approve", item)
            bees(home, "run", "-w", str(space), "--exit-when-idle")
        shown = show(home, item)
        state, stage, reason = status(shown)
        history = shown.get("history") or []
        assert isinstance(history, list)
        result.sent_back = sum(1 for e in history if e["kind"] == "review_check"
                               and not e["ok"])
        filed_path = space / "tracker" / "filed.json"
        filed = json.loads(filed_path.read_text()) if filed_path.exists() else []
        result.filed = [issue["bug"] for issue in filed]
        result.worst = len(filed) == 1 and known.get(filed[0]["bug"]) == WORST
        seconds = time.monotonic() - started
        if any(bug not in known for bug in result.filed):
            result.problem = f"filed an id not in the folder: {result.filed}"
        elif seconds > limit:
            result.problem = f"over the time limit ({seconds:.0f} s > {limit:.0f} s)"
        elif state == "done" and len(filed) == 1:
            result.outcome = "acted"
        elif state == "done":
            result.problem = f"done with {len(filed)} filed"
        else:
            result.problem = f"{state} at {stage}: {reason}"
        if result.sent_back and result.outcome != "other" or (
                result.sent_back and state == "waiting for a person" and stage == "Review"):
            result.after = "then acted" if result.outcome == "acted" else \
                f"then stopped: {state} at {stage}: {reason}"
            result.outcome = "sent back"
            result.problem = None
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        result.problem = str(error)
    finally:
        result.seconds = round(time.monotonic() - started, 1)
    return result


def line(done: Trial) -> str:
    """One trial as a line: outcome, send-backs, what was filed, seconds."""
    what = done.outcome + (f" {done.sent_back}x, {done.after}" if done.sent_back
                           and done.outcome == "sent back" else "")
    if done.problem:
        what += f": {done.problem}"
    filed = ",".join(done.filed) or "nothing"
    worst = " (the worst)" if done.worst else ""
    return f"run {done.number:2}: {what}; filed {filed}{worst} ({done.seconds} s)"


def main() -> int:
    """Run the trials; print one line each and the counts. Returns 0 when none is other."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--base-url", help="a model server already running (default: start "
                        "the embedded model on a free port)")
    parser.add_argument("--example", type=Path, default=EXAMPLE,
                        help="the example's folder (a frozen copy, to change it meanwhile)")
    parser.add_argument("--limit", type=float, default=1200.0,
                        help="seconds one trial may take in all before it counts as hung")
    parser.add_argument("--threads", type=int, default=1, help="the embedded model's threads")
    args = parser.parse_args()
    server, base_url = (None, args.base_url) if args.base_url else serve(args.threads)
    trials: list[Trial] = []
    try:
        for number in range(1, args.runs + 1):
            with tempfile.TemporaryDirectory(prefix="bees-triage-trial-") as scratch:
                done = trial(number, base_url, args.example, Path(scratch), args.limit)
            trials.append(done)
            print(line(done), flush=True)
    finally:
        if server is not None:
            server.send_signal(signal.SIGTERM)
            server.wait(30)
    counts = Counter(t.outcome for t in trials)
    then_acted = sum(1 for t in trials if t.outcome == "sent back" and t.after == "then acted")
    print(f"{len(trials)} runs: acted on a report in the folder {counts['acted']}, "
          f"sent back by a check {counts['sent back']} (then acted {then_acted}, then "
          f"stopped {counts['sent back'] - then_acted}), other {counts['other']}; filed the "
          f"worst report {sum(t.worst for t in trials)}; filed an id not in the folder "
          f"{sum(1 for t in trials if t.problem and 'not in the folder' in t.problem)}")
    return 0 if counts["other"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

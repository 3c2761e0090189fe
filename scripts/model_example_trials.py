"""Run examples/weekly-report-model N times on the embedded model, each from a fresh BEES_HOME.

Each trial is README's flow through the CLI: ``bees item create``, ``bees run
--exit-when-idle`` (it should stop at Send's approval), ``bees approve``, ``bees run
--exit-when-idle`` again; then it checks the item is done, the outbox holds exactly one
mail and each model stage's transcript has replies with token counts. It prints one line
per trial (the failure reason when it fails) and ``K of N reached approval, M of N
finished`` (issue 13, done-when: "20 of 20 runs from fresh homes"). Exit code 0 only when
all N finished.

Usage::

    .venv/bin/python scripts/model_example_trials.py [--runs 20] [--base-url URL] [--threads 1]

Without ``--base-url`` it starts ``bees model serve --port 0`` itself and stops it at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "weekly-report-model"
DEFAULT_URL = "http://127.0.0.1:11434/v1"
MODEL_STAGES = ("Draft", "Review", "Send")
STEP_TIMEOUT = 900.0
"""Seconds one ``bees`` command may take (a slow model on a busy laptop)."""


class Trial(BaseModel):
    """One trial's outcome: how far it got, why it stopped, its tokens in and out."""

    number: int
    approval: bool = False
    finished: bool = False
    problem: str | None = None
    seconds: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0


def bees(home: Path, *args: str) -> str:
    """Run ``bees ARGS`` with ``BEES_HOME=home``; return its stdout.

    Raises:
        RuntimeError: it exited non-zero (its stderr's last line says why).
    """
    done = subprocess.run([sys.executable, "-m", "bees_cli", *args], capture_output=True,
                          text=True, timeout=STEP_TIMEOUT,
                          env={**os.environ, "BEES_HOME": str(home)})
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"bees {args[0]} {args[1] if len(args) > 1 else ''} exited "
                           f"{done.returncode}: {last}")
    return done.stdout


def show(home: Path, item: str) -> dict[str, object]:
    """Return ``bees item show ITEM --json``."""
    shown: dict[str, object] = json.loads(bees(home, "item", "show", item, "--json"))
    return shown


def status(shown: dict[str, object]) -> tuple[str, str | None, str | None]:
    """Return the item's status, stage and reason from ``bees item show --json``."""
    item = shown["item"]
    assert isinstance(item, dict)
    return item["status"], item.get("stage"), item.get("reason")


def trial(number: int, base_url: str, scratch: Path) -> Trial:
    """Run the example once in ``scratch`` (a fresh home and a fresh copy of the example)."""
    result = Trial(number=number)
    started = time.monotonic()
    home, space = scratch / "home", scratch / "example"
    shutil.copytree(EXAMPLE, space)
    for path in (space / "agents").glob("*.yaml"):
        path.write_text(path.read_text().replace(DEFAULT_URL, base_url))
    try:
        item = bees(home, "item", "create", "weekly-report", "-w", str(space),
                    "--title", "Weekly report").strip()
        bees(home, "run", "-w", str(space), "--exit-when-idle")
        state, stage, reason = status(show(home, item))
        if (state, stage) != ("waiting for approval", "Send"):
            result.problem = f"stopped {state} at {stage}: {reason}"
            return result
        result.approval = True
        bees(home, "approve", item)
        bees(home, "run", "-w", str(space), "--exit-when-idle")
        shown = show(home, item)
        state, stage, reason = status(shown)
        mails = list((space / "outbox").glob("*.eml"))
        usage = shown.get("models") or []
        assert isinstance(usage, list)
        result.tokens_in = sum(u["tokens_in"] for u in usage)
        result.tokens_out = sum(u["tokens_out"] for u in usage)
        stages = sorted(u["stage"] for u in usage if u["tokens_in"] > 0 and u["tokens_out"] > 0)
        if state != "done":
            result.problem = f"after approve: {state} at {stage}: {reason}"
        elif len(mails) != 1:
            result.problem = f"{len(mails)} mails in the outbox, not 1"
        elif stages != sorted(MODEL_STAGES):
            result.problem = f"token counts only for {stages}"
        else:
            result.finished = True
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        result.problem = str(error)
    finally:
        result.seconds = round(time.monotonic() - started, 1)
    return result


def serve(threads: int) -> tuple[subprocess.Popen[str], str]:
    """Start ``bees model serve --port 0``; return it and its base URL."""
    home = Path(tempfile.mkdtemp(prefix="bees-model-serve-"))
    process = subprocess.Popen(
        [sys.executable, "-m", "bees_cli", "model", "serve", "--port", "0",
         "--threads", str(threads)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True, env={**os.environ, "BEES_HOME": str(home)})
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 120)
    if not ready:
        process.kill()
        raise SystemExit("bees model serve printed no URL in 120 s")
    return process, process.stdout.readline().strip()


def main() -> int:
    """Run the trials; print one line each and the totals. Returns 0 when all finished."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--base-url", help="a model server already running (default: start "
                        "the embedded model on a free port)")
    parser.add_argument("--threads", type=int, default=1, help="the embedded model's threads")
    args = parser.parse_args()
    server, base_url = (None, args.base_url) if args.base_url else serve(args.threads)
    trials: list[Trial] = []
    try:
        for number in range(1, args.runs + 1):
            with tempfile.TemporaryDirectory(prefix="bees-model-trial-") as scratch:
                done = trial(number, base_url, Path(scratch))
            trials.append(done)
            outcome = "finished" if done.finished else (
                "reached approval, then " if done.approval else "") + f"FAILED: {done.problem}"
            print(f"run {number:2}: {outcome} ({done.seconds} s, tokens in {done.tokens_in}, "
                  f"out {done.tokens_out})", flush=True)
    finally:
        if server is not None:
            server.send_signal(signal.SIGTERM)
            server.wait(30)
    runs = len(trials)
    print(f"{sum(t.approval for t in trials)} of {runs} reached approval, "
          f"{sum(t.finished for t in trials)} of {runs} finished")
    return 0 if all(t.finished for t in trials) else 1


if __name__ == "__main__":
    sys.exit(main())

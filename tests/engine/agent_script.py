"""Test agent: logs each run to $AGENT_LOG, then works or reviews as its environment says.

Environment: AGENT_LOG (file to append ``STAGE AGENT ROUND ATTEMPT COMMENTS-JSON`` to),
MARK (text written to out.txt), SLEEP_FIRST (seconds to sleep on attempt 1), FAIL (exit 3),
VERDICTS (comma-separated verdicts for review rounds 1, 2, …; approve after the list),
READY_FROM_ROUND (a work stage writes ready.txt from this round on), SUMMARY (a work stage
writes it to summary.json).
"""

import json
import os
import sys
import time
from pathlib import Path

context = json.loads(Path(os.environ["BEES_CONTEXT"]).read_text(encoding="utf-8"))
stage = context["stage"]
line = " ".join([stage["name"], context["agent"], str(context["round"]), str(context["attempt"]),
                 json.dumps(context["review_comments"])])
log = os.environ.get("AGENT_LOG")
if log:
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
if context["attempt"] == 1 and os.environ.get("SLEEP_FIRST"):
    time.sleep(float(os.environ["SLEEP_FIRST"]))
if os.environ.get("FAIL"):
    print("something broke", file=sys.stderr)
    sys.exit(3)
if stage["kind"] == "review":
    plan = [v for v in os.environ.get("VERDICTS", "").split(",") if v]
    verdict = plan[context["round"] - 1] if context["round"] <= len(plan) else "approve"
    body = {"verdict": verdict}
    if verdict == "changes_requested":
        body["comments"] = [f"fix round {context['round']}"]
    Path("verdict.json").write_text(json.dumps(body), encoding="utf-8")
else:
    Path("out.txt").write_text(os.environ.get("MARK", context["agent"]), encoding="utf-8")
    if context["round"] >= int(os.environ.get("READY_FROM_ROUND") or 10**9):
        Path("ready.txt").write_text("ready", encoding="utf-8")
    if os.environ.get("SUMMARY"):
        Path("summary.json").write_text(os.environ["SUMMARY"], encoding="utf-8")
if log:
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"end {stage['name']} {context['attempt']}\n")

"""Test agent for a story across a handover: logs its runs, reviews by round, holds a round.

Environment: AGENT_LOG (file to append ``STAGE AGENT ROUND ATTEMPT COMMENTS-JSON`` to), HOLD
(a path) and HOLD_ROUND (a round): a work stage of that round waits while HOLD exists, after
logging ``holding STAGE ROUND``. A review asks for changes on every round, with the comment
``fix round N``; a work stage writes ``out.txt``.
"""

import json
import os
import time
from pathlib import Path

context = json.loads(Path(os.environ["BEES_CONTEXT"]).read_text(encoding="utf-8"))
stage, round_ = context["stage"], context["round"]


def log(line: str) -> None:
    with open(os.environ["AGENT_LOG"], "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


log(" ".join([stage["name"], context["agent"], str(round_), str(context["attempt"]),
              json.dumps(context["review_comments"])]))
if stage["kind"] == "review":
    verdict = {"verdict": "changes_requested", "comments": [f"fix round {round_}"]}
    Path("verdict.json").write_text(json.dumps(verdict), encoding="utf-8")
else:
    Path("out.txt").write_text(f"round {round_}\n", encoding="utf-8")
    hold = os.environ.get("HOLD")
    if hold and str(round_) == os.environ.get("HOLD_ROUND") and os.path.exists(hold):
        log(f"holding {stage['name']} {round_}")
        while os.path.exists(hold):
            time.sleep(0.05)

"""Test agent for handovers: logs its runs, runs add-on actions, holds while a file exists.

Environment: AGENT_LOG (file to append to), ACTIONS (JSON list of ``[ACTION, INPUT]``, run on
work stages; ``$TITLE`` in an input is the item's title), HOLD (a path: while it exists the
agent waits, after its actions), SHOW_PREVIOUS (set: log ``previous STAGE=FOLDER…`` first).
Log lines: ``run STAGE AGENT ATTEMPT``, per action ``ACTION EXIT STDOUT | LAST-STDERR-LINE``,
``holding STAGE`` and ``end STAGE``. A work stage writes ``notes.txt``; a review approves.
"""

import json
import os
import subprocess
import time
from pathlib import Path

stage, agent = os.environ["BEES_STAGE"], os.environ["BEES_AGENT"]
log = os.environ["AGENT_LOG"]
context = json.loads(Path(os.environ["BEES_CONTEXT"]).read_text(encoding="utf-8"))


def write(line: str) -> None:
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


write(f"run {stage} {agent} {os.environ['BEES_ATTEMPT']}")
if os.environ.get("SHOW_PREVIOUS"):
    write("previous " + " ".join(f"{k}={v}" for k, v in sorted(context["previous"].items())))
if context["stage"]["kind"] == "review":
    Path("verdict.json").write_text('{"verdict": "approve"}', encoding="utf-8")
else:
    Path("notes.txt").write_text(f"draft by {agent}\n", encoding="utf-8")
    for name, data in json.loads(os.environ.get("ACTIONS", "[]")):
        text = json.dumps(data).replace("$TITLE", context["item"]["title"])
        done = subprocess.run(["bees", "action", name, "--input", text],
                              capture_output=True, text=True, check=False)
        last = (done.stderr.strip().splitlines() or [""])[-1]
        write(f"{name} {done.returncode} {done.stdout.strip()} | {last}")
hold = os.environ.get("HOLD")
if hold and os.path.exists(hold):
    write(f"holding {stage}")
    while os.path.exists(hold):
        time.sleep(0.05)
write(f"end {stage}")

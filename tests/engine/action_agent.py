"""Test agent that calls add-on actions through ``bees action``, logging what each returned.

Environment: AGENT_LOG (file to append to), ACTIONS (JSON list of ``[ACTION, INPUT]``),
SLEEP_AFTER (seconds to sleep after the actions on attempt 1), FAIL_FIRST (exit 3 after the
actions on attempt 1), WAIT_FILE (write WAIT_FILE.started, then wait until WAIT_FILE exists
before the actions). Log lines: ``run STAGE AGENT ROUND ATTEMPT``, then per action
``ACTION EXIT STDOUT | LAST-STDERR-LINE``, then ``end STAGE ATTEMPT``.
"""

import json
import os
import subprocess
import sys
import time

stage, agent = os.environ["BEES_STAGE"], os.environ["BEES_AGENT"]
attempt = int(os.environ["BEES_ATTEMPT"])
log = os.environ["AGENT_LOG"]


def write(line: str) -> None:
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


write(f"run {stage} {agent} {os.environ['BEES_ROUND']} {attempt}")
if os.environ.get("WAIT_FILE"):
    with open(os.environ["WAIT_FILE"] + ".started", "w", encoding="utf-8") as started:
        started.write(str(os.getpid()))
    while not os.path.exists(os.environ["WAIT_FILE"]):
        time.sleep(0.05)
for name, data in json.loads(os.environ.get("ACTIONS", "[]")):
    done = subprocess.run(["bees", "action", name, "--input", json.dumps(data)],
                          capture_output=True, text=True, check=False)
    last = (done.stderr.strip().splitlines() or [""])[-1]
    write(f"{name} {done.returncode} {done.stdout.strip()} | {last}")
if attempt == 1 and os.environ.get("SLEEP_AFTER"):
    time.sleep(float(os.environ["SLEEP_AFTER"]))
if attempt == 1 and os.environ.get("FAIL_FIRST"):
    print("failed after the actions", file=sys.stderr)
    sys.exit(3)
write(f"end {stage} {attempt}")

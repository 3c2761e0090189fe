"""Test agent that leaves helpers behind: on attempt 1 it starts ``sleep 600``, a shell that
starts its own ``sleep 600`` (a grandchild), writes ``LEADER SLEEP SHELL GRANDCHILD`` (pids) to
$PIDS_FILE and sleeps; later attempts append ``end ATTEMPT`` to $AGENT_LOG and exit 0."""

import json
import os
import subprocess
import time
from pathlib import Path

context = json.loads(Path(os.environ["BEES_CONTEXT"]).read_text(encoding="utf-8"))
if context["attempt"] > 1:
    with open(os.environ["AGENT_LOG"], "a", encoding="utf-8") as handle:
        handle.write(f"end {context['attempt']}\n")
    raise SystemExit(0)
sleeper = subprocess.Popen(["sleep", "600"])
shell = subprocess.Popen(["sh", "-c", "sleep 600 & echo $! > grandchild.tmp; "
                          "mv grandchild.tmp grandchild; wait"])
while not os.path.exists("grandchild"):
    time.sleep(0.01)
pids = f"{os.getpid()} {sleeper.pid} {shell.pid} {int(Path('grandchild').read_text())}"
target = os.environ["PIDS_FILE"]
Path(target + ".tmp").write_text(pids, encoding="utf-8")
os.replace(target + ".tmp", target)
time.sleep(600)

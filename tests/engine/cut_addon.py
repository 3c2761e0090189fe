"""Test add-on that appends ``ACTION INPUT-JSON KEY`` to $ADDON_LOG and prints ``done N``; while
$CUT_FILE exists it removes it and then kills its caller (``bees action``) with SIGKILL, so the
action took effect but its result is never written (a power cut, in one process); with
CUT_WHO=addon it kills itself instead (the OOM killer or a person's kill -9 of the add-on)."""

import json
import os
import signal
import sys
import time

data = json.load(sys.stdin)
path = os.environ["ADDON_LOG"]
with open(path, "a", encoding="utf-8") as handle:
    handle.write(f"{os.environ['BEES_ACTION']} {json.dumps(data, sort_keys=True)} "
                 f"{os.environ['BEES_ACTION_KEY'][:12]}\n")
cut = os.environ.get("CUT_FILE", "")
if cut and os.path.exists(cut):
    os.remove(cut)
    victim = os.getpid() if os.environ.get("CUT_WHO") == "addon" else os.getppid()
    os.kill(victim, signal.SIGKILL)
    time.sleep(5)
with open(path, encoding="utf-8") as handle:
    print(f"done {len(handle.read().splitlines())}")

"""Example add-on triage, action pick: writes the pick (JSON on stdin) to pick.json.

An add-on's program runs in the stage's folder, so pick.json lands in the run folder's
``Triage/``, where the review's check and the filer's grounded ``bug`` read it.
"""

import json
import os
import sys
from pathlib import Path

pick = json.load(sys.stdin)
partial = Path("pick.json.partial")
partial.write_text(json.dumps({"bug": pick["bug"], "why": pick["why"]}) + "\n",
                   encoding="utf-8")
os.replace(partial, "pick.json")  # whole or not at all
print(f"picked {pick['bug']}")

"""Agent wrapper for the browser tests: holds a stage while ``$BEES_GATE/STAGE`` exists.

Usage as an agent's command: ``[PYTHON, gate.py, SCRIPT]``. While the file named after the
stage (``BEES_STAGE``) exists in the folder ``BEES_GATE``, the stage waits; then the real
agent ``SCRIPT`` runs in its place. The test opens a gate by removing its file, so each stage
stays on screen as long as the test needs to see it.
"""

import os
import sys
import time
from pathlib import Path

hold = Path(os.environ["BEES_GATE"]) / os.environ["BEES_STAGE"]
while hold.exists():
    time.sleep(0.05)
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])

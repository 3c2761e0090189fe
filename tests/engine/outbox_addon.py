"""Test add-on that delivers into $OUTBOX: one uniquely named file per delivery (action, input,
BEES_ACTION_KEY), so a double delivery shows as two files. While $BLOCK_FILE exists it then
writes its pid there and blocks until killed (the machine dies after the action took effect)."""

import json
import os
import sys
import time
import uuid
from pathlib import Path

data = json.load(sys.stdin)
outbox = Path(os.environ["OUTBOX"])
delivery = {"action": os.environ["BEES_ACTION"], "input": data,
            "key": os.environ["BEES_ACTION_KEY"]}
(outbox / f"{uuid.uuid4().hex}.json").write_text(json.dumps(delivery), encoding="utf-8")
block = Path(os.environ["BLOCK_FILE"])
if block.exists():
    block.write_text(str(os.getpid()), encoding="utf-8")
    while True:
        time.sleep(1)
print(f"delivered {len(list(outbox.iterdir()))}")

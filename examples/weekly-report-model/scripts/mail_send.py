"""Example mail add-on, action send: writes the message (JSON on stdin) to the outbox folder.

Each delivery gets a file of its own (item id, then a random part), so a double send would
show as two files. A real mail service would be given ``BEES_ACTION_KEY`` as its
idempotency key, so it delivers a repeated send once.
"""

import json
import os
import sys
import uuid
from pathlib import Path

mail = json.load(sys.stdin)
outbox = Path(os.environ["BEES_FOLDER_OUTBOX"])
path = outbox / f"{os.environ['BEES_ITEM_ID']}-{uuid.uuid4().hex[:12]}.eml"
text = f"To: {mail['to']}\nSubject: {mail['subject']}\n\n{mail['body']}"
path.write_text(text, encoding="utf-8")
print(f"sent to {mail['to']}: {path}")

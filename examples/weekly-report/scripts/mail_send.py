"""Example mail add-on, action send: writes the message (JSON on stdin) to the outbox folder."""

import json
import os
import sys
from pathlib import Path

mail = json.load(sys.stdin)
outbox = Path(os.environ["BEES_FOLDER_OUTBOX"])
path = outbox / f"{os.environ['BEES_ITEM_ID']}.eml"
text = f"To: {mail['to']}\nSubject: {mail['subject']}\n\n{mail['body']}"
path.write_text(text, encoding="utf-8")
print(f"sent to {mail['to']}: {path}")

"""Example mail add-on, action send: writes the message to the outbox folder.

Its input (JSON on stdin) gives the address; the message is the reviewed report the Draft
stage wrote (``BEES_PREVIOUS_DRAFT/report.md``): its title line the subject, the report the
body, so what is mailed is what the review's check passed. Each delivery gets a file of its own (item id, then a random part),
so a double send would show as two files. A real mail service would be given
``BEES_ACTION_KEY`` as its idempotency key, so it delivers a repeated send once.
"""

import json
import os
import sys
import uuid
from pathlib import Path

mail = json.load(sys.stdin)
body = (Path(os.environ["BEES_PREVIOUS_DRAFT"]) / "report.md").read_text(encoding="utf-8")
outbox = Path(os.environ["BEES_FOLDER_OUTBOX"])
path = outbox / f"{os.environ['BEES_ITEM_ID']}-{uuid.uuid4().hex[:12]}.eml"
subject = body.splitlines()[0].lstrip("# ").strip()
text = f"To: {mail['to']}\nSubject: {subject}\n\n{body}"
path.write_text(text, encoding="utf-8")
print(f"sent to {mail['to']}: {path}")

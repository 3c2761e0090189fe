"""Example add-on tracker, action file: files the picked bug (JSON on stdin) in filed.json.

The tracker is the folder ``tracker`` (``BEES_FOLDER_TRACKER``); each filing gets the next
number. A real tracker would be given ``BEES_ACTION_KEY`` as its idempotency key.
"""

import json
import os
import sys
from pathlib import Path

issue = json.load(sys.stdin)
filed_path = Path(os.environ["BEES_FOLDER_TRACKER"]) / "filed.json"
filed = json.loads(filed_path.read_text(encoding="utf-8")) if filed_path.exists() else []
number = len(filed) + 1
filed.append({"number": number, "bug": issue["bug"], "title": issue["title"],
              "item": os.environ["BEES_ITEM_ID"]})
partial = filed_path.with_suffix(".partial")
partial.write_text(json.dumps(filed, indent=2) + "\n", encoding="utf-8")
os.replace(partial, filed_path)  # whole or not at all
print(f"filed {issue['bug']} as #{number}")

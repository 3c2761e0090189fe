"""Test add-on action: appends ``ACTION INPUT-JSON`` to $ADDON_LOG, prints ``done N``."""

import json
import os
import sys

data = json.load(sys.stdin)
path = os.environ["ADDON_LOG"]
with open(path, "a", encoding="utf-8") as handle:
    handle.write(f"{os.environ['BEES_ACTION']} {json.dumps(data, sort_keys=True)}\n")
with open(path, encoding="utf-8") as handle:
    print(f"done {len(handle.read().splitlines())}")

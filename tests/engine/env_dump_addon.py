"""Test add-on action: writes its whole environment as JSON to $DUMP_FILE, prints ``dumped``."""

import json
import os
import sys

json.load(sys.stdin)
with open(os.environ["DUMP_FILE"], "w", encoding="utf-8") as handle:
    json.dump(dict(os.environ), handle, sort_keys=True)
print("dumped")

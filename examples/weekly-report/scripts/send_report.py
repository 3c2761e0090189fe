"""Example sender agent: mails the reviewed report through `bees action mail.send`."""

import json
import os
import subprocess
import sys
from pathlib import Path

context = json.loads(Path(os.environ["BEES_CONTEXT"]).read_text(encoding="utf-8"))
report = Path(context["previous"]["Draft"]) / "report.md"
mail = {"to": "team@example.com", "subject": context["item"]["title"],
        "body": report.read_text(encoding="utf-8")}
Path("mail.json").write_text(json.dumps(mail, indent=2) + "\n", encoding="utf-8")
# the run holds the send until a person approves it (`bees approve`), then runs the add-on
sent = subprocess.run([os.environ["BEES_PYTHON"], "-m", "bees_cli", "action", "mail.send",
                       "--input", "@mail.json"], check=False)
sys.exit(sent.returncode)

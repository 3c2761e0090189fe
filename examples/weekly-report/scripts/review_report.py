"""Example reviewer agent: reads the draft's report.md and writes verdict.json."""

import json
import os
from pathlib import Path

context = json.loads(Path(os.environ["BEES_CONTEXT"]).read_text(encoding="utf-8"))
draft = Path(context["previous"][context["stage"]["reviews"]]) / "report.md"
text = draft.read_text(encoding="utf-8") if draft.exists() else ""
problems = []
if not text.startswith("# "):
    problems.append("the report needs a title line")
if "## Summary" not in text:
    problems.append("the report needs a summary section")
if problems:
    verdict = {"verdict": "changes_requested", "comments": problems}
else:
    verdict = {"verdict": "approve"}
Path("verdict.json").write_text(json.dumps(verdict) + "\n", encoding="utf-8")
print(f"verdict: {verdict['verdict']}")

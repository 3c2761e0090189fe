"""Example writer agent: turns the linked team-notes folder into report.md in its stage folder."""

import json
import os
from pathlib import Path

context = json.loads(Path(os.environ["BEES_CONTEXT"]).read_text(encoding="utf-8"))
notes = Path(context["folders"]["team-notes"])
files = sorted(notes.glob("*.md"))
lines = [f"# {context['item']['title']}", "", "## Summary", ""]
lines.append(f"{len(files)} people sent notes this week.")
for path in files:
    lines += ["", f"## {path.stem.capitalize()}", "", path.read_text(encoding="utf-8").strip()]
if context.get("review_comments"):
    lines += ["", "## Changes after review", ""]
    lines += [f"- {comment}" for comment in context["review_comments"]]
Path("report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
print(f"wrote report.md from {len(files)} note files")

"""Example report add-on, action write: the model's choice (JSON on stdin) rendered into the
report by the workspace's templates.

The model chooses the week's highlight (a note's file name, grounded by ``enum_from``);
the report names each person of ``team/`` with how many notes name them and their lines.
Writes ``report.json`` (the choice, as given: the review's check reads it) and
``report.md`` in the stage's folder, and prints the report so the model sees what it made.
"""

import json
import os
import sys
from pathlib import Path

from notes import notes, people, render

fields = json.load(sys.stdin)
report = render(fields["highlight"], people(Path(os.environ["BEES_FOLDER_TEAM"])),
                notes(Path(os.environ["BEES_FOLDER_TEAM_NOTES"])),
                Path(os.environ["BEES_WORKSPACE"]) / "templates")
Path("report.json").write_text(json.dumps(fields, indent=2) + "\n", encoding="utf-8")
Path("report.md").write_text(report, encoding="utf-8")
print(f"wrote report.md:\n{report}")

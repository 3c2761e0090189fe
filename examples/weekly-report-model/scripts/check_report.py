"""The review's check of the report, before any reviewer: the report is the one the team and
the notes give for the writer's choice.

``check_report.py TEAM_DIR NOTES_DIR TEMPLATES_DIR`` runs in the run folder and reads
``Draft/report.json`` (the writer's choice) and ``Draft/report.md``. Exit 0 when the
highlight is a note and the report names each person of the team once with the count and
lines of their notes; else exit 1 with one line per problem on stderr, which Bees sends
back to the writer as the change request.
"""

import json
import sys
from pathlib import Path

from notes import notes, people, render

team, noted = people(Path(sys.argv[1])), notes(Path(sys.argv[2]))
try:
    highlight = json.loads(Path("Draft/report.json").read_text(encoding="utf-8"))["highlight"]
    report = Path("Draft/report.md").read_text(encoding="utf-8")
except (OSError, ValueError, KeyError, TypeError) as error:
    sys.exit(f"the report is missing ({error}): call report__write")
if highlight not in noted:
    sys.exit(f"the highlight {highlight!r} is not a note: choose one of {', '.join(noted)}")
if report != render(highlight, team, noted, Path(sys.argv[3])):
    sys.exit("Draft/report.md is not the report the notes give: call report__write again")
print(f"the report names {', '.join(team)} with their notes; highlight {highlight}")

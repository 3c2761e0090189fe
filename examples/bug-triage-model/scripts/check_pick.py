"""Example review check: the triager's pick is a report of the worst severity there is.

Run by the review stage's ``checks:`` with the run folder as its working directory, as
``check_pick.py REPORTS``; it reads ``Triage/pick.json`` and each report's front matter
(``id``, ``severity``) in the folder REPORTS. Exits 0 when the picked report's severity is
the worst one present; else 1, saying so on stderr: that text goes back to the triager as
the change request, and no model is asked.
"""

import json
import sys
from pathlib import Path

RANK = {"minor": 1, "major": 2, "critical": 3}


def front_matter(path: Path) -> dict[str, str]:
    """Return the ``key: value`` lines between a report's two ``---`` lines."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    fields: dict[str, str] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            break
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


reports = {f.get("id"): f.get("severity", "") for f in
           map(front_matter, sorted(Path(sys.argv[1]).glob("*.md")))}
bug = json.loads(Path("Triage/pick.json").read_text(encoding="utf-8"))["bug"]
worst = max(reports.values(), key=lambda s: RANK.get(s, 0))
picked = reports.get(bug)
if picked is None:
    sys.exit(f"{bug} is not a report in the folder")
if RANK.get(picked, 0) < RANK.get(worst, 0):
    sys.exit(f"{bug} is {picked}, but a {worst} report is in the folder: pick the report "
             f"whose severity is {worst}")
print(f"{bug} is {picked}, the worst severity there is")

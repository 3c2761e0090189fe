"""The starter workspace that ``bees init`` writes: a draft → review → done process, two agents.

The two agents run small Python scripts written into ``scripts/``, so the starter runs
end to end as soon as it is written (model runners are not run yet).

Each YAML file begins with ``# yaml-language-server: $schema=…`` pointing at the copy of
the JSON Schemas written into the new workspace's ``schemas/`` folder, so editors
validate offline; ``bees schemas write`` refreshes that copy after an upgrade.
"""

from __future__ import annotations

import re
from pathlib import Path

from bees_cli.errors import UserError
from bees_cli.workspace.models import NAME_RE

_BEES = """\
# yaml-language-server: $schema=schemas/workspace.json
# The workspace: one YAML file per object; an object's name is its file name.
name: {name}
default_agent: writer
# team: my-team                        # your Bees Cloud team
# cloud: https://cloud.example.com     # your Bees Cloud; leave out to run on your own
"""

_PROCESS = """\
# yaml-language-server: $schema=../schemas/process.json
title: Draft and review
description: A writer drafts from the notes folder; a reviewer checks the draft.
stages:
  - name: Draft
    kind: work
    agents: [writer]
    reads: [notes]
  - name: Review
    kind: review
    reviews: Draft
    agents: [reviewer]
  - name: Done
    kind: done
"""

_WRITER = """\
# yaml-language-server: $schema=../schemas/agent.json
enabled: true
instructions: |
  Write a short summary of the files in the notes folder.
  Address every review comment.
runner:
  command: ["${{BEES_PYTHON}}", "${{BEES_WORKSPACE}}/scripts/write.py"]
# To ask a model (an OpenAI-style server: a provider, Ollama, or `bees model serve`)
# instead of a script, give a model runner:
# runner:
#   model:
#     base_url: https://api.openai.com/v1
#     name: gpt-4o-mini
#     api_key_env: OPENAI_API_KEY
"""

_REVIEWER = """\
# yaml-language-server: $schema=../schemas/agent.json
enabled: true
instructions: |
  Check the summary: it must be accurate and under one page.
  Approve it, or ask for changes with clear comments.
runner:
  command: ["${{BEES_PYTHON}}", "${{BEES_WORKSPACE}}/scripts/review.py"]
"""

_WRITE_SCRIPT = """\
\"\"\"Starter writer: lists the notes folder in summary.md, in the stage's own folder.

Bees runs it in the stage folder; BEES_CONTEXT names a JSON file with the item, the
linked folders, earlier stages' folders and any review comments. Replace it with your own.
\"\"\"

import json
import os
from pathlib import Path

context = json.loads(Path(os.environ["BEES_CONTEXT"]).read_text(encoding="utf-8"))
notes = Path(context["folders"]["notes"])
files = sorted(p for p in notes.iterdir() if p.is_file() and not p.name.startswith("."))
lines = [f"# {context['item']['title']}", "", f"{len(files)} note files:", ""]
for path in files:
    first = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[:1]
    lines.append(f"- {path.name}: {first[0] if first else '(empty)'}")
for comment in context["review_comments"]:
    lines.append(f"- review comment addressed: {comment}")
Path("summary.md").write_text("\\n".join(lines) + "\\n", encoding="utf-8")
print(f"wrote summary.md from {len(files)} note files")
"""

_REVIEW_SCRIPT = """\
\"\"\"Starter reviewer: approves the draft's summary.md when it is there, in verdict.json.

A review stage writes {"verdict": "approve"} or
{"verdict": "changes_requested", "comments": ["..."]} in its folder. Replace it with your own.
\"\"\"

import json
import os
from pathlib import Path

context = json.loads(Path(os.environ["BEES_CONTEXT"]).read_text(encoding="utf-8"))
summary = Path(context["previous"][context["stage"]["reviews"]]) / "summary.md"
if summary.is_file() and summary.read_text(encoding="utf-8").strip():
    verdict = {"verdict": "approve"}
else:
    verdict = {"verdict": "changes_requested", "comments": ["write summary.md"]}
Path("verdict.json").write_text(json.dumps(verdict) + "\\n", encoding="utf-8")
print(f"verdict: {verdict['verdict']}")
"""

_FOLDER = """\
# yaml-language-server: $schema=../schemas/folder.json
description: Notes the writer reads. Link it elsewhere with `bees link notes PATH`.
path: notes
"""

_SCHEDULE = """\
# yaml-language-server: $schema=../schemas/schedule.json
# Disabled until you set the owner to your own email and enable it.
enabled: false
process: draft-review
owner: you@example.com
calendar:
  days: [monday]
  time: "9:00"
timezone: UTC
title: "Summary {{date}}"
"""


def starter_files(name: str) -> dict[str, str]:
    """Return relative path → text of every starter YAML file, for workspace ``name``."""
    return {
        "bees.yaml": _BEES.format(name=name),
        "processes/draft-review.yaml": _PROCESS,
        "agents/writer.yaml": _WRITER.format(),
        "agents/reviewer.yaml": _REVIEWER.format(),
        "folders/notes.yaml": _FOLDER,
        "schedules/weekly-summary.yaml": _SCHEDULE.format(),
    }


def starter_scripts() -> dict[str, str]:
    """Return relative path → text of the starter agents' programs (``scripts/*.py``).

    Why scripts and not models: model runners are not run yet, and a starter that cannot
    run end to end teaches nothing; the scripts show the runner's contract instead.
    """
    return {"scripts/write.py": _WRITE_SCRIPT, "scripts/review.py": _REVIEW_SCRIPT}


def workspace_name(folder: Path) -> str:
    """A valid workspace name from a folder name (``My Notes!`` → ``My-Notes``)."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", folder.name).strip("-_")[:64]
    return name if NAME_RE.match(name) else "my-workspace"


def create(folder: Path) -> list[Path]:
    """Write a starter workspace into ``folder`` (created if missing).

    Also makes the empty ``notes/`` folder the starter's folder declaration points at.

    Returns:
        Every file written (YAML files, ``scripts/*.py``, ``schemas/*.json``); folders
        are not listed.

    Raises:
        UserError: ``folder`` exists and is not a folder, or already holds ``bees.yaml``
            or any file the starter would write (nothing is overwritten).
    """
    from bees_cli.files import write_atomic
    from bees_cli.workspace import schemas

    folder = folder.expanduser().absolute()
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder}: exists and is not a folder")
    files = {**starter_files(workspace_name(folder)), **starter_scripts()}
    if (folder / "bees.yaml").exists():
        raise UserError(
            f"{folder / 'bees.yaml'} already exists; nothing was written",
            hint="choose an empty folder, or edit the existing workspace",
        )
    taken = [
        rel
        for rel in [*files, *(f"schemas/{n}" for n in schemas.SCHEMA_FILES)]
        if (folder / rel).exists()
    ]
    if taken:
        raise UserError(
            f"{folder} already holds {', '.join(taken)}; nothing was written",
            hint="choose an empty folder",
        )
    written: list[Path] = []
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text.encode("utf-8"))
        written.append(path)
    written += schemas.write(folder / "schemas")
    (folder / "notes").mkdir(exist_ok=True)
    return written

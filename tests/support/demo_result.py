"""Judge what ``bees demo`` made as a person would (issue 28, point 2): the mail in the outbox
and the report, against the notes of the demo's workspace.

Written apart from the example's own scripts (``scripts/notes.py``), so a mistake in one
is not hidden by the same mistake in the other: this reads the mail and the rendered report
(what a person reads), not the choice the model gave. Used by the slow demo test and by
``scripts/demo_trials.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPORT = ("Draft", "report.md")
"""The report, in the run folder."""
PERSON_LINE = re.compile(r"^- \*\*(?P<name>[^*]+)\*\*: (?P<done>\d+) items this week: "
                         r"(?P<items>.+)$")
"""One person's line of the report (``templates/person.md``)."""
HIGHLIGHT_LINE = re.compile(r"^Highlight of the week: (?P<line>.+) \((?P<who>[^()]+)\)$")
"""The report's highlight line (``templates/report.md``)."""


@dataclass
class Judged:
    """What the demo made, read: ``problems`` (empty: a person would accept it), the mail's
    recipient, the highlight, and the report's ``name → count``."""

    problems: list[str] = field(default_factory=list)
    to: str | None = None
    highlight: str | None = None
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return not self.problems


def _front(path: Path) -> tuple[dict[str, str], str]:
    _, front, body = path.read_text(encoding="utf-8").split("---\n", 2)
    return {str(k): str(v) for k, v in (yaml.safe_load(front) or {}).items()}, body.strip()


def read_team(workspace: Path) -> tuple[dict[str, list[str]], set[str]]:
    """Return the demo workspace's people (``team/``'s ``person:`` → the lines of their notes
    in ``notes/``) and every address ``team/`` lists (``email:``)."""
    people: dict[str, list[str]] = {}
    addresses: set[str] = set()
    for path in sorted((workspace / "team").glob("*.md")):
        keys, _ = _front(path)
        if keys.get("email"):
            addresses.add(keys["email"])
        if keys.get("person"):
            people[keys["person"]] = []
    for path in sorted((workspace / "notes").glob("*.md")):
        keys, line = _front(path)
        people.setdefault(keys.get("person", ""), []).append(line)
    return people, addresses


def judge_demo(workspace: Path, run_folder: Path) -> Judged:
    """Judge the demo's result: exactly one mail, to an address of the team, whose body is
    the report; the report names each person of the team once, with the count of their
    notes and each of their lines, and its highlight is a note's line with its person."""
    judged = Judged()
    problems = judged.problems
    people, addresses = read_team(workspace)
    report_path = run_folder.joinpath(*REPORT)
    report = report_path.read_text(encoding="utf-8") if report_path.is_file() else None
    mails = sorted((workspace / "outbox").glob("*.eml"))
    if len(mails) != 1:
        problems.append(f"{len(mails)} mails in the outbox, not 1")
    for mail in mails[:1]:
        head, _, body = mail.read_text(encoding="utf-8").partition("\n\n")
        headers = dict(line.split(": ", 1) for line in head.splitlines() if ": " in line)
        judged.to = headers.get("To")
        if judged.to not in addresses:
            problems.append(f"mailed to {judged.to!r}, not an address of the team "
                            f"({', '.join(sorted(addresses))})")
        title = (report or "").split("\n", 1)[0].lstrip("# ").strip()
        if headers.get("Subject") != title:
            problems.append(f"the mail's subject {headers.get('Subject')!r} is not the "
                            f"report's title {title!r}")
        if report is None or body.strip() != report.strip():
            problems.append("the mail's body is not the report")
    if report is None:
        problems.append(f"no report at {'/'.join(REPORT)}")
        return judged
    names: list[str] = []
    highlights = []
    for line in report.splitlines():
        found, said = PERSON_LINE.match(line.strip()), HIGHLIGHT_LINE.match(line.strip())
        if said is not None:
            highlights.append(said)
        if found is None:
            continue
        name, done = found["name"], int(found["done"])
        names.append(name)
        judged.counts[name] = done
        if name not in people:
            problems.append(f"the report names {name!r}, who is not in the team")
            continue
        if done != len(people[name]):
            problems.append(f"{name}: {done} items, the notes list {len(people[name])}")
        missing = [note for note in people[name] if note not in found["items"]]
        if missing:
            problems.append(f"{name}'s line lacks: {' '.join(missing)}")
    if sorted(names) != sorted(people):
        problems.append(f"the report names {sorted(names)}, the team {sorted(people)}")
    if len(highlights) != 1:
        problems.append(f"{len(highlights)} highlight lines, not 1")
    for said in highlights[:1]:
        judged.highlight = said["line"]
        if said["line"] not in people.get(said["who"], []):
            problems.append(f"the highlight {said['line']!r} is not a note of {said['who']}")
    return judged

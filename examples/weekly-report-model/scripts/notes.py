"""The team and its notes as the example's scripts read them.

``team/``: one Markdown file per person, front matter ``person:`` and ``email:`` (and one
for the list, ``email:`` only). ``notes/``: one file per thing done, front matter
``person:``, then the line. Shared by the report add-on (``report_write.py``) and the
review's check (``check_report.py``).
"""

from __future__ import annotations

from pathlib import Path


def front_matter(path: Path) -> tuple[dict[str, str], str]:
    """Return a file's front matter (``key: value`` lines between ``---``) and its text."""
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n") or "\n---\n" not in text[3:]:
        return {}, text.strip()
    head, _, body = text[4:].partition("\n---\n")
    keys = {}
    for line in head.splitlines():
        key, _, value = line.partition(":")
        keys[key.strip()] = value.strip()
    return keys, body.strip()


def people(team: Path) -> list[str]:
    """Every ``person:`` of the team folder, sorted."""
    return sorted(p for p in (front_matter(f)[0].get("person") for f in team.glob("*.md")) if p)


def notes(folder: Path) -> dict[str, tuple[str, str]]:
    """Each note of the notes folder: file name (without .md) → (its person, its line)."""
    found = {}
    for path in sorted(folder.glob("*.md")):
        keys, line = front_matter(path)
        found[path.stem] = (keys.get("person", ""), line)
    return found


def render(highlight: str, team: list[str], noted: dict[str, tuple[str, str]],
           templates: Path) -> str:
    """Return the report: ``templates/report.md`` around the ``highlight`` note, with one
    ``templates/person.md`` line per person of the ``team`` (their count and their notes)."""
    person = (templates / "person.md").read_text(encoding="utf-8").strip()
    lines = []
    for name in team:
        theirs = [line for who, line in noted.values() if who == name]
        lines.append(person.format(name=name, done=len(theirs), items=" ".join(theirs)))
    who, line = noted[highlight]
    return (templates / "report.md").read_text(encoding="utf-8").format(
        highlight=line, who=who, people="\n".join(lines))

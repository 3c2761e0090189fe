"""`bees status` with many items against a floor: Python's sqlite3 reading and printing the rows.

Run: ``.venv/bin/python benchmarks/status.py [--items 10000] [--rounds 7] [--python PY]``
(``--quick``: one round over 200 items, a smoke run).

It makes a computer (``BEES_HOME`` in a temporary folder) with one real item of
``examples/weekly-report`` (``bees item create``, so the row and its workflow input are what
Bees writes) and copies that row, and its events (what ``bees item show`` reads), into
``--items`` items of mixed statuses (most done, some
failed, running, waiting for approval with a held action's input as reason and its
request in ``approvals``). Then it runs,
interleaved over ``--rounds`` rounds after one warm-up each, in fresh interpreters with
stdout to /dev/null and ``COLUMNS=80``:

* ``bees status``: the default list (the most relevant rows, a limit and a footer);
* ``bees status --all``: every row (skipped when this Bees has no ``--all``);
* floor (shown rows): ``python -c`` that opens ``record.db`` with ``sqlite3``, reads the
  printed columns of as many rows as ``bees status`` prints, in the order its index serves
  (not done nor cancelled first, then the latest changed), and prints them;
* floor (all rows): the same for every row.

It prints the median and min–max of each, and the ratios of ``bees status`` to the floor of
the same rows. Every run starts in the temporary folder, so ``bees_cli`` is imported as
installed, not from the checkout. An editable install (``pip install -e``) finds it through
setuptools' import hook, which adds to the start-up of bees but not of the floor: for the
figures of a non-editable install, ``pip install --no-deps --target DIR .`` and run this
with ``PYTHONPATH=DIR`` (or give ``--python`` of a venv with ``pip install .``). It
measures; it asserts nothing. ``--base PY`` adds another installation's ``bees status``
(and ``--all``) to the same rounds, for before/after figures from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "weekly-report"
SHOWN = 50
"""How many rows ``bees status`` prints by default (its limit; the floor reads as many)."""

ENDED_FIRST = "status IN ('done', 'cancelled')"
"""The first key of the order ``bees status`` lists in (``bees_cli.record.schema.ENDED_FIRST``),
then ``since DESC, id DESC``: the order its index ``items_listing`` serves, so the floor reads
the same rows the same way (a sort the index does not serve would cost the floor a full
scan Bees does not pay)."""

FLOOR = f"""
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
limit = int(sys.argv[2])
rows = db.execute("SELECT id, process, title, stage, status, reason, agent, since FROM items"
                  " ORDER BY {ENDED_FIRST}, since DESC, id DESC LIMIT ?", (limit,)).fetchall()
out = sys.stdout
for r in rows:
    out.write("  ".join("-" if v is None else str(v) for v in r) + "\\n")
"""

REASON = ('mail.send {"to": "team@example.com", "subject": "Weekly report", "body": "# Weekly '
          'report\\n\\n## Summary\\n\\n2 people sent notes this week; the release went out on…')


def fill(home: Path, count: int, python: str) -> Path:
    """Create one real item on computer ``home`` and copy it into ``count`` items; return the
    record's path."""
    env = {**os.environ, "BEES_HOME": str(home)}
    subprocess.run([python, "-m", "bees_cli", "item", "create", "weekly-report", "-w",
                    str(EXAMPLE)], env=env, check=True, capture_output=True)
    path = home / "data" / "record.db"
    db = sqlite3.connect(path)
    template = db.execute("SELECT * FROM items").fetchone()
    names = [d[0] for d in db.execute("SELECT * FROM items LIMIT 0").description]
    event_names = [d[0] for d in db.execute("SELECT * FROM events LIMIT 0").description]
    events = [dict(zip(event_names, e, strict=True)) for e in db.execute(
        "SELECT * FROM events WHERE item_id = ? ORDER BY seq",
        (template[names.index("id")],)).fetchall()]
    db.execute("DELETE FROM events")  # given again to each copy below
    db.execute("DELETE FROM items")
    rows = []
    for n in range(count):
        row = dict(zip(names, template, strict=True))
        row["id"] = f"01BENCH{n:019d}"
        row["title"] = f"Weekly report {n} for the team's Monday meeting"
        row["since"] = row["created"] = f"2026-{1 + n % 11:02d}-{1 + n % 28:02d}T08:00:00.000000Z"
        kind = n % 100
        row["status"], row["stage"], row["reason"], row["agent"] = (
            ("failed", "Draft", "the agent exited with 1", "writer") if kind == 0 else
            ("waiting for approval", "Send", REASON, "sender") if kind == 1 else
            ("running", "Review", None, "reviewer") if kind == 2 else
            ("done", "Done", None, None))
        rows.append(tuple(row[k] for k in names))
    marks = ", ".join("?" for _ in names)
    held = [(f"01BENCH{n:019d}", json.dumps({
        "id": 1, "item_id": f"01BENCH{n:019d}", "stage": "Send", "round": 1,
        "action": "mail.send", "kind": "send", "summary": REASON.removeprefix("mail.send "),
        "status": "waiting", "asked_at": "2026-02-02T08:00:00Z"})) for n in range(1, count, 100)]
    copies = [tuple(n if k == "item_id" else e[k] for k in event_names if k != "seq")
              for n in (r[names.index("id")] for r in rows) for e in events]
    event_marks = ", ".join("?" for k in event_names if k != "seq")
    with db:
        db.executemany(f"INSERT INTO events ({', '.join(k for k in event_names if k != 'seq')})"
                       f" VALUES ({event_marks})", copies)
        db.executemany(f"INSERT INTO items ({', '.join(names)}) VALUES ({marks})", rows)
        db.executemany("INSERT INTO approvals (item_id, id, stage, status, data) VALUES"
                       " (?, 1, 'Send', 'waiting', ?)", held)
    db.close()
    return path


CPU: dict[str, list[float]] = {}
"""Label → seconds of CPU time (user + system) of each timed round, beside the wall times."""


def _time_once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Seconds of wall time and of CPU time (user + system) of one run of ``argv``; raises
    if it fails."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, argv)
    return wall, usage.ru_utime + usage.ru_stime


def measure(count: int, rounds: int, python: str,
            base: str | None = None) -> dict[str, list[float]]:
    """Return label → seconds of each round (one warm-up run of each first); with ``base``
    (another installation's interpreter), its ``bees status`` and ``--all`` too, as
    ``base: …``, in the same rounds."""
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        record = fill(home, count, python)
        env = {**os.environ, "BEES_HOME": str(home), "COLUMNS": "80"}
        env.pop("NO_COLOR", None)
        bees = [python, "-m", "bees_cli", "status"]
        commands = {
            "bees status": bees,
            "bees status --all": [*bees, "--all"],
            f"floor: {SHOWN} rows": [python, "-c", FLOOR, str(record), str(SHOWN)],
            f"floor: all {count} rows": [python, "-c", FLOOR, str(record), str(count)],
        }
        if base is not None:
            commands["base: bees status"] = [base, "-m", "bees_cli", "status"]
            commands["base: bees status --all"] = [base, "-m", "bees_cli", "status", "--all"]
        for label in ("bees status --all", "base: bees status --all"):
            if label in commands and subprocess.run(commands[label], env=env,
                                                    capture_output=True).returncode != 0:
                del commands[label]  # a Bees before --all prints every row anyway
        samples: dict[str, list[float]] = {label: [] for label in commands}
        for argv in commands.values():
            _time_once(argv, env, home)
        for _ in range(rounds):
            for label, argv in commands.items():
                wall, used = _time_once(argv, env, home)
                samples[label].append(wall)
                CPU.setdefault(label, []).append(used)
    return samples


def main() -> int:
    """Parse the options, measure, print medians, spreads and ratios; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000, help="items (default 10000)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter for bees and the floors (default: this one)")
    parser.add_argument("--base", help="interpreter of another installation (e.g. main's) "
                        "whose bees status runs in the same rounds, as base: ...")
    parser.add_argument("--quick", action="store_true",
                        help="one round over 200 items (a smoke run: the figures mean little)")
    args = parser.parse_args()
    if args.quick:
        args.items, args.rounds = 200, 1
    before = os.getloadavg()[0]
    samples = measure(args.items, args.rounds, args.python, args.base)
    width = max(len(label) for label in samples)
    print(f"{args.items} items, {args.rounds} interleaved rounds, {args.python}, load "
          f"{before:.1f} before, {os.getloadavg()[0]:.1f} after on {os.cpu_count()} cores")
    print(f"{'command':<{width}}  median ms  (min–max)   CPU ms (min–max)")
    medians = {}
    for label, times in samples.items():
        medians[label] = statistics.median(times)
        cpu = CPU[label]
        print(f"{label:<{width}}  {medians[label] * 1000:9.1f}  "
              f"({min(times) * 1000:.1f}–{max(times) * 1000:.1f})  "
              f"{statistics.median(cpu) * 1000:8.1f} ({min(cpu) * 1000:.1f}–"
              f"{max(cpu) * 1000:.1f})")
    shown, every = f"floor: {SHOWN} rows", f"floor: all {args.items} rows"
    print(f"bees status / floor of the rows it prints: "
          f"{medians['bees status'] / medians[shown]:.2f}")
    print(f"bees status / floor of all rows: {medians['bees status'] / medians[every]:.2f}")
    cpus = {label: statistics.median(times) for label, times in CPU.items()}
    for label in ("bees status", "base: bees status"):
        if label in cpus:
            print(f"{label} / floor of the rows it prints, CPU time: "
                  f"{cpus[label] / cpus[shown]:.2f}")
    for prefix in ("", "base: "):
        if f"{prefix}bees status" in medians and prefix:
            print(f"{prefix}bees status / floor of the rows it prints: "
                  f"{medians[f'{prefix}bees status'] / medians[shown]:.2f}")
        if f"{prefix}bees status --all" in medians:
            print(f"{prefix}bees status --all / floor of all rows: "
                  f"{medians[f'{prefix}bees status --all'] / medians[every]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

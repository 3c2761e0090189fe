"""Measure the shared record's push: Bees Cloud's CPU per change against a bare insert, and a
first push of 100,000 items.

For each database (a SQLite file; PostgreSQL from ``BEES_TEST_POSTGRES_URL``, or a
throwaway cluster started with ``.ci/postgres.sh`` when server binaries are installed):

* **server CPU per change** (issue 29, point 2): ``--rounds`` interleaved rounds; in each,
  ``--changes`` new items' changes (the fields a computer sends: title, stage, status,
  summary…) pushed to the real server (``bees cloud serve`` in a subprocess) by the blocking
  client in batches of :data:`~bees_cli.cloud.wire.MAX_BATCH`, and the server's CPU (utime +
  stime of its process) divided by the changes. ``--base-path DIR`` loads a second server
  from another checkout (``git archive`` of a base commit) on the same database, pushed in
  the same rounds: before and after under one load.
* **floor**: the same rows the server stores (same columns and values: canonical fields,
  digest, origin time, machine, person, sequence number, generation) inserted by the bare
  driver (``sqlite3`` with the server's pragmas, ``BEGIN IMMEDIATE``; ``psycopg``) with one
  ``executemany`` per batch of the same size, one transaction each, into the same table of
  the same database (another team); its CPU is this process's (``time.process_time``), rows
  made before the clock starts.
* **first push** (``--first 100000``, SQLite): one computer whose local record holds that
  many items, synced by :class:`~bees_cli.record.sync.Syncer` with the client ``bees run``
  uses (5 s timeout, two retries) until its outbox is empty: rounds needed, rounds that
  failed, batch sizes and wall time.

Figures are the median (min–max) over the rounds, with the load average. Usage:
``.venv/bin/python benchmarks/sync.py [--rounds 5] [--changes 10000] [--first 100000]
[--base-path DIR] [--skip-postgres] [--json]``; ``--quick`` is one short round (a smoke
run; PostgreSQL only when ``BEES_TEST_POSTGRES_URL`` is set).
Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import secrets
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bees_cli.cloud import wire  # noqa: E402
from bees_cli.cloud.client import CloudClient  # noqa: E402
from bees_cli.cloud.login import Login  # noqa: E402
from bees_cli.cloud.server.storage import Storage  # noqa: E402
from bees_cli.machine.computer import Computer  # noqa: E402
from bees_cli.record.local import LocalRecord  # noqa: E402
from bees_cli.record.sync import SharedRecord, Syncer  # noqa: E402
from bees_cli.utc import to_us  # noqa: E402
from benchmarks.cloud import cpu_seconds, postgres_url, start  # noqa: E402

MACHINE = "b" * 32
ORIGIN = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


def fields_of(n: int) -> dict[str, Any]:
    """The fields a computer sends for its ``n``-th item (as ``SharedRecord.outbox`` makes)."""
    return {
        "title": f"Weekly report {n}", "process": "weekly-report", "stage": "Draft",
        "status": "running", "status_text": "running", "reason": None, "agent": "writer",
        "summary": "Draft: running (writer)", "computer": "bench-laptop",
        "machine_id": MACHINE, "person": "maya@bench.example",
        "created": "2025-01-06T08:00:00Z",
    }


def changes_of(tag: str, count: int) -> list[wire.RecordChange]:
    """``count`` changes of new items named after ``tag``."""
    return [
        wire.RecordChange(item_id=f"{tag}-{n:07d}", fields=fields_of(n),
                          origin_time=ORIGIN + timedelta(microseconds=n), machine_id=MACHINE)
        for n in range(count)
    ]


def push_round(
    url: str, token: str, pid: int, changes: list[wire.RecordChange]
) -> dict[str, float]:
    """Push ``changes`` to the server at ``url`` (process ``pid``) in batches; return its CPU ms
    per change and the slowest batch's wall ms."""
    slowest = 0.0
    with CloudClient(url, token, retries=0, timeout=120) as client:
        client.me()  # connect and authenticate outside the measure
        before = cpu_seconds(pid)
        for start_at in range(0, len(changes), wire.MAX_BATCH):
            began = time.perf_counter()
            answer = client.push(changes[start_at:start_at + wire.MAX_BATCH])
            slowest = max(slowest, time.perf_counter() - began)
            assert answer.applied == answer.received, answer
        cpu = cpu_seconds(pid) - before
    return {"cpu_ms": cpu * 1000 / len(changes), "slowest_batch_ms": slowest * 1000}


def floor_rows(
    team_id: int, person_id: int, tag: str, count: int, seq0: int
) -> list[tuple[Any, ...]]:
    """The rows the server would store for :func:`changes_of` ``(tag, count)``."""
    rows = []
    for n, change in enumerate(changes_of(tag, count)):
        text = wire.canonical_json(change.fields)
        digest = hashlib.sha256(text.encode()).hexdigest()
        rows.append((team_id, change.item_id, text, digest, to_us(change.origin_time),
                     MACHINE, person_id, seq0 + n + 1, 0))
    return rows


COLUMNS = "team_id, item_id, fields, digest, origin_us, machine_id, person_id, seq, generation"


class Floor:
    """Bare ``executemany`` inserts into the server's ``record_items`` table, one transaction
    per batch, through the same driver as the server."""

    def __init__(self, db: str) -> None:
        self.postgres = db.startswith("postgresql")
        if self.postgres:
            import psycopg

            self.conn: Any = psycopg.connect(db.replace("postgresql+psycopg://", "postgresql://"),
                                             autocommit=True)
            marks = ", ".join(["%s"] * 9)
        else:
            self.conn = sqlite3.connect(db.removeprefix("sqlite:///"), timeout=30,
                                        isolation_level=None)
            for pragma in ("journal_mode=WAL", "busy_timeout=30000", "synchronous=FULL",
                           "foreign_keys=ON"):
                self.conn.execute(f"PRAGMA {pragma}")
            marks = ", ".join(["?"] * 9)
        self.sql = f"INSERT INTO record_items ({COLUMNS}) VALUES ({marks})"

    def insert(self, rows: list[tuple[Any, ...]]) -> dict[str, float]:
        """Insert ``rows`` in batches; return this process's CPU ms per row."""
        before = time.process_time()
        for start_at in range(0, len(rows), wire.MAX_BATCH):
            batch = rows[start_at:start_at + wire.MAX_BATCH]
            if self.postgres:
                with self.conn.transaction(), self.conn.cursor() as cursor:
                    cursor.executemany(self.sql, batch)
            else:
                self.conn.execute("BEGIN IMMEDIATE")
                self.conn.executemany(self.sql, batch)
                self.conn.execute("COMMIT")
        return {"cpu_ms": (time.process_time() - before) * 1000 / len(rows)}

    def close(self) -> None:
        self.conn.close()


def ids_of(db: str, team: str, email: str) -> tuple[int, int]:
    """Return the (team id, person id) of ``email`` in ``team``."""
    import sqlalchemy as sa

    from bees_cli.cloud.server.tables import people, teams

    engine = sa.create_engine(db)
    try:
        with engine.connect() as conn:
            team_id = conn.execute(sa.select(teams.c.id).where(teams.c.name == team)).scalar_one()
            person_id = conn.execute(
                sa.select(people.c.id).where(people.c.email == email)).scalar_one()
    finally:
        engine.dispose()
    return int(team_id), int(person_id)


def summary(samples: list[float]) -> dict[str, float]:
    """Median, min and max of ``samples``."""
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples)}


def cpu_per_change(name: str, db: str, folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Run the interleaved rounds of pushes (server, base server) and floor inserts on ``db``."""
    tag = secrets.token_hex(3)
    storage = Storage(db)
    tokens = {}
    for side in ("api", "base", "floor"):
        storage.add_team(f"bench-{side}-{tag}")
        tokens[side] = storage.add_person(f"{side}-{tag}@bench.example", f"bench-{side}-{tag}")
    storage.close()
    floor_team, floor_person = ids_of(db, f"bench-floor-{tag}", f"floor-{tag}@bench.example")
    server = [sys.executable, "-m", "bees_cli", "cloud", "serve", "--db", db, "--port", "0"]
    servers = {"api": start(server, folder, f"server-{name}",
                            dict(os.environ, BEES_HOME=str(folder / "home")))}
    if args.base_path:
        servers["base"] = start(server, folder, f"base-{name}", dict(
            os.environ, PYTHONPATH=args.base_path, BEES_HOME=str(folder / "home-base")))
    floor = Floor(db)
    rows: dict[str, list[dict[str, float]]] = {side: [] for side in ("api", "base", "floor")}
    loads = []
    try:
        for n in range(args.rounds):
            loads.append(os.getloadavg()[0])
            inserts = floor_rows(floor_team, floor_person, f"f{n}", args.changes,
                                 n * args.changes)
            order = ["api", "base", "floor"] if n % 2 == 0 else ["floor", "base", "api"]
            for side in order:
                if side == "floor":
                    rows["floor"].append(floor.insert(inserts))
                elif side in servers:
                    proc, url = servers[side]
                    rows[side].append(push_round(url, tokens[side], proc.pid,
                                                 changes_of(f"{side[0]}{n}", args.changes)))
    finally:
        floor.close()
        for proc, _url in servers.values():
            proc.terminate()
            proc.wait(10)
    result: dict[str, Any] = {"database": name, "changes": args.changes, "rounds": rows,
                              "load": summary(loads)}
    for side, samples in rows.items():
        if samples:
            result[side] = {k: summary([s[k] for s in samples]) for k in samples[0]}
    for side in ("api", "base"):
        if rows[side]:
            result[f"ratio_{side}"] = summary([
                a["cpu_ms"] / f["cpu_ms"] for a, f in zip(rows[side], rows["floor"], strict=True)])
    return result


def fill(record_path: Path, count: int) -> None:
    """Put ``count`` items in a fresh local record (one transaction; the outbox notes each)."""
    LocalRecord(record_path)
    SharedRecord(record_path)
    db = sqlite3.connect(record_path)
    with db:
        db.executemany(
            "INSERT INTO items (id, process, title, workspace, run_folder, stage, status, since,"
            " created, input) VALUES (?, 'weekly-report', ?, '/ws', '/runs', 'Draft', 'running',"
            " '2025-01-06T08:00:00Z', '2025-01-06T08:00:00Z', '{}')",
            [(f"01BENCH{n:019d}", f"Weekly report {n}") for n in range(count)])
    db.close()


async def first_push(url: str, token: str, folder: Path, count: int) -> dict[str, Any]:
    """Sync a computer of ``count`` new items with ``bees run``'s client until its outbox is
    empty; return the rounds, the failed ones and the batch sizes used."""
    computer = Computer(machine_id=secrets.token_hex(16), computer="bench-first",
                        person="maya@bench.example", login=Login(url, token),
                        record_path=folder / "first.db", runs_dir=folder)
    fill(computer.record_path, count)
    syncer = Syncer(computer)  # the client bees run makes: 5 s timeout, two retries
    sizes: list[int] = []
    took = syncer.batches.took

    def noting(done: int, seconds: float) -> None:
        sizes.append(done)
        took(done, seconds)

    syncer.batches.took = noting  # type: ignore[method-assign]
    rounds = failed = 0
    errors: list[str] = []
    began = time.perf_counter()
    while True:
        rounds += 1
        try:
            await syncer.sync_once()
        except Exception as error:  # noqa: BLE001 - counted and shown
            failed += 1
            errors.append(str(error))
        if not SharedRecord(computer.record_path).outbox(computer) or rounds >= 20:
            break
    return {"items": count, "rounds": rounds, "failed_rounds": failed, "errors": errors[:3],
            "seconds": round(time.perf_counter() - began, 1), "batches": len(sizes),
            "batch_sizes": summary([float(s) for s in sizes]) if sizes else None,
            "load": os.getloadavg()[0]}


def first(db: str, folder: Path, count: int) -> dict[str, Any]:
    """Run :func:`first_push` against a fresh server on ``db``."""
    tag = secrets.token_hex(3)
    storage = Storage(db)
    storage.add_team(f"bench-first-{tag}")
    token = storage.add_person(f"first-{tag}@bench.example", f"bench-first-{tag}")
    storage.close()
    server = [sys.executable, "-m", "bees_cli", "cloud", "serve", "--db", db, "--port", "0"]
    proc, url = start(server, folder, "server-first", dict(os.environ,
                                                           BEES_HOME=str(folder / "home")))
    try:
        before = cpu_seconds(proc.pid)
        result = asyncio.run(first_push(url, token, folder, count))
        result["server_cpu_ms_per_change"] = (cpu_seconds(proc.pid) - before) * 1000 / count
        return result
    finally:
        proc.terminate()
        proc.wait(10)


def show(value: dict[str, float], digits: int = 3) -> str:
    """``median (min–max)``."""
    return f"{value['median']:.{digits}f} ({value['min']:.{digits}f}–{value['max']:.{digits}f})"


def main() -> None:
    """Parse arguments, measure each database, print a table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--changes", type=int, default=10_000)
    parser.add_argument("--first", type=int, default=100_000,
                        help="items of the first-push run (0: none)")
    parser.add_argument("--base-path", help="also push to a server from this PYTHONPATH")
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--quick", action="store_true", help="one short round (smoke run)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.changes, args.first = 1, 2 * wire.MAX_BATCH, 2 * wire.MAX_BATCH
        args.skip_postgres = args.skip_postgres or not os.environ.get("BEES_TEST_POSTGRES_URL")
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = f"sqlite:///{folder / 'cloud.db'}"
        results.append(cpu_per_change("sqlite", db, folder, args))
        if args.first:
            results.append({"database": "sqlite", "first_push": first(db, folder, args.first)})
    if not args.skip_postgres:
        url, cluster = postgres_url()
        if url is None:
            print("PostgreSQL: not available (set BEES_TEST_POSTGRES_URL)", file=sys.stderr)
        else:
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    results.append(cpu_per_change("postgresql", url, Path(tmp), args))
            finally:
                if cluster:
                    subprocess.run(["bash", str(REPO / ".ci" / "postgres.sh")], check=False,
                                   env=dict(os.environ, BEES_PG_ACTION="stop",
                                            BEES_TEST_POSTGRES_DIR=cluster))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{args.rounds} interleaved rounds of {args.changes} changes; median (min–max);"
          f" cores: {os.cpu_count()}")
    for row in results:
        if "first_push" in row:
            f = row["first_push"]
            print(f"{row['database']}: first push of {f['items']} items: {f['rounds']} round(s),"
                  f" {f['failed_rounds']} failed, {f['batches']} batches"
                  f" (sizes {show(f['batch_sizes'], 0) if f['batch_sizes'] else '-'}),"
                  f" {f['seconds']} s, server {f['server_cpu_ms_per_change']:.3f} ms CPU a change,"
                  f" load {f['load']:.1f}{'; ' + f['errors'][0] if f['errors'] else ''}")
            continue
        print(f"{row['database']} (load {show(row['load'], 1)}):")
        for side, label in (("base", "base server"), ("api", "Bees Cloud"),
                            ("floor", "bare executemany")):
            if side in row:
                extra = (f", slowest batch {show(row[side]['slowest_batch_ms'], 0)} ms"
                         if side != "floor" else "")
                print(f"  {label:<17} {show(row[side]['cpu_ms'])} ms CPU a change{extra}")
        for side in ("base", "api"):
            if f"ratio_{side}" in row:
                print(f"  ratio {side}/floor   {show(row[f'ratio_{side}'], 1)}")


if __name__ == "__main__":
    main()

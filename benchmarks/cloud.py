"""Measure Bees Cloud: claims per second and latency, against a bare INSERT, and idle pulls.

For each database (a SQLite file; PostgreSQL from ``BEES_TEST_POSTGRES_URL``, or a
throwaway cluster started with ``.ci/postgres.sh`` when server binaries are installed):

* owner claims through the real server (``bees cloud serve`` in a subprocess) by
  ``--clients`` concurrent async clients: claims/s, p50 and p99 latency (ms);
* a bare ``INSERT … ON CONFLICT DO NOTHING`` through the same SQLAlchemy engine
  setup, by as many threads, measured in the same run; the ratio API / bare;
* an idle pull (nothing new after the cursor) with 10 and with 100,000 items in the
  team's record: bytes of the answer body and median time (ms).

Usage: ``.venv/bin/python benchmarks/cloud.py [--claims 3000] [--clients 16] [--json]``.
Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bees_cli.cloud import wire  # noqa: E402
from bees_cli.cloud.client import AsyncCloudClient  # noqa: E402
from bees_cli.cloud.server.storage import Storage, create_engine  # noqa: E402


def start_server(db: str, folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``bees cloud serve`` on a free port; return the process and its URL."""
    log = folder / "server.log"
    env = dict(os.environ, BEES_HOME=str(folder / "home"))
    with log.open("wb") as handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bees_cli", "cloud", "serve", "--db", db, "--port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=handle,
            env=env,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"listening on (http://\S+)", log.read_text())
        if found:
            return proc, found.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    raise RuntimeError(log.read_text())


def percentile(values: list[float], q: float) -> float:
    """Return the ``q`` quantile (0..1) of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def api_claims(url: str, token: str, clients: int, claims: int) -> dict[str, float]:
    """``claims`` owner claims of distinct items by ``clients`` concurrent clients."""
    apis = [AsyncCloudClient(url, token, retries=0) for _ in range(clients)]
    latencies: list[float] = []
    per_client = claims // clients

    async def run(c: int) -> None:
        for n in range(per_client):
            claim = wire.OwnerClaim(item_id=f"b{c}-{n}", machine_id=f"m{c}", computer_name="c")
            start = time.perf_counter()
            await apis[c].claim_owner(claim)
            latencies.append(time.perf_counter() - start)

    await asyncio.gather(*(apis[c].me() for c in range(clients)))  # warm connections
    began = time.perf_counter()
    await asyncio.gather(*(run(c) for c in range(clients)))
    elapsed = time.perf_counter() - began
    await asyncio.gather(*(a.aclose() for a in apis))
    return {
        "claims_per_s": len(latencies) / elapsed,
        "p50_ms": percentile(latencies, 0.50) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
    }


def bare_inserts(db: str, threads: int, count: int) -> dict[str, float]:
    """Time ``count`` one-row ``INSERT … ON CONFLICT DO NOTHING`` transactions by ``threads``."""
    engine = create_engine(db, pool_size=threads)
    table = sa.Table(
        "bench_bare",
        sa.MetaData(),
        sa.Column("k", sa.String(100), primary_key=True),
        sa.Column("v", sa.Integer),
    )
    table.drop(engine, checkfirst=True)
    table.create(engine)
    if engine.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
    latencies: list[float] = []
    lock = threading.Lock() if engine.dialect.name == "sqlite" else None

    def run(t: int) -> None:
        for n in range(count // threads):
            start = time.perf_counter()
            if lock is not None:
                lock.acquire()
            try:
                with engine.begin() as conn:
                    conn.execute(insert(table).values(k=f"{t}-{n}", v=n).on_conflict_do_nothing())
            finally:
                if lock is not None:
                    lock.release()
            latencies.append(time.perf_counter() - start)

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    began = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - began
    table.drop(engine)
    engine.dispose()
    return {
        "inserts_per_s": len(latencies) / elapsed,
        "p50_ms": percentile(latencies, 0.50) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
    }


def fill_record(storage: Storage, token: str, items: int) -> None:
    """Push ``items`` items into the record of ``token``'s team, 1,000 per batch."""
    when = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
    for start in range(0, items, wire.MAX_BATCH):
        changes = [
            wire.RecordChange(
                item_id=f"item-{n:06d}",
                fields={"stage": "Draft", "status": "running", "title": f"Report {n}"},
                origin_time=when,
                machine_id="laptop",
            )
            for n in range(start, min(items, start + wire.MAX_BATCH))
        ]
        storage.push(token, wire.RecordPush(changes=changes))


def idle_pull(url: str, token: str, repeats: int = 200) -> dict[str, float]:
    """Pull to the end, then time ``repeats`` idle pulls (nothing after the cursor)."""
    headers = {"authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        cursor = 0
        while True:
            page = http.get("/v1/record/pull", params={"since": cursor}).json()
            cursor = page["cursor"]
            if not page["more"]:
                break
        times = []
        size = 0
        for _ in range(repeats):
            start = time.perf_counter()
            response = http.get("/v1/record/pull", params={"since": cursor})
            times.append(time.perf_counter() - start)
            size = len(response.content)
            assert response.json()["changes"] == []
    return {"bytes": size, "median_ms": statistics.median(times) * 1000}


def measure(name: str, db: str, clients: int, claims: int) -> dict[str, Any]:
    """Run every measurement on database ``db``."""
    folder = Path(tempfile.mkdtemp(prefix="bees-bench-"))
    storage = Storage(db)
    suffix = os.urandom(3).hex()
    teams = {}
    for label in ("claims", "small", "large"):
        team = f"bench-{label}-{suffix}"
        storage.add_team(team)
        teams[label] = storage.add_person("bench@example.com", team)
    fill_record(storage, teams["small"], 10)
    fill_record(storage, teams["large"], 100_000)
    proc, url = start_server(db, folder)
    try:
        api = asyncio.run(api_claims(url, teams["claims"], clients, claims))
        bare = bare_inserts(db, clients, claims)
        small = idle_pull(url, teams["small"])
        large = idle_pull(url, teams["large"])
    finally:
        proc.terminate()
        proc.wait(10)
        storage.close()
    return {
        "database": name,
        "api": api,
        "bare": bare,
        "ratio": api["claims_per_s"] / bare["inserts_per_s"],
        "idle_pull_10": small,
        "idle_pull_100000": large,
    }


def postgres_url() -> tuple[str | None, str | None]:
    """Return (URL, cluster folder to stop) for PostgreSQL, or (None, None)."""
    url = os.environ.get("BEES_TEST_POSTGRES_URL")
    if url:
        return url, None
    script = (
        f". {REPO / '.ci' / 'postgres.sh'} >&2"
        " && echo $BEES_TEST_POSTGRES_URL $BEES_TEST_POSTGRES_DIR"
    )
    done = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        env=dict(os.environ, BEES_PG_NO_INSTALL="1", BEES_PG_FSYNC="on"),
    )
    if done.returncode != 0:
        return None, None
    url, folder = done.stdout.split()
    return url, folder


def main() -> None:
    """Parse arguments, measure each database, print a table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--skip-postgres", action="store_true")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        results.append(measure("sqlite", f"sqlite:///{tmp}/bench.db", args.clients, args.claims))
    if not args.skip_postgres:
        url, folder = postgres_url()
        if url is None:
            print("PostgreSQL: not available (set BEES_TEST_POSTGRES_URL)", file=sys.stderr)
        else:
            try:
                results.append(measure("postgresql", url, args.clients, args.claims))
            finally:
                if folder:
                    subprocess.run(
                        ["bash", str(REPO / ".ci" / "postgres.sh")],
                        env=dict(os.environ, BEES_PG_ACTION="stop", BEES_TEST_POSTGRES_DIR=folder),
                    )
    if args.json:
        print(json.dumps(results, indent=2))
        return
    cores = os.cpu_count()
    print(f"{args.clients} concurrent clients, {args.claims} claims per database (cores: {cores})")
    for r in results:
        a, b = r["api"], r["bare"]
        print(
            f"{r['database']:<10} API {a['claims_per_s']:7.0f} claims/s"
            f"  p50 {a['p50_ms']:6.2f} ms  p99 {a['p99_ms']:6.2f} ms"
        )
        print(
            f"{'':<10} bare INSERT … ON CONFLICT {b['inserts_per_s']:7.0f}/s"
            f"  p50 {b['p50_ms']:6.2f} ms  p99 {b['p99_ms']:6.2f} ms"
            f"  → API/bare {r['ratio']:.2f}"
        )
        for size in ("10", "100000"):
            p = r[f"idle_pull_{size}"]
            print(
                f"{'':<10} idle pull, {int(size):>7,} items: {p['bytes']} bytes,"
                f" {p['median_ms']:.2f} ms median"
            )


if __name__ == "__main__":
    main()

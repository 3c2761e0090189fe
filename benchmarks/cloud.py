"""Measure Bees Cloud: owner claims per second against their floors, and idle pulls.

For each database (a SQLite file; PostgreSQL from ``BEES_TEST_POSTGRES_URL``, or a
throwaway cluster started with ``.ci/postgres.sh`` when server binaries are installed),
``--rounds`` interleaved rounds of ``--seconds`` each, reported as median (min–max):

* owner claims through the real server (``bees cloud serve`` in a subprocess), loaded by
  ``wrk`` (a C load generator, so the client does not eat the server's CPU) with
  ``--clients`` connections and a Lua script that makes unique item ids: claims/s, and the
  server's CPU ms per claim (utime + stime of its process);
* floor (a): a minimal bare ASGI app on uvicorn, no framework, doing the same
  ``INSERT … ON CONFLICT`` (SQLite: with the same pragmas, committed in groups by one
  writer thread as the server's group commit does; PostgreSQL:
  on an async psycopg connection, autocommit) (benchmarks/cloud_floors.py), same load;
* SQLite floor (b) / PostgreSQL floor (c): bare inserts of the same shape by ``--clients``
  threads through the same driver, into a separate file or table (not the server's);
* an idle pull (nothing new after the cursor) with 10 and with 100,000 items in the
  team's record: bytes of the answer body and median time (ms) (``--skip-pull``: none).

``--base-path DIR`` loads a second server (``PYTHONPATH=DIR``, e.g. an older commit's
``git archive``) in the same rounds, so before and after share each round's load.

Usage: ``.venv/bin/python benchmarks/cloud.py [--rounds 5] [--seconds 4] [--json]``
(``--quick``: one round of 1 s, a smoke run; needs ``wrk``: ``apt-get install wrk``).
Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bees_cli.cloud import wire  # noqa: E402
from bees_cli.cloud.server.storage import Storage  # noqa: E402
from benchmarks import cloud_floors  # noqa: E402

WRK_SCRIPT = """
local n, prefix = 0, ""
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
function init(args)
  prefix = args[1] .. "-" .. tid
  wrk.method = "POST"
  wrk.path = args[2]
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. args[3]
end
function request()
  n = n + 1
  local body = '{"item_id":"' .. prefix .. "-" .. n .. '","machine_id":"m' .. tid
    .. '","computer_name":"bench"}'
  return wrk.format(nil, nil, nil, body)
end
function done(summary, latency, requests)
  local bad = summary.errors.status + summary.errors.connect + summary.errors.read
    + summary.errors.write + summary.errors.timeout
  io.write(string.format("RESULT %d %d %d %d %d\\n", summary.requests, bad,
    summary.duration, latency:percentile(50), latency:percentile(99)))
end
"""


def start(command: list[str], folder: Path, name: str, env: dict[str, str]) -> tuple[Any, str]:
    """Start a server process that prints ``listening on URL``; return it and the URL."""
    log = folder / f"{name}.log"
    with log.open("wb") as handle:
        proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=handle, env=env, cwd=folder
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


def cpu_seconds(pid: int) -> float:
    """Return the user + system CPU seconds used so far by process ``pid`` (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk(url: str, path: str, token: str, tag: str, pid: int, args: argparse.Namespace) -> Any:
    """Load ``url`` + ``path`` with wrk for ``args.seconds``; return claims/s, the server's
    CPU ms per claim, p50/p99 ms and the failed requests."""
    script = Path(tempfile.gettempdir()) / "bees-claims.lua"
    script.write_text(WRK_SCRIPT)
    threads = min(2, args.clients)
    command = ["wrk", f"-t{threads}", f"-c{args.clients}", f"-d{args.seconds}s", "-s", str(script)]
    before = cpu_seconds(pid)
    done = subprocess.run(
        [*command, url, "--", tag, path, token], capture_output=True, text=True, check=True
    )
    cpu = cpu_seconds(pid) - before
    found = re.search(r"RESULT (\d+) (\d+) (\d+) (\d+) (\d+)", done.stdout)
    if found is None:
        raise RuntimeError(done.stdout + done.stderr)
    requests, bad, duration_us, p50, p99 = (int(x) for x in found.groups())
    return {
        "per_s": requests / (duration_us / 1e6),
        "cpu_ms": cpu * 1000 / max(requests, 1),
        "p50_ms": p50 / 1000,
        "p99_ms": p99 / 1000,
        "failed": bad,
        "requests": requests,
    }


def summary(samples: list[float]) -> dict[str, float]:
    """Return median, min and max of ``samples``."""
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples)}


def claims(name: str, db: str, folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Run the interleaved rounds of claims and floors on database ``db``."""
    storage = Storage(db)
    team = f"bench-claims-{os.urandom(3).hex()}"
    storage.add_team(team)
    token = storage.add_person("bench@example.com", team)
    storage.close()
    env = dict(os.environ, BEES_HOME=str(folder / "home"))
    if args.server_path:
        env["PYTHONPATH"] = args.server_path
    server = [sys.executable, "-m", "bees_cli", "cloud", "serve", "--db", db, "--port", "0"]
    procs = [start(server, folder, f"server-{name}", env)]
    base = None
    if args.base_path:
        base_env = dict(env, PYTHONPATH=args.base_path, BEES_HOME=str(folder / "home-base"))
        base = start(server, folder, f"base-{name}", base_env)
    floor_db = str(folder / f"floor-{name}.db")
    if name == "sqlite":
        floor = [sys.executable, str(Path(cloud_floors.__file__)), "serve", floor_db]
        procs.append(start(floor, folder, "floor-asgi", dict(os.environ, PYTHONPATH=str(REPO))))
        insert = cloud_floors.sqlite_inserter(str(folder / "floor-threads.db"))
    else:
        dsn = db.replace("postgresql+psycopg://", "postgresql://")
        floor = [sys.executable, str(Path(cloud_floors.__file__)), "serve", dsn]
        procs.append(start(floor, folder, "floor-asgi", dict(os.environ, PYTHONPATH=str(REPO))))
        insert = cloud_floors.postgres_inserter(dsn)
    rows: dict[str, list[dict[str, float]]] = {"base": [], "api": [], "asgi": [], "threads": []}
    try:
        for n in range(args.rounds):
            if base is not None:
                (base_proc, base_url) = base
                rows["base"].append(
                    wrk(base_url, "/v1/owners/claim", token, f"b{n}", base_proc.pid, args)
                )
            (api_proc, api_url) = procs[0]
            rows["api"].append(wrk(api_url, "/v1/owners/claim", token, f"a{n}", api_proc.pid, args))
            if len(procs) > 1:
                (floor_proc, floor_url) = procs[1]
                rows["asgi"].append(wrk(floor_url, "/", "-", f"f{n}", floor_proc.pid, args))
            rows["threads"].append(
                cloud_floors.thread_inserts(insert, args.clients, args.seconds, f"t{n}")
            )
    finally:
        for proc, _url in [*procs, *([base] if base else [])]:
            proc.terminate()
            proc.wait(10)
    storage = Storage(db, migrate=False)
    held = len(storage.list_owners(token))
    storage.close()
    claimed = sum(int(r["requests"]) for r in rows["api"] + rows["base"])
    result: dict[str, Any] = {"database": name, "rounds": rows, "owner_rows": (held, claimed)}
    for side in ("base", "api", "asgi", "threads"):
        if rows[side]:
            result[side] = {key: summary([r[key] for r in rows[side]]) for key in rows[side][0]}
    for side in ("asgi", "threads"):
        for api in ("api", "base"):
            if rows[side] and rows[api]:
                pairs = zip(rows[api], rows[side], strict=True)
                ratios = [a["per_s"] / f["per_s"] for a, f in pairs]
                result[f"ratio_{side}" if api == "api" else f"ratio_base_{side}"] = summary(ratios)
    return result


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


def measure(name: str, db: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run every measurement on database ``db``."""
    folder = Path(tempfile.mkdtemp(prefix="bees-bench-"))
    result = claims(name, db, folder, args)
    if args.skip_pull:
        return result
    storage = Storage(db)
    suffix = os.urandom(3).hex()
    teams = {}
    for label in ("small", "large"):
        team = f"bench-{label}-{suffix}"
        storage.add_team(team)
        teams[label] = storage.add_person("bench@example.com", team)
    fill_record(storage, teams["small"], 10)
    fill_record(storage, teams["large"], 100_000)
    env = dict(os.environ, BEES_HOME=str(folder / "home"))
    server = [sys.executable, "-m", "bees_cli", "cloud", "serve", "--db", db, "--port", "0"]
    proc, url = start(server, folder, "server-pull", env)
    try:
        result["idle_pull_10"] = idle_pull(url, teams["small"])
        result["idle_pull_100000"] = idle_pull(url, teams["large"])
    finally:
        proc.terminate()
        proc.wait(10)
        storage.close()
    return result


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


def show(value: dict[str, float], digits: int = 0) -> str:
    """Format a summary as ``median (min–max)``."""
    return f"{value['median']:.{digits}f} ({value['min']:.{digits}f}–{value['max']:.{digits}f})"


def main() -> None:
    """Parse arguments, measure each database, print a table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--skip-sqlite", action="store_true")
    parser.add_argument("--skip-pull", action="store_true")
    parser.add_argument(
        "--server-path", help="PYTHONPATH for the Bees server (e.g. an older checkout)"
    )
    parser.add_argument(
        "--base-path",
        help="also load a second server from this PYTHONPATH (e.g. an older checkout's"
        " `git archive`) in the same rounds, before the first: before and after in one run",
    )
    parser.add_argument(
        "--quick", action="store_true",
        help="one round of 1 s on SQLite (and on PostgreSQL only when BEES_TEST_POSTGRES_URL"
        " is set), no idle pulls: a smoke run, the figures mean little",
    )
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.skip_pull = 1, 1, True
        args.skip_postgres = args.skip_postgres or not os.environ.get("BEES_TEST_POSTGRES_URL")
    results = []
    load_before = os.getloadavg()[0]
    if not args.skip_sqlite:
        with tempfile.TemporaryDirectory() as tmp:
            results.append(measure("sqlite", f"sqlite:///{tmp}/bench.db", args))
    if not args.skip_postgres:
        url, folder = postgres_url()
        if url is None:
            print("PostgreSQL: not available (set BEES_TEST_POSTGRES_URL)", file=sys.stderr)
        else:
            try:
                results.append(measure("postgresql", url, args))
            finally:
                if folder:
                    subprocess.run(
                        ["bash", str(REPO / ".ci" / "postgres.sh")],
                        env=dict(os.environ, BEES_PG_ACTION="stop", BEES_TEST_POSTGRES_DIR=folder),
                    )
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"{args.clients} connections, {args.rounds} interleaved rounds of {args.seconds} s;"
        f" median (min–max); load {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
        f" on {os.cpu_count()} cores"
    )
    names = {
        "base": "API, base",
        "api": "API claims",
        "asgi": "(a) bare ASGI",
        "threads": "bare inserts",
    }
    for r in results:
        for side, label in names.items():
            if side not in r:
                continue
            v = r[side]
            failed = f"  failed {v['failed']['max']:.0f}" if "failed" in v else ""
            print(
                f"{r['database']:<10} {label:<14} {show(v['per_s'])}/s"
                f"  CPU {show(v['cpu_ms'], 3)} ms each{failed}"
            )
        held, claimed = r["owner_rows"]
        print(f"{'':<10} owner rows made by the API claims: {held} of {claimed} (distinct ids)")
        for side in ("asgi", "threads"):
            if f"ratio_base_{side}" in r:
                ratio = show(r[f"ratio_base_{side}"], 2)
                print(f"{'':<10} ratio API, base / {names[side]}: {ratio}")
            if f"ratio_{side}" in r:
                print(f"{'':<10} ratio API / {names[side]}: {show(r[f'ratio_{side}'], 2)}")
        for size in ("10", "100000"):
            if f"idle_pull_{size}" in r:
                p = r[f"idle_pull_{size}"]
                print(
                    f"{'':<10} idle pull, {int(size):>7,} items: {p['bytes']} bytes,"
                    f" {p['median_ms']:.2f} ms median"
                )


if __name__ == "__main__":
    main()

"""Measure one shared-record sync round: time and bytes, by how many items this computer has.

A real Bees Cloud (``bees cloud serve`` on a SQLite file, in a subprocess) and one
computer whose local record holds 10, 1,000 and 10,000 items (all pushed once first).
For each size, two kinds of round, each the median of ``--rounds``:

* idle: nothing changed since the last round (skew request + empty pull);
* one changed: one item's status changed (skew + a push of one change + a pull of it).

Bytes are counted on the wire by a counting httpx transport: request and response
bodies, and the same with the request/status lines and headers.

Usage: ``.venv/bin/python benchmarks/sync.py [--rounds 7] [--json]``. Numbers are printed,
never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bees_cli.cloud.login import Login  # noqa: E402
from bees_cli.cloud.server.storage import Storage  # noqa: E402
from bees_cli.machine.computer import Computer  # noqa: E402
from bees_cli.record.local import LocalRecord  # noqa: E402
from bees_cli.record.sync import SharedRecord, Syncer  # noqa: E402
from benchmarks.cloud import start_server  # noqa: E402

SIZES = (10, 1_000, 10_000)


class Counting(httpx.AsyncBaseTransport):
    """An httpx transport that counts the bytes each way (bodies, and with headers)."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.reset()

    def reset(self) -> None:
        """Start counting from zero."""
        self.body_out = self.body_in = self.head_out = self.head_in = self.requests = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        self.requests += 1
        self.body_out += len(body)
        self.head_out += len(f"{request.method} {request.url.raw_path.decode()} HTTP/1.1\r\n")
        self.head_out += sum(len(k) + len(v) + 4 for k, v in request.headers.raw) + 2
        response = await self.inner.handle_async_request(request)
        content = await response.aread()
        self.body_in += len(content)
        self.head_in += len(f"HTTP/1.1 {response.status_code} OK\r\n")
        self.head_in += sum(len(k) + len(v) + 4 for k, v in response.headers.raw) + 2
        return httpx.Response(response.status_code, headers=response.headers, content=content,
                              request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def fill(record_path: Path, count: int) -> list[str]:
    """Put ``count`` items in a fresh local record (one transaction); return their ids."""
    LocalRecord(record_path)
    SharedRecord(record_path)
    ids = [f"01BENCH{n:019d}" for n in range(count)]
    db = sqlite3.connect(record_path)
    with db:
        db.executemany(
            "INSERT INTO items (id, process, title, workspace, run_folder, stage, status, since,"
            " created, input) VALUES (?, 'weekly-report', ?, '/ws', '/runs', 'Draft', 'running',"
            " '2025-01-06T08:00:00Z', '2025-01-06T08:00:00Z', '{}')",
            [(i, f"Weekly report {n}") for n, i in enumerate(ids)])
    db.close()
    return ids


async def measure(url: str, token: str, folder: Path, count: int, rounds: int) -> dict[str, Any]:
    """Measure idle and one-changed rounds for a computer with ``count`` items."""
    counting = Counting()
    computer = Computer(machine_id=secrets.token_hex(16), computer=f"bench-{count}",
                        person="maya@bench.example", login=Login(url, token),
                        record_path=folder / f"record-{count}.db", runs_dir=folder,
                        transport=counting)
    ids = fill(computer.record_path, count)
    syncer = Syncer(computer)
    started = time.perf_counter()
    first = await syncer.sync_once()
    first_seconds = time.perf_counter() - started
    record = LocalRecord(computer.record_path)
    result: dict[str, Any] = {"items": count, "first_push_items": first.pushed,
                              "first_round_ms": round(first_seconds * 1000, 1)}
    for kind in ("idle", "one_changed"):
        times, bodies, wires, requests = [], [], [], []
        for n in range(rounds):
            if kind == "one_changed":
                record.set_state(ids[n % len(ids)], status="waiting", stage="Draft",
                                 reason=f"round {n}")
            counting.reset()
            started = time.perf_counter()
            done = await syncer.sync_once()
            times.append(time.perf_counter() - started)
            assert done.pushed == (1 if kind == "one_changed" else 0), done
            bodies.append(counting.body_out + counting.body_in)
            wires.append(counting.body_out + counting.body_in + counting.head_out
                         + counting.head_in)
            requests.append(counting.requests)
        result[kind] = {"median_ms": round(statistics.median(times) * 1000, 2),
                        "body_bytes": int(statistics.median(bodies)),
                        "wire_bytes": int(statistics.median(wires)),
                        "requests": int(statistics.median(requests))}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = f"sqlite:///{folder / 'cloud.db'}"
        storage = Storage(db)
        storage.add_team("bench")
        token = storage.add_person("maya@bench.example", "bench")
        storage.close()
        proc, url = start_server(db, folder)
        try:
            results = [asyncio.run(measure(url, token, folder, n, args.rounds)) for n in SIZES]
        finally:
            proc.terminate()
            proc.wait(10)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"one sync round (median of {args.rounds}); Bees Cloud on SQLite, loopback HTTP")
    print(f"{'items':>7}  {'kind':<12} {'ms':>8} {'requests':>8} {'body B':>8} {'wire B':>8}")
    for row in results:
        for kind in ("idle", "one_changed"):
            data = row[kind]
            print(f"{row['items']:>7}  {kind:<12} {data['median_ms']:>8} {data['requests']:>8}"
                  f" {data['body_bytes']:>8} {data['wire_bytes']:>8}")
    for row in results:
        print(f"first round of {row['items']} items (pushes all): {row['first_round_ms']} ms")


if __name__ == "__main__":
    main()

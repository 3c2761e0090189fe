"""The app's item list at many items: an unchanged poll, and the first page against a floor.

Run: ``.venv/bin/python benchmarks/app_list.py [--items 100000] [--rounds 7]``
(``--quick``: one round over 200 items, a smoke run).

It makes a computer (``BEES_HOME`` in a temporary folder) with ``--items`` items copied from
one real item of ``examples/weekly-report`` (as ``benchmarks/status.py`` does: most done,
some failed, running, waiting for approval with a held request), builds the app over it
(:func:`bees_cli.app.server.create_app`, signed in with its secret) and calls it in this
process through httpx's ASGI transport, as a browser's requests would reach it, measuring
the process's CPU time (user + system, every thread: the list reads its rows in a worker
thread) per request:

* ``poll (unchanged)``: ``GET /items/rows?show=all&n=50&v=VERSION`` with the version the
  page has (answered 204), what an open tab sends every second; goal < 5 ms (issue 29,
  point 1);
* ``notes poll (unchanged)``: ``GET /items/notes?v=VERSION``, the page's other poll;
* ``first page``: ``GET /items`` (50 rows, the notes, the filters);
* floor: a bare ASGI app behind the same transport that reads the same 50 rows with the
  same query (the order of ``items_listing``, the index ``bees status`` reads) from the same
  record and renders them with one Jinja2 template in a minimal page; goal: first page
  within 2x.

Rounds are interleaved (each round: the floor, the first page, the polls), after one warm-up
of each; it prints the median and min-max per request over ``--rounds`` rounds, the ratio,
and the load average. It measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from status import fill  # noqa: E402 - benchmarks/status.py, beside this file

HOST = "bees-0123456789abcdef0123456789abcdef.localhost"
PORT = 8765

FLOOR_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Items</title></head><body><main>
<h1>Items</h1><table><thead><tr><th>Item</th><th>Process</th><th>Stage</th><th>Status</th>
<th>Agent</th><th>Where</th><th>Since</th></tr></thead><tbody>
{% for r in rows %}<tr data-item-id="{{ r.id }}"><th><a href="/items/{{ r.id }}">{{ r.title }}</a>
</th><td>{{ r.process }}</td><td>{{ r.stage }}</td><td>{{ r.status }}</td>
<td>{{ r.agent or "-" }}</td><td>{{ here }}</td><td>{{ r.since }}</td></tr>
{% endfor %}</tbody></table></main></body></html>"""


def floor_app(record: Path) -> Callable[..., Awaitable[None]]:
    """Return the floor: a bare ASGI app reading the 50 rows as the list does (same
    columns, same order, same index) and rendering them with one Jinja2 template."""
    import sqlite3

    import jinja2

    from bees_cli.record.schema import ENDED_FIRST

    template = jinja2.Environment(autoescape=True).from_string(FLOOR_PAGE)
    query = ("SELECT id, process, title, stage, status, agent, since FROM items"
             f" ORDER BY {ENDED_FIRST}, since DESC, id DESC LIMIT 50")

    def rows() -> list[sqlite3.Row]:
        db = sqlite3.connect(record)
        db.row_factory = sqlite3.Row
        try:
            return db.execute(query).fetchall()
        finally:
            db.close()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        found = await asyncio.to_thread(rows)
        body = template.render(rows=found, here="bench").encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/html; charset=utf-8")]})
        await send({"type": "http.response.body", "body": body})

    return app


def cpu() -> float:
    """This process's CPU seconds (user + system, every thread; nanosecond clock)."""
    return time.process_time()


async def per_call(call: Callable[[], Awaitable[int]], times: int, expect: int) -> float:
    """Return the CPU seconds per call of ``call`` (which answers a status), made ``times``
    times; each must answer ``expect`` (a poll: or 200, when its part changed)."""
    start = cpu()
    for _ in range(times):
        status = await call()
        assert status == expect or (expect == 204 and status == 200), status
    return (cpu() - start) / times


READ_AGAIN: dict[str, int] = {}
"""Poll → how many of its answers were a new part (200: the minute of the ages, or every
10 s for the notes), counted in its figures; the rest were 204."""


async def measure(items: int, rounds: int, polls: int, pages: int) -> None:
    """Fill a computer with ``items`` items and print the figures (see the module)."""
    import httpx

    from bees_cli.app.security import Guard
    from bees_cli.app.server import create_app
    from bees_cli.machine.computer import Computer
    from bees_cli.usecases import Bees

    home = Path(tempfile.mkdtemp(prefix="bees-app-list-"))
    os.environ["BEES_HOME"] = str(home)
    started = time.monotonic()
    record = fill(home, items, sys.executable)
    print(f"{items:,} items made in {time.monotonic() - started:.1f} s: {record}")
    guard = Guard(port=PORT, host=HOST)
    app = create_app(Bees(Computer.load(home)), guard)
    base = f"http://{HOST}:{PORT}"
    bees = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base)
    bare = httpx.AsyncClient(transport=httpx.ASGITransport(app=floor_app(record)),
                             base_url=base)
    async with bees, bare:
        assert (await bees.get(f"/?secret={guard.secret}")).status_code == 303
        page = await bees.get("/items")
        shown = len(re.findall(r'<tr data-item-id="', page.text))
        found = re.search(r'<tbody id="rows"[^>]*"v": "([0-9a-f]{16})"', page.text)
        noted = re.search(r'<div id="notes"[^>]*"v": "([0-9a-f]{16})"', page.text)
        assert found is not None and noted is not None and shown == 50, page.text[:500]
        seen, notes_seen = found.group(1), noted.group(1)
        print(f"first page: {len(page.content):,} bytes, {shown} rows")

        versions = {"rows": seen, "notes": notes_seen}

        async def polled(name: str, url: str) -> int:
            answer = await bees.get(f"{url}v={versions[name]}")
            if answer.status_code == 200:  # a new part: the page takes its version
                READ_AGAIN[name] = READ_AGAIN.get(name, 0) + 1
                found = re.search(r'"v": "([0-9a-f]{16})"', answer.text)
                assert found is not None
                versions[name] = found.group(1)
            return answer.status_code

        async def poll() -> int:
            return await polled("rows", "/items/rows?show=all&n=50&")

        async def notes() -> int:
            return await polled("notes", "/items/notes?")

        async def first() -> int:
            return (await bees.get("/items")).status_code

        async def floor() -> int:
            return (await bare.get("/")).status_code

        series: dict[str, list[float]] = {"floor": [], "first page": [],
                                          "poll (unchanged)": [],
                                          "notes poll (unch.)": []}
        for warm in (floor, first):
            await per_call(warm, 2, 200)
        await per_call(poll, 20, 204)
        await per_call(notes, 20, 204)
        for _ in range(rounds):
            series["floor"].append(await per_call(floor, pages, 200))
            series["first page"].append(await per_call(first, pages, 200))
            series["poll (unchanged)"].append(await per_call(poll, polls, 204))
            series["notes poll (unch.)"].append(await per_call(notes, polls, 204))
    load = os.getloadavg()
    print(f"{rounds} interleaved rounds ({pages} pages, {polls} polls each), load average"
          f" {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores;"
          " CPU per request, median (min-max):")
    medians = {}
    for label, values in series.items():
        medians[label] = statistics.median(values)
        print(f"  {label:18} {medians[label] * 1000:8.2f} ms "
              f"({min(values) * 1000:.2f}-{max(values) * 1000:.2f})")
    print(f"  first page / floor: {medians['first page'] / medians['floor']:.2f}x (goal <= 2x)")
    print(f"  polls answered with a new part (counted above): {READ_AGAIN or 'none'}")
    print(f"  unchanged polls: rows {medians['poll (unchanged)'] * 1000:.3f} ms, notes "
          f"{medians['notes poll (unch.)'] * 1000:.3f} ms (goal < 5 ms)")


def main() -> int:
    """Parse the arguments and measure."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--polls", type=int, default=200, help="polls per round")
    parser.add_argument("--pages", type=int, default=10, help="pages per round")
    parser.add_argument("--quick", action="store_true",
                        help="one round over 200 items (a smoke run: the figures mean little)")
    args = parser.parse_args()
    if args.quick:
        args.items, args.rounds, args.polls, args.pages = 200, 1, 5, 2
    asyncio.run(measure(args.items, args.rounds, args.polls, args.pages))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

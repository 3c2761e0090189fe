"""Opening a run folder's listed files through directory descriptors and hashing them in order."""

from __future__ import annotations

import os
import stat
import threading
from collections import deque
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from bees_cli.handover.folder import CHUNK_BYTES, OPEN_FLAGS, NotRegular, hash_fd

ROOT_FLAGS = (getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0)
              | getattr(os, "O_CLOEXEC", 0))
"""How the run folder is opened: as a place to look up names from (``O_PATH`` where there is
one: like a path walk, it needs no read permission on the folder)."""
DIR_FLAGS = ROOT_FLAGS | getattr(os, "O_NOFOLLOW", 0)
"""How a folder on a listed path is opened: the same, never through a symlink (a symlink
there fails with ``ENOTDIR`` or ``ELOOP``)."""

MAX_OPEN_FOLDERS = 64  # descriptors kept per :class:`FolderFds` before it closes them all
LOOKAHEAD = 2  # batches hashed ahead of the one being reported, per thread
BATCH_BYTES = 4 * 1024 * 1024  # a batch holds files up to this many bytes, or one larger file

T = TypeVar("T")
R = TypeVar("R")


def hashing_threads() -> int:
    """Threads to hash on: two when this process may run on two cores or more, else one.

    Returns:
        1 or 2 (from ``os.sched_getaffinity`` where it exists, else ``os.cpu_count``).
    """
    if hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0))
    else:  # pragma: no cover - macOS and Windows
        cores = os.cpu_count() or 1
    return 2 if cores >= 2 else 1


def batches(items: Sequence[T], size: Callable[[T], int], limit: int | None = None
            ) -> list[list[T]]:
    """Split ``items`` in order into runs whose sizes add up to at most ``limit`` bytes
    (default :data:`BATCH_BYTES`; a larger item makes a run of its own).

    Returns:
        The runs, none empty; together they are ``items`` in order.
    """
    limit = BATCH_BYTES if limit is None else limit
    runs: list[list[T]] = []
    run: list[T] = []
    held = 0
    for item in items:
        if run and held + size(item) > limit:
            runs.append(run)
            run, held = [], 0
        run.append(item)
        held += size(item)
    if run:
        runs.append(run)
    return runs


class FolderFds:
    """Descriptors of the folders under one open root, each opened relative to its parent
    without following a symlink, so a listed path is walked once and no symlink swapped in
    after a check is ever followed (DESIGN.md: a symlink cannot travel safely).

    Not shared between threads: each thread makes its own over the one root descriptor.

    Args:
        root_fd: the run folder, open (the caller closes it).
    """

    def __init__(self, root_fd: int) -> None:
        self.root_fd = root_fd
        self.open: dict[str, int] = {}
        self.buffer = memoryview(bytearray(CHUNK_BYTES))

    def folder(self, rel: str) -> int:
        """Return a descriptor of folder ``rel`` (``""`` is the root; POSIX, no ``..``).

        Raises:
            OSError: a part is missing, not a folder, or a symlink (``ELOOP``/``ENOTDIR``).
        """
        if rel == "":
            return self.root_fd
        fd = self.open.get(rel)
        if fd is None:
            parent, _, name = rel.rpartition("/")
            parent_fd = self.folder(parent)
            if len(self.open) >= MAX_OPEN_FOLDERS:
                self.close()
                parent_fd = self.folder(parent)
            fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
            self.open[rel] = fd
        return fd

    def lstat(self, rel: str) -> os.stat_result:
        """``lstat`` of the listed path ``rel``, reached through folder descriptors.

        Raises:
            OSError: it or a folder on its way is missing, unreadable or a symlink.
        """
        parent, _, name = rel.rpartition("/")
        return os.stat(name, dir_fd=self.folder(parent), follow_symlinks=False)

    def hash(self, rel: str, cap: int, on_chunk: Callable[[int], None] | None) -> tuple[int, str]:
        """Open the listed path ``rel`` without following any symlink and hash it
        (:func:`~bees_cli.handover.folder.hash_fd`, at most ``cap + 1`` bytes).

        Raises:
            NotRegular: it is a symlink (``O_NOFOLLOW``) or not a regular file once open.
            OSError: it or a folder on its way is missing, unreadable or a symlink.
        """
        parent, _, name = rel.rpartition("/")
        try:
            fd = os.open(name, OPEN_FLAGS, dir_fd=self.folder(parent))
        except OSError as error:
            if not _is_link(self, rel):
                raise
            raise NotRegular() from error
        try:
            return hash_fd(fd, cap, on_chunk, self.buffer)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Close every folder descriptor this opened (not the root)."""
        for fd in self.open.values():
            os.close(fd)
        self.open.clear()


def _is_link(fds: FolderFds, rel: str) -> bool:
    try:
        return stat.S_ISLNK(fds.lstat(rel).st_mode)
    except OSError:
        return False


def in_order(items: Sequence[T], work: Callable[[T], R], threads: int,
             turn: Callable[[int], None] = lambda index: None,
             ) -> Generator[tuple[T, R | BaseException], None, None]:
    """Yield ``(item, work(item) or the exception it raised)`` in the order of ``items``,
    running ``work`` on ``threads`` threads a few items ahead of the caller.

    The caller may stop early (``break``, then ``close()`` the iterator): items not started
    are never worked on, and the ones under way finish before this returns.

    Args:
        items: what to work on.
        work: the work, called on a worker thread (or this one, with one thread).
        threads: how many threads work at once (1: here, one item after the other).
        turn: called with an item's index before its outcome is waited for (see
            :class:`ChunksInOrder`).
    """
    if threads <= 1:
        for index, item in enumerate(items):
            turn(index)
            outcome: R | BaseException
            try:
                outcome = work(item)
            except Exception as error:  # handed to the caller, who decides
                outcome = error
            yield item, outcome
        return
    pending: deque[tuple[T, Future[R]]] = deque()
    upcoming = iter(items)
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="bees-hash") as pool:
        try:
            for item in upcoming:
                pending.append((item, pool.submit(work, item)))
                if len(pending) >= threads * LOOKAHEAD:
                    break
            index = 0
            while pending:
                item, future = pending.popleft()
                turn(index)
                index += 1
                raised = future.exception()
                yield item, (raised if raised is not None else future.result())
                for following in upcoming:
                    pending.append((following, pool.submit(work, following)))
                    break
        finally:
            for _, future in pending:
                future.cancel()


class ThreadFds:
    """One :class:`FolderFds` per thread over one root descriptor; :meth:`close` closes them
    all (call it once the threads are done)."""

    def __init__(self, root_fd: int) -> None:
        self.root_fd = root_fd
        self.local = threading.local()
        self.made: list[FolderFds] = []
        self.lock = threading.Lock()

    def get(self) -> FolderFds:
        """This thread's :class:`FolderFds`."""
        fds: FolderFds | None = getattr(self.local, "fds", None)
        if fds is None:
            fds = FolderFds(self.root_fd)
            self.local.fds = fds
            with self.lock:
                self.made.append(fds)
        return fds

    def close(self) -> None:
        """Close every thread's folder descriptors."""
        for fds in self.made:
            fds.close()


class ChunksInOrder:
    """Chunks hashed on several threads, reported as hashing one file after the other would:
    the chunks of the file whose turn it is (:meth:`turn`) at once, those of files ahead
    when their turn comes, those of files never reached never.

    Args:
        report: called with each chunk's byte count, under a lock, in file order.
    """

    def __init__(self, report: Callable[[int], None]) -> None:
        self.report = report
        self.current = 0
        self.held: dict[int, list[int]] = {}
        self.lock = threading.Lock()

    def chunk(self, index: int, count: int) -> None:
        """File ``index`` read ``count`` more bytes (from any thread)."""
        with self.lock:
            if index == self.current:
                self.report(count)
            else:
                self.held.setdefault(index, []).append(count)

    def turn(self, index: int) -> None:
        """File ``index`` is the one now waited for: report what it read so far."""
        with self.lock:
            self.current = index
            for count in self.held.pop(index, []):
                self.report(count)

"""The use cases reach the local record only through its async interface (issue 24, point 5).

A call of the synchronous SQLite record made from a coroutine holds the event loop (the
worker's, the app's) until SQLite answers, up to its 5 s busy timeout: ``bees item cancel``
did that. Async code in ``bees_cli/usecases`` awaits :class:`~bees_cli.record.aio.AsyncRecord`
(``bees.async_record``) instead; synchronous helpers it runs in a thread may take the
``LocalRecord``.
"""

from __future__ import annotations

import ast
import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import bees_cli.usecases
from bees_cli.record.local import LocalRecord

USECASES = Path(bees_cli.usecases.__file__).parent

RECORD_METHODS = frozenset(name for name in dir(LocalRecord)
                           if not name.startswith("_") and callable(getattr(LocalRecord, name)))
"""Every public method of the synchronous record (``item``, ``set_state``, ``add_fact``, …)."""

SYNC_DOORS = frozenset({"record", "sync"})
"""Attributes that hold the synchronous record: ``bees.record``, ``AsyncRecord.sync``."""

NOT_YET: dict[str, str] = {}
"""Modules still on hand-placed ``asyncio.to_thread``: each must still break the rule, so the
entry is removed the day it stops."""


def _async_bodies(tree: ast.AST) -> Iterator[ast.AST]:
    """Yield every node run by a coroutine's own frame (nested ``def`` and ``lambda`` left
    out: they run where they are called)."""
    def walk(node: ast.AST) -> Iterator[ast.AST]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.Lambda | ast.ClassDef):
                continue
            if isinstance(child, ast.AsyncFunctionDef):
                continue  # visited on its own
            yield child
            yield from walk(child)

    for node in ast.walk(tree):
        if isinstance(node, ast.AsyncFunctionDef):
            yield from (n for arg in node.args.args + node.args.kwonlyargs
                        for n in ast.walk(arg))
            yield from walk(node)


def _annotation_names(node: ast.arg) -> set[str]:
    if node.annotation is None:
        return set()
    text = ast.unparse(node.annotation)
    return {part.strip(" '\"") for part in text.replace("|", " ").split()}


def blocking_calls(source: str) -> list[str]:
    """Return each place where async code of ``source`` touches the synchronous record:
    ``X.record`` read, a method called on ``X.sync``, a ``LocalRecord`` built or taken as a
    parameter, or a ``LocalRecord`` method passed to ``asyncio.to_thread``."""
    found = []
    for node in _async_bodies(ast.parse(source)):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Attribute) and node.attr == "record" \
                and isinstance(node.ctx, ast.Load):
            found.append(f"{where}: {ast.unparse(node)} (the sync record)")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = node.func.value
            if node.func.attr in RECORD_METHODS and isinstance(receiver, ast.Attribute) \
                    and receiver.attr in SYNC_DOORS:
                found.append(f"{where}: {ast.unparse(node.func)}() on the loop")
            if node.func.attr == "to_thread" and node.args \
                    and isinstance(node.args[0], ast.Attribute) \
                    and node.args[0].attr in RECORD_METHODS:
                found.append(f"{where}: to_thread({ast.unparse(node.args[0])}) by hand")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("LocalRecord", "open_record"):
            found.append(f"{where}: {node.func.id}() built on the loop")
        elif isinstance(node, ast.arg) and "LocalRecord" in _annotation_names(node):
            found.append(f"{where}: parameter {node.arg}: LocalRecord")
    return found


MODULES = sorted(p.name for p in USECASES.glob("*.py"))


@pytest.mark.parametrize("name", MODULES)
def test_async_use_cases_never_touch_the_sync_record(name: str) -> None:
    found = blocking_calls((USECASES / name).read_text("utf-8"))
    if name in NOT_YET:
        assert found, f"{name} no longer blocks: remove it from NOT_YET"
        return
    assert found == []


@pytest.mark.parametrize("source", [
    "async def f(bees):\n    bees.record.item('X')\n",
    "async def f(bees):\n    row = bees.async_record.sync.item('X')\n",
    "async def f(bees):\n    await asyncio.to_thread(bees.async_record.sync.items)\n",
    "async def f(record: LocalRecord):\n    pass\n",
    "async def f(path):\n    LocalRecord(path).items()\n",
    "async def f(record):\n    await asyncio.to_thread(record.set_state, 'X', status='done')\n",
])
def test_the_rule_catches_each_way_in(source: str) -> None:
    assert blocking_calls(source) != []


@pytest.mark.parametrize("source", [
    "async def f(bees):\n    await bees.async_record.item('X')\n",
    "def helper(record: LocalRecord):\n    record.items()\n",
    "async def f(bees):\n    await bees.async_record.run(helper)\n",
    "async def f(bees):\n    def inner(): return bees.record.items()\n"
    "    await asyncio.to_thread(inner)\n",
])
def test_the_rule_lets_threads_and_the_async_record_be(source: str) -> None:
    assert blocking_calls(source) == []


def test_the_async_record_offers_every_method_of_the_record() -> None:
    from bees_cli.record.aio import AsyncRecord

    whole = {"step", "reading", "close"}  # several calls in one thread: AsyncRecord.run
    offered = {name for name in RECORD_METHODS - whole
               if asyncio.iscoroutinefunction(getattr(AsyncRecord, name, None))}
    assert offered == RECORD_METHODS - whole


def test_the_async_record_calls_the_record_in_a_thread(tmp_path: Path) -> None:
    from bees_cli.record.aio import AsyncRecord

    record = AsyncRecord(LocalRecord(tmp_path / "record.db"))
    loop_thread = threading.get_ident()
    seen: list[int] = []

    def helper(sync: LocalRecord, item_id: str) -> int:
        seen.append(threading.get_ident())
        return len(sync.events(item_id))

    async def main() -> tuple[list[str], int]:
        await record.add_item(id="01JH2Q00000000000000000AIO", process="p", title="t",
                              workspace="/ws", run_folder="/r", input="{}", stage="Draft")
        rows = await record.items()
        return [r.id for r in rows], await record.run(helper, "01JH2Q00000000000000000AIO")

    assert asyncio.run(main()) == (["01JH2Q00000000000000000AIO"], 1)
    assert seen and seen[0] != loop_thread

"""``bees run``'s long-lived local MCP servers: one per stage attempt and add-on, reused across
the stage's tool calls, stopped with the stage.

Issue 25, point 3: a stdio server is started at the stage's first list or call of its
add-on's tools, kept for the stage's next ones, and stopped when the stage ends (finished,
failed, stopped at the review limit, done), when the item is cancelled or relinquished, and
when ``bees run`` stops. The worker's activities say when (``bees.record`` and the handover
call :meth:`McpSessions.close`); a session of the same item and another stage or round is
stopped when a new one opens, and a held server is pinged before it is reused: one that
exited or does not answer is started again, so a call is never sent to a server already
gone (which would leave it "may have run"). A server started here carries the parent-death signal
(:func:`~bees_cli.agents.mcp_addon.open_session`), so a killed ``bees run`` leaves none.

Each session lives in a task of its own on the worker's event loop (the SDK's transport is
entered and left in one task); calls come from the activities' tasks on the same loop, or
from a thread through :meth:`McpSessions.run_here`. A remote server (``url``) is not held:
``bees action`` reaches it once per call.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from bees_cli.agents.mcp_addon import (
    McpCallCut,
    McpNotReached,
    McpResult,
    McpTool,
    ask_call,
    ask_tools,
    open_session,
)
from bees_cli.agents.mcp_words import hint, missing_env, quiet_sdk, reason, sdk_notes

if TYPE_CHECKING:
    from mcp import ClientSession

    from bees_cli.workspace.models import McpServer

T = TypeVar("T")

STOP_SECONDS = 10.0
"""Most seconds a held server's stop is waited for (the SDK's own steps are bounded: stdin
closed, then SIGTERM and SIGKILL to its process tree); past it the session's task is
cancelled."""


@dataclass(frozen=True, order=True)
class SessionKey:
    """Whose server a session is: the item, its stage, round and attempt, the piece (None:
    the stage's own agent) and the add-on."""

    item_id: str
    stage: str
    round: int
    attempt: int
    piece: str | None
    addon: str


@dataclass
class _Held:
    """One running server and its session, held by ``task`` until ``stop`` is set."""

    errlog: TextIO
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    notes: list[str] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    session: ClientSession | None = None
    ended: Callable[[], bool] = lambda: True
    tools: list[McpTool] | None = None

    async def start(self, server: McpServer, *, root: str, environ: Mapping[str, str],
                    cwd: str) -> None:
        """Start the server and shake hands, within ``3 × start_seconds``.

        Raises:
            McpNotReached: the reason (nothing was sent).
        """
        ready: asyncio.Future[tuple[ClientSession, Callable[[], bool]]] = (
            asyncio.get_running_loop().create_future())

        async def hold() -> None:
            quiet_sdk()
            sdk_notes.set(self.notes)  # this task's context: what the SDK logs is ours
            try:
                async with open_session(server, root=root, environ=environ, cwd=cwd,
                                        errlog=self.errlog) as opened:
                    ready.set_result(opened)
                    await self.stop.wait()
            except Exception as error:  # noqa: BLE001 - worded by start; a stop's failure is moot
                if not ready.done():
                    ready.set_exception(error)

        self.task = asyncio.create_task(hold(), name="bees-mcp-session")
        try:
            self.session, self.ended = await asyncio.wait_for(asyncio.shield(ready),
                                                              3 * server.start_seconds)
        except BaseException as error:  # a cancel too: the server is not left behind
            why = reason(error, server, self.errlog, server.start_seconds, self.notes)
            await self.close()
            if not isinstance(error, Exception):
                raise
            raise McpNotReached(why, hint=hint(server, root)) from error

    async def answers(self, bound: float) -> bool:
        """Tell whether the held server still answers: its output has not ended and it
        answers a ping within ``bound`` seconds (the SDK may not yet have seen it exit)."""
        if self.session is None or self.ended():
            return False
        import anyio

        try:
            with anyio.fail_after(bound):
                await self.session.send_ping()
        except Exception:  # noqa: BLE001 - gone, whatever the way: started again
            return False
        return True

    async def close(self) -> None:
        """Stop the server (bounded by :data:`STOP_SECONDS`) and forget its stderr."""
        self.stop.set()
        if self.task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self.task), STOP_SECONDS)
            except TimeoutError:
                self.task.cancel()
                await asyncio.gather(self.task, return_exceptions=True)
        self.errlog.close()


class McpSessions:
    """The local MCP servers ``bees run`` holds for its running stages, by
    :class:`SessionKey`. Made on the worker's event loop, which its sessions live on."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._held: dict[SessionKey, _Held] = {}
        self._opening = asyncio.Lock()

    def __len__(self) -> int:
        return len(self._held)

    async def _session(self, key: SessionKey, server: McpServer, *, root: str,
                       environ: Mapping[str, str], cwd: str) -> _Held:
        """Return the key's live session, starting its server when there is none (or its
        output ended); sessions of the item's other stages or rounds are stopped first.

        Raises:
            McpNotReached: the reason (nothing was sent).
        """
        async with self._opening:
            held = self._held.get(key)
            if held is not None and await held.answers(server.start_seconds):
                return held
            await self._stop([k for k in self._held if k == key or (
                k.item_id == key.item_id and (k.stage, k.round) != (key.stage, key.round))])
            missing = missing_env(server, environ)
            if missing:
                raise McpNotReached(f"{', '.join(missing)} not set", hint=hint(server, root))
            held = _Held(errlog=tempfile.TemporaryFile("w+", encoding="utf-8"))
            await held.start(server, root=root, environ=environ, cwd=cwd)
            self._held[key] = held
            return held

    async def tools(self, key: SessionKey, server: McpServer, *, root: str,
                    environ: Mapping[str, str], cwd: str) -> list[McpTool]:
        """Return the tools of the key's server (listed once per session), starting it in
        ``cwd`` when it does not run.

        Raises:
            McpNotReached: the server did not start, answer, or list its tools in time.
        """
        import anyio

        held = await self._session(key, server, root=root, environ=environ, cwd=cwd)
        if held.tools is None:
            assert held.session is not None
            try:
                with anyio.fail_after(server.start_seconds):
                    held.tools = await ask_tools(held.session)
            except Exception as error:
                why = reason(error, server, held.errlog, server.start_seconds, held.notes)
                await self._stop([key])
                raise McpNotReached(why, hint=hint(server, root)) from error
        return held.tools

    async def call(self, key: SessionKey, server: McpServer, tool: str,
                   arguments: dict[str, Any], *, root: str, environ: Mapping[str, str],
                   cwd: str) -> McpResult:
        """Call ``tool`` once on the key's server, starting it in ``cwd`` when it does not run.

        Returns:
            As :func:`~bees_cli.agents.mcp_addon.call_tool`.

        Raises:
            McpNotReached: the server did not start or answer (nothing was sent).
            McpCallCut: the call got no answer in time, or the server went away: it may
                have taken effect; the server is stopped, the stage's next call starts one.
        """
        import anyio

        held = await self._session(key, server, root=root, environ=environ, cwd=cwd)
        assert held.session is not None
        try:
            with anyio.fail_after(server.call_seconds + server.start_seconds):
                return await ask_call(held.session, server, tool, arguments)
        except Exception as error:
            why = reason(error, server, held.errlog, server.call_seconds, held.notes)
            await self._stop([key])
            raise McpCallCut.because(why) from error

    def run_here(self, make: Callable[[], Awaitable[T]]) -> T:
        """Run ``make()`` on the sessions' event loop and return its result; blocking, for a
        thread other than the loop's (a use case's blocking step)."""
        async def main() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(main(), self._loop).result()

    async def _stop(self, keys: list[SessionKey]) -> int:
        held = [self._held.pop(key) for key in keys if key in self._held]
        await asyncio.gather(*(one.close() for one in held))
        return len(held)

    async def close(self, item_id: str) -> int:
        """Stop every server held for item ``item_id`` (its stage ended, it was cancelled or
        relinquished); return how many ran."""
        return await self._stop([key for key in self._held if key.item_id == item_id])

    async def close_all(self) -> int:
        """Stop every server held here (``bees run`` stops); return how many ran."""
        return await self._stop(list(self._held))

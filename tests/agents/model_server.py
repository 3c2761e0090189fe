"""A scripted chat-completions server for tests: real HTTP, scripted answers, requests kept.

Push :class:`Answer` values on :attr:`ScriptedModel.script`; each ``POST
/v1/chat/completions`` takes the next one and is recorded in :attr:`ScriptedModel.received`
(path, headers, decoded JSON body). An empty script answers HTTP 500 ``script exhausted``,
so a test that calls once too often fails on the client's error, not by hanging.
:func:`serve` runs it with uvicorn on a free loopback port in a thread.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.servers import uvicorn_in_thread

EXHAUSTED = "script exhausted"
HOLD_LIMIT = 120.0
"""Most seconds a held answer waits for its event (a test that forgets it still ends)."""
CHUNK = 64 * 1024
"""Bytes per write of a streamed answer's filler."""


@dataclass(frozen=True)
class Answer:
    """One scripted answer: a status, a JSON body (or raw text) and headers; with ``hold``,
    the server keeps the request waiting until the event is set (at most
    :data:`HOLD_LIMIT` s), as a model that thinks for a long time. With ``drip``
    (bytes, seconds), the JSON body is preceded by that many spaces sent one at a time, that
    many seconds apart (a server that drips); with ``filler``, the reply's content is that
    many ``x`` written :data:`CHUNK` bytes at a time (a huge reply, never built whole). A
    dripped or filled answer counts the bytes it wrote in :attr:`ScriptedModel.sent`."""

    status: int = 200
    body: Any = None
    text: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    hold: threading.Event | None = None
    drip: tuple[int, float] | None = None
    filler: int = 0
    events: tuple[Any, ...] | None = None
    pause: tuple[int, threading.Event] | None = None
    every: float = 0.0

    def held(self, until: threading.Event) -> Answer:
        """This answer, given only once ``until`` is set."""
        return Answer(self.status, self.body, self.text, dict(self.headers), until,
                      self.drip, self.filler)

    def dripped(self, count: int, every: float) -> Answer:
        """This answer after ``count`` spaces sent ``every`` seconds apart."""
        return Answer(self.status, self.body, self.text, dict(self.headers), self.hold,
                      (count, every), self.filler)

    @classmethod
    def streamed(cls, *events: Any, pause: tuple[int, threading.Event] | None = None,
                 every: float = 0.0) -> Answer:
        """A streamed reply (``text/event-stream``): each event a ``data:`` line, then
        ``data: [DONE]``; with ``pause`` ``(n, event)``, the stream stays open after its
        first ``n`` events until the event is set (at most :data:`HOLD_LIMIT` s); with
        ``every``, that many seconds pass between two events (a slow model)."""
        return cls(events=events, pause=pause, every=every)

    @staticmethod
    def delta(content: str | None = None, *, calls: list[dict[str, Any]] | None = None,
              finish_reason: str | None = None) -> dict[str, Any]:
        """One streamed chunk: a delta of the message's ``content`` or ``tool_calls``."""
        delta: dict[str, Any] = {}
        if content is not None:
            delta["content"] = content
        if calls is not None:
            delta["tool_calls"] = calls
        return {"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
                "model": "scripted", "choices": [
                    {"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    @staticmethod
    def usage_chunk(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
        """The last chunk of a stream asked with ``include_usage``: no choices, the usage."""
        return {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "choices": [],
                "usage": {"prompt_tokens": prompt_tokens,
                          "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens}}

    @classmethod
    def huge(cls, size: int) -> Answer:
        """A text reply whose content is ``size`` bytes of ``x``, streamed."""
        return cls(body=cls.reply("").body, filler=size)

    @classmethod
    def reply(cls, content: str, *, prompt_tokens: int = 10, completion_tokens: int = 5,
              finish_reason: str = "stop") -> Answer:
        """An assistant message with ``content`` and the given token usage."""
        return cls.message({"role": "assistant", "content": content},
                           prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                           finish_reason=finish_reason)

    @classmethod
    def tool_calls(cls, *calls: tuple[str, str, str], prompt_tokens: int = 10,
                   completion_tokens: int = 5) -> Answer:
        """An assistant message calling tools: each call is ``(id, name, arguments text)``."""
        return cls.message(
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": name, "arguments": arguments}}
                for call_id, name, arguments in calls
            ]},
            prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            finish_reason="tool_calls",
        )

    @classmethod
    def message(cls, message: dict[str, Any], *, prompt_tokens: int, completion_tokens: int,
                finish_reason: str) -> Answer:
        """A whole chat completion around ``message`` (with llama.cpp-style extra fields)."""
        return cls(body={
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
            "timings": {"predicted_per_second": 100.0},
        })

    @classmethod
    def error(cls, status: int, message: str, *, code: str | None = None,
              headers: dict[str, str] | None = None) -> Answer:
        """An OpenAI-style error body ``{"error": {"message", "type", "code"}}``."""
        return cls(status=status, headers=headers or {},
                   body={"error": {"message": message, "type": "error", "code": code}})

    @classmethod
    def raw(cls, text: str, *, status: int = 200) -> Answer:
        """A body that is sent as it is (for answers that are not JSON)."""
        return cls(status=status, text=text)


@dataclass(frozen=True)
class Received:
    """One request the server got."""

    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class ScriptedModel:
    """The script and the record of one scripted server."""

    script: deque[Answer] = field(default_factory=deque)
    received: list[Received] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)
    """Bytes written of each dripped or filled answer so far, in the order sent (a client
    that stops reading stops it, short of the whole)."""
    props: dict[str, Any] | None = None
    """What ``GET /props`` answers, as llama.cpp's server does (None: HTTP 404, as Ollama)."""

    def push(self, *answers: Answer) -> None:
        """Add ``answers`` to the end of the script."""
        self.script.extend(answers)

    async def _chat(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.received.append(Received(request.url.path, dict(request.headers), body))
        if not self.script:
            return JSONResponse({"error": {"message": EXHAUSTED}}, status_code=500)
        answer = self.script.popleft()
        if answer.hold is not None:
            await asyncio.to_thread(answer.hold.wait, HOLD_LIMIT)
        if answer.events is not None:
            return StreamingResponse(self._events(answer), status_code=answer.status,
                                     headers=answer.headers, media_type="text/event-stream")
        if answer.drip is not None or answer.filler:
            return StreamingResponse(self._stream(answer), status_code=answer.status,
                                     headers=answer.headers, media_type="application/json")
        if answer.text is not None:
            return Response(answer.text, status_code=answer.status, headers=answer.headers,
                            media_type="application/json")
        return JSONResponse(answer.body, status_code=answer.status, headers=answer.headers)

    async def _events(self, answer: Answer) -> AsyncIterator[bytes]:
        """Write a streamed answer's events as server-sent events, pausing where it says."""
        assert answer.events is not None
        for number, event in enumerate(answer.events):
            if answer.pause is not None and number == answer.pause[0]:
                await asyncio.to_thread(answer.pause[1].wait, HOLD_LIMIT)
            if number and answer.every:
                await asyncio.sleep(answer.every)
            yield f"data: {json.dumps(event)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    async def _stream(self, answer: Answer) -> AsyncIterator[bytes]:
        """Write ``answer`` piece by piece, counting the bytes written in :attr:`sent`."""
        index = len(self.sent)
        self.sent.append(0)
        body = json.dumps(answer.body).encode()
        count, every = answer.drip or (0, 0.0)
        for _ in range(count):
            yield b" "
            self.sent[index] += 1
            await asyncio.sleep(every)
        head, _, tail = body.partition(b'"content": ""')
        if not answer.filler:
            head, tail = body, b""
        else:
            head, tail = head + b'"content": "', b'"' + tail
        yield head
        self.sent[index] += len(head)
        left = answer.filler
        while left > 0:
            piece = b"x" * min(CHUNK, left)
            yield piece
            self.sent[index] += len(piece)
            left -= len(piece)
            # a write to a closed connection returns at once: let the response notice the
            # client went away (and stop this) before the next
            await asyncio.sleep(0)
        if tail:
            yield tail
            self.sent[index] += len(tail)

    async def _props(self, request: Request) -> Response:
        if self.props is None:
            return JSONResponse({"error": "not found"}, status_code=404)
        return JSONResponse(self.props)

    def app(self) -> Starlette:
        """The ASGI app: ``POST /v1/chat/completions``, and ``GET /props`` (:attr:`props`)."""
        return Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"]),
                                 Route("/props", self._props, methods=["GET"])])


@dataclass(frozen=True)
class ScriptedServer:
    """A running scripted server: ``base_url`` ends in ``/v1`` (as an agent's base_url)."""

    base_url: str
    model: ScriptedModel


class ModelSwitch:
    """An ASGI app that hands each request to the current :class:`ScriptedModel`: one server
    serves test after test, each with a fresh model (:meth:`fresh`). A reply still being
    written for an earlier test keeps writing to its own model, never the new one."""

    def __init__(self) -> None:
        self.fresh()

    def fresh(self) -> ScriptedModel:
        """Make a new model the current one and return it."""
        self.model = ScriptedModel()
        self._app = self.model.app()
        return self.model

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self._app(scope, receive, send)


@contextmanager
def serve_switch() -> Iterator[tuple[str, ModelSwitch]]:
    """Run a :class:`ModelSwitch` on a free loopback port until the block ends; yield its
    ``base_url`` (ending in ``/v1``) and the switch."""
    switch = ModelSwitch()
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on accepted sockets whose proto is
    # TCP; without it Nagle holds the reply's body for the client's delayed ACK (~40 ms)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    try:
        with uvicorn_in_thread(switch, sock) as (_, port):
            yield f"http://127.0.0.1:{port}/v1", switch
    finally:
        sock.close()


@contextmanager
def serve() -> Iterator[ScriptedServer]:
    """Run a fresh :class:`ScriptedModel` on a free loopback port until the block ends."""
    with serve_switch() as (base_url, switch):
        yield ScriptedServer(base_url, switch.model)

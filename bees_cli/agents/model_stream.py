"""A streamed chat completion read as it comes (issue 26, point 2).

A request with ``"stream": true`` is answered by a server that streams with server-sent
events: ``data: {chunk}`` lines, each chunk a delta of the message (``content`` text, or
``tool_calls`` pieces by ``index``), then ``data: [DONE]``; asked with ``stream_options:
{include_usage: true}``, the last chunk carries the usage. :class:`StreamedReply` assembles
the same :class:`~bees_cli.agents.chat_wire.ChatResponse` a whole reply would have been;
:func:`read_events` reads the events of a reply counting its bytes against the size limit.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from pydantic import ValidationError

from bees_cli.agents.chat_wire import ChatResponse
from bees_cli.errors import ModelAnswerInvalid

Progress = Callable[[str, int], Awaitable[None]]
"""Told after each chunk of a streamed reply: the chunk's new content text (``""`` for a
chunk of tool-call pieces) and the tokens so far (one per chunk with a delta)."""

EVENT_STREAM = "text/event-stream"


def is_event_stream(response: httpx.Response) -> bool:
    """Tell whether ``response`` streams server-sent events (its ``Content-Type``)."""
    return response.headers.get("content-type", "").split(";")[0].strip() == EVENT_STREAM


class StreamedReply:
    """The chunks of one streamed reply, assembled as they come."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.content: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.tokens = 0

    def add(self, chunk: dict[str, Any]) -> str | None:
        """Add one chunk; return its new content text (``""`` when it has only tool-call
        pieces), or None when it carries no delta (the usage, a role)."""
        for key in ("id", "model"):
            if isinstance(chunk.get(key), str):
                self.meta.setdefault(key, chunk[key])
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        choices = chunk.get("choices") or []
        if not choices or not isinstance(choices[0], dict):
            return None
        choice = choices[0]
        self.finish_reason = choice.get("finish_reason") or self.finish_reason
        delta = choice.get("delta") or {}
        text = delta.get("content") or ""
        pieces = delta.get("tool_calls") or []
        if not text and not pieces:
            return None
        self.content.append(text)
        for piece in pieces:
            self._call_piece(piece)
        self.tokens += 1
        return text

    def _call_piece(self, piece: dict[str, Any]) -> None:
        """Add a tool call's piece: its id and name once, its arguments text appended."""
        call = self.calls.setdefault(int(piece.get("index", 0)),
                                     {"id": None, "name": "", "arguments": []})
        call["id"] = call["id"] or piece.get("id")
        function = piece.get("function") or {}
        call["name"] += function.get("name") or ""
        call["arguments"].append(function.get("arguments") or "")

    def response(self) -> ChatResponse:
        """Return the whole reply, as the server would have answered it unstreamed.

        Raises:
            ModelAnswerInvalid: the chunks do not make a chat completion.
        """
        message: dict[str, Any] = {"role": "assistant",
                                   "content": "".join(self.content) if self.content else None}
        if self.calls:
            message["tool_calls"] = [
                {"id": call["id"] or f"call_{index}", "type": "function",
                 "function": {"name": call["name"], "arguments": "".join(call["arguments"])}}
                for index, call in sorted(self.calls.items())]
            if message["content"] == "":
                message["content"] = None
        data: dict[str, Any] = {**self.meta, "choices": [
            {"index": 0, "message": message, "finish_reason": self.finish_reason}]}
        if self.usage is not None:
            data["usage"] = self.usage
        try:
            return ChatResponse.model_validate(data)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(the reply)"
            problem = f"{where}: {first['msg']}"
        raise ModelAnswerInvalid(f"the streamed reply is not a chat completion: {problem}")


async def read_events(streamed: httpx.Response, *, limit: int,
                      too_large: Callable[[], Exception],
                      progress: Progress | None,
                      scrub: Callable[[str], str]) -> ChatResponse:
    """Read a streamed reply's events until ``[DONE]`` (or the end), assembling it.

    Args:
        streamed: the reply, its body not yet read.
        limit: the most bytes read (``max_reply_bytes``).
        too_large: the error raised past ``limit`` (the rest is never read).
        progress: told after each chunk with a delta (see :data:`Progress`).
        scrub: makes a server's error text fit to show (no key, one short line).

    Raises:
        ModelAnswerInvalid: a ``data:`` line that is not JSON, or no chat completion.
    """
    reply = StreamedReply()
    read, pending = 0, b""
    async for piece in streamed.aiter_bytes():
        read += len(piece)
        if read > limit:
            raise too_large()
        *lines, pending = (pending + piece).split(b"\n")
        for line in lines:
            if await _event(reply, line.decode("utf-8", "replace").strip(), progress, scrub):
                return reply.response()
    await _event(reply, pending.decode("utf-8", "replace").strip(), progress, scrub)
    return reply.response()


async def _event(reply: StreamedReply, line: str, progress: Progress | None,
                 scrub: Callable[[str], str]) -> bool:
    """Add one line of the stream to ``reply``; return True at ``data: [DONE]``."""
    if not line.startswith("data:"):
        return False  # a blank line between events, a comment, an event name
    data = line[len("data:"):].strip()
    if data == "[DONE]":
        return True
    try:
        chunk = json.loads(data)
    except ValueError:
        chunk = None
    if not isinstance(chunk, dict):
        raise ModelAnswerInvalid("a streamed chunk is not a JSON object")
    if chunk.get("error"):
        error = chunk["error"]
        said = error.get("message") if isinstance(error, dict) else error
        raise ModelAnswerInvalid(f"the server stopped its streamed reply: {scrub(str(said))}")
    text = reply.add(chunk)
    if text is not None and progress is not None:
        await progress(text, reply.tokens)
    return False

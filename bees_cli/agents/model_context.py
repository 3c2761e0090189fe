"""Fitting a model agent's conversation into the model's context (issue 26, point 7).

When the conversation nears the model's context, the oldest tool results are shortened to a
note (``[shortened: 12,345 characters of mail.search's result]``) instead of the call
failing with the server's context error. Never shortened: the opening (the system prompt
and the task) and the last turn (the model's last reply and the results after it).

Tokens are *estimated*, the same way on every computer: the characters of the messages'
JSON (compact, keys sorted, the tools offered added) divided by :data:`CHARS_PER_TOKEN`,
rounded up. Real tokenizers give about 3 to 4 characters per token for English; JSON's
quotes and keys make the estimate run a little high, which is the safe side.

The context itself is the agent's ``runner.context_tokens``; unset, what the server says
(llama.cpp's ``GET /props``: ``default_generation_settings.n_ctx``, read once per server by
:func:`server_context`), else :data:`DEFAULT_CONTEXT_TOKENS` (Ollama's and OpenAI's APIs do
not say; 4,096 is the smallest context of the local models Bees is used with, and what
``bees model serve`` gives).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

import httpx

from bees_cli.agents.chat_wire import Message

CHARS_PER_TOKEN = 4
"""Characters of JSON counted as one token by :func:`estimate_tokens`."""
DEFAULT_CONTEXT_TOKENS = 4_096
"""The context assumed when neither the agent nor the server says."""
PROPS_SECONDS = 5.0
"""Longest wait for a server's ``/props`` (it is answered from memory)."""
_RESULT = re.compile(r"Result of ([^\s:]+): ")
"""How a json-mode tool result starts (``model_loop._told``)."""


def estimate_tokens(messages: Sequence[Message], tools: Sequence[Any] | None = None) -> int:
    """Return the estimated tokens of ``messages`` (and ``tools``, JSON-ready dicts):
    characters of their compact JSON over :data:`CHARS_PER_TOKEN`, rounded up."""
    chars = len(_json([message.wire() for message in messages]))
    if tools:
        chars += len(_json(list(tools)))
    return math.ceil(chars / CHARS_PER_TOKEN)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def shortened_note(chars: int, tool: str) -> str:
    """Return the note that stands for a shortened result: ``[shortened: 12,345 characters
    of mail.search's result]``."""
    return f"[shortened: {chars:,} characters of {tool}'s result]"


def _tool_results(messages: Sequence[Message], start: int,
                  end: int) -> list[tuple[int, str, str]]:
    """Return ``(index, tool, prefix)`` of each tool result in ``messages[start:end]``: a
    ``tool`` message (its tool from the call it answers), or a json-mode ``Result of TOOL:``
    user message (``prefix`` kept before the note)."""
    from bees_cli.agents.model_steps import tool_name

    named: dict[str, str] = {}
    found: list[tuple[int, str, str]] = []
    for index, message in enumerate(messages[:end]):
        for call in message.tool_calls or []:
            named[call.id] = tool_name(call.function.name)
        if index < start or message.content is None:
            continue
        if message.role == "tool":
            found.append((index, named.get(message.tool_call_id or "", "a tool"), ""))
        elif message.role == "user" and (match := _RESULT.match(message.content)):
            found.append((index, match.group(1), match.group(0)))
    return found


def fit_context(messages: Sequence[Message], *, keep_first: int, budget: int,
                tools: Sequence[Any] | None = None) -> tuple[list[Message], int]:
    """Shorten the oldest tool results of ``messages`` until they fit ``budget`` tokens.

    Args:
        messages: the whole conversation as it would be sent.
        keep_first: how many messages open it (system prompt, task): never shortened.
        budget: most tokens (:func:`estimate_tokens`, ``tools`` counted) the request may take.
        tools: the tools sent with it (JSON-ready dicts), counted, never shortened.

    Returns:
        The messages to send (the same objects where unchanged) and how many results were
        shortened. The last turn (from the last assistant message on) is never shortened,
        so the result may still be over ``budget``: then the server says so, as before.
    """
    fitted = list(messages)
    last = max((i for i, m in enumerate(fitted) if m.role == "assistant"), default=len(fitted))
    tokens = estimate_tokens(fitted, tools)
    count = 0
    for index, tool, prefix in _tool_results(fitted, keep_first, last):
        if tokens <= budget:
            break
        content = fitted[index].content or ""
        note = prefix + shortened_note(len(content) - len(prefix), tool)
        if len(note) >= len(content):
            continue
        fitted[index] = fitted[index].model_copy(update={"content": note})
        tokens = estimate_tokens(fitted, tools)
        count += 1
    return fitted, count


def props_url(base_url: str) -> str:
    """Return llama.cpp's ``/props`` beside ``base_url`` (``http://h:8080/v1`` →
    ``http://h:8080/props``)."""
    base = httpx.URL(base_url)
    path = base.path.rstrip("/")
    path = path.removesuffix("/v1")
    return str(base.copy_with(path=path + "/props", query=None))


_known: dict[str, tuple[float, int]] = {}
"""``base_url`` → (when asked, monotonic seconds; the context it gave)."""
PROPS_KEPT_SECONDS = 300.0
"""A server's answer is asked again after this (it may have been restarted with another
``--context``)."""


async def server_context(base_url: str, *, now: float,
                         transport: httpx.AsyncBaseTransport | None = None) -> int:
    """Return the context, in tokens, of the server at ``base_url``: llama.cpp's ``GET
    /props`` ``default_generation_settings.n_ctx`` (kept :data:`PROPS_KEPT_SECONDS` from
    ``now``, monotonic seconds), else :data:`DEFAULT_CONTEXT_TOKENS` (no such page, no
    answer, not that field: Ollama, OpenAI). Never raises."""
    kept = _known.get(base_url)
    if kept is not None and now - kept[0] < PROPS_KEPT_SECONDS:
        return kept[1]
    tokens = DEFAULT_CONTEXT_TOKENS
    try:
        async with httpx.AsyncClient(transport=transport, timeout=PROPS_SECONDS) as http:
            response = await http.get(props_url(base_url))
        n_ctx = response.json()["default_generation_settings"]["n_ctx"]
        if response.is_success and isinstance(n_ctx, int) and n_ctx > 0:
            tokens = n_ctx
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        pass
    if len(_known) >= 64:
        _known.clear()
    _known[base_url] = (now, tokens)
    return tokens

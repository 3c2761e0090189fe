"""An async client of OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp…).

One :meth:`ModelClient.send` is one model call: a ``POST {base_url}/chat/completions``,
repeated a bounded number of times when repeating may help, and every failure mapped to
one typed error of :mod:`bees_cli.errors`::

    connection failed, timed out, HTTP 5xx/408   retried with backoff, then ModelUnavailable
    the call past its deadline (the whole call)   the same: retried, then ModelUnavailable
    a reply larger than max_reply_bytes           ModelReplyTooLarge at once (cut off unread)
    HTTP 429                                      waits Retry-After (at most max_retry_after),
                                                  retried, then ModelRateLimited
    HTTP 401, 403                                 ModelUnauthorized at once (names the variable)
    HTTP 400/413 saying the context is too long   ModelContextExceeded at once
    any other HTTP 4xx                            ModelRejected at once
    2xx that is not a chat completion             ModelAnswerInvalid at once

The key is read from the environment variable the agent names (issue 13, point 1) and
lives only in a ``SecretStr`` and in the ``Authorization`` header of each request: error
texts, reprs and transcripts name the variable, never the key, and any echo of the key in
a server's error text is blanked. Waits go through an injected ``sleep`` so tests never
sleep; a durable loop that leaves retries to Temporal passes ``RetryPolicy(attempts=1)``.

Each try is bounded as a whole (issue 26, point 1): ``timeout_seconds`` bounds connecting
and each read, ``deadline_seconds`` the try from sending to the reply's last byte, so a
server dripping a byte at a time is cut there; the reply is read as it arrives with a
running count and cut off past ``max_reply_bytes``, so a huge one is never read whole.

A client made with ``stream=True`` asks for the reply as server-sent events (issue 26, point
2): each chunk restarts the read timeout and is told to ``progress``; the deadline and the
size limit hold as before. A server that answers plain JSON, or refuses ``stream`` (HTTP 400
or 422 naming it, then asked again at once without it), still answers; :attr:`ModelClient.streams`
says which it did.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
from pydantic import SecretStr, ValidationError

from bees_cli.agents.chat_wire import (
    ChatRequest,
    ChatResponse,
    Message,
    ResponseFormat,
    ToolChoice,
    ToolDef,
)
from bees_cli.agents.model_http import (
    CONTEXT_MARKERS,
    RetryPolicy,
    chat_url,
    display_url,
    refused,
    retry_after_seconds,
)
from bees_cli.agents.model_http import server_name as server_name  # re-exported
from bees_cli.agents.model_stream import Progress, is_event_stream, read_events
from bees_cli.errors import (
    ModelAnswerInvalid,
    ModelContextExceeded,
    ModelError,
    ModelRateLimited,
    ModelRejected,
    ModelReplyTooLarge,
    ModelUnauthorized,
    ModelUnavailable,
)
from bees_cli.utc import utc_now
from bees_cli.workspace.models import ModelSpec

HIDDEN = "[hidden]"
"""What a key echoed by a server becomes in an error text."""
DETAIL_CHARS = 300
"""At most this many characters of a server's error text are quoted in an error."""
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class Completion:
    """One model call's answer with what it took.

    Attributes:
        response: the server's answer (message, tool calls, token usage).
        attempts: tries made, the first included.
        seconds: from the first try to the answer, waits included (monotonic clock).
    """

    response: ChatResponse
    attempts: int
    seconds: float

    @property
    def message(self) -> Message:
        """The answer's message."""
        return self.response.message


def client_for(spec: ModelSpec,
               transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """Return a new ``httpx`` client for the model server of ``spec`` (its timeout bounds
    connecting and each read, in seconds); the caller closes it."""
    return httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(spec.timeout_seconds))


class ModelClient:
    """Calls one model's chat completions over ``httpx`` (async).

    Args:
        spec: the agent's ``runner.model``: base URL, model name, key variable, timeout.
        environ: where the key variable is read (default ``os.environ``).
        transport: an ``httpx`` transport (tests); default: the network.
        retry: how often and how long a call is repeated.
        sleep: awaited for every wait (tests pass one that records and returns).
        clock: monotonic seconds, for :attr:`Completion.seconds`.
        now: the wall clock, for ``Retry-After`` given as an HTTP date.
        stream: ask for streamed replies (see the module's docstring).
        http: an ``httpx`` client to send with, kept open by its owner (the worker keeps
            one per server for its life: building one loads the certificate bundle, ~39 ms
            of CPU, issue 29 point 4); :meth:`aclose` leaves it open. Default: one of this
            client's own (``transport``, ``spec.timeout_seconds``), closed by :meth:`aclose`.

    Raises:
        ModelUnauthorized: ``spec.api_key_env`` names a variable that is unset or empty.
    """

    def __init__(
        self,
        spec: ModelSpec,
        *,
        environ: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        retry: RetryPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = utc_now,
        stream: bool = False,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.spec = spec
        self.url = chat_url(spec.base_url)
        self.shown_url = display_url(self.url)
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._clock = clock
        self._now = now
        self._key = self._read_key(os.environ if environ is None else environ)
        self.streams: bool | None = None if stream else False
        """Whether the server streamed its last reply; None before a reply to a stream
        request; False once it answered one whole (then never asked to stream again)."""
        self._owns_http = http is None
        self._http = http or client_for(spec, transport)

    def _read_key(self, environ: Mapping[str, str]) -> SecretStr | None:
        name = self.spec.api_key_env
        if name is None:
            return None
        value = environ.get(name, "")
        if not value.strip():
            raise ModelUnauthorized(
                f"the environment variable {name} is not set; the model at "
                f"{self.shown_url} needs its API key",
                hint=f"set {name} in the environment that runs bees, or remove "
                "api_key_env for a local server",
            )
        return SecretStr(value.strip())

    def __repr__(self) -> str:
        key = f"key from {self.spec.api_key_env}" if self.spec.api_key_env else "no key"
        return f"ModelClient({self.shown_url!r}, model={self.spec.name!r}, {key})"

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool (not one given as ``http``: its owner closes it)."""
        if self._owns_http:
            await self._http.aclose()

    def request(
        self,
        messages: list[Message],
        *,
        tools: list[ToolDef] | None = None,
        tool_choice: ToolChoice | None = None,
        response_format: ResponseFormat | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> ChatRequest:
        """Return the request for ``messages`` to this client's model (nothing is sent)."""
        return ChatRequest(
            model=self.spec.name,
            messages=messages,
            tools=tools or None,
            tool_choice=tool_choice,
            response_format=response_format,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
        )

    async def complete(
        self,
        messages: list[Message],
        *,
        tools: list[ToolDef] | None = None,
        tool_choice: ToolChoice | None = None,
        response_format: ResponseFormat | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        progress: Progress | None = None,
    ) -> Completion:
        """Ask the model for its next message (see :meth:`request` and :meth:`send`)."""
        return await self.send(
            self.request(
                messages,
                tools=tools,
                tool_choice=tool_choice,
                response_format=response_format,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed,
            ),
            progress,
        )

    async def send(self, request: ChatRequest, progress: Progress | None = None) -> Completion:
        """Send ``request`` and return the answer, repeating as :attr:`retry` allows; a
        streamed reply is told to ``progress`` chunk by chunk.

        Returns:
            The answer, the tries it took and the seconds from the first try.

        Raises:
            ModelUnavailable: no answer, a timeout, the try's deadline passed, or HTTP 5xx on
                the last try (retryable).
            ModelReplyTooLarge: a reply (of any status) larger than ``max_reply_bytes``,
                cut off there (not retryable).
            ModelRateLimited: HTTP 429 on the last try, or a Retry-After longer than
                ``retry.max_retry_after`` (retryable; ``retry_after`` carries the wait).
            ModelUnauthorized: HTTP 401/403 (not retryable).
            ModelContextExceeded: the conversation is longer than the model's context.
            ModelRejected: another HTTP 4xx (not retryable).
            ModelAnswerInvalid: a 2xx answer that is not a chat completion.
        """
        started = self._clock()
        attempt = 0
        failure: ModelError
        while True:
            attempt += 1
            streamed = self.streams is not False
            body = request.model_copy(update={"stream": True, "stream_options": {
                "include_usage": True}} if streamed else {}).wire()
            try:
                async with asyncio.timeout(self.spec.deadline_seconds):
                    response = await self._post(json.dumps(body).encode("utf-8"), progress)
            except TimeoutError:  # the whole try's deadline, not one read's timeout
                failure = ModelUnavailable(
                    f"{self.shown_url} did not finish its reply within its deadline of "
                    f"{self.spec.deadline_seconds:g} s",
                    hint="a slow local model may need a larger runner.model.deadline_seconds",
                    retryable=True,
                )
                wait = self.retry.backoff(attempt)
            except httpx.TimeoutException:
                failure = ModelUnavailable(
                    f"{self.shown_url} did not answer within {self.spec.timeout_seconds:g} s",
                    hint="a slow local model may need a larger runner.model.timeout_seconds",
                    retryable=True,
                )
                wait = self.retry.backoff(attempt)
            except httpx.TransportError as error:
                failure = ModelUnavailable(
                    f"cannot reach {self.shown_url}: {type(error).__name__}",
                    hint="is the model's server running? (`bees model serve` for the "
                    "embedded one)",
                    retryable=True,
                )
                wait = self.retry.backoff(attempt)
            else:
                if isinstance(response, ChatResponse) or response.is_success:
                    self.streams = streamed and isinstance(response, ChatResponse)
                    return Completion(
                        response=response if isinstance(response, ChatResponse)
                        else self._read(response),
                        attempts=attempt,
                        seconds=self._clock() - started,
                    )
                if streamed and response.status_code in (400, 422) \
                        and "stream" in self._detail(response).lower():
                    self.streams, attempt = False, attempt - 1  # asked again without stream
                    continue
                failure, wait = self._failure(response, attempt)
            if attempt >= self.retry.attempts:
                raise failure
            await self._sleep(wait)

    async def _post(self, body: bytes,
                    progress: Progress | None) -> httpx.Response | ChatResponse:
        """POST ``body`` and read the reply as it arrives, counting its bytes.

        Returns:
            The reply with its whole body read (decoded: no ``Content-Encoding`` left), or
            a streamed 2xx reply assembled (:func:`~bees_cli.agents.model_stream.read_events`).

        Raises:
            ModelReplyTooLarge: the body passed ``max_reply_bytes``; the connection is
                closed there and the rest never read.
            httpx.TransportError: connecting or a read failed or timed out.
        """
        limit = self.spec.max_reply_bytes
        read = bytearray()
        async with self._http.stream("POST", self.url, content=body,
                                     headers=self._headers()) as streamed:
            if streamed.is_success and is_event_stream(streamed):
                return await read_events(streamed, limit=limit, too_large=self._too_large,
                                         progress=progress, scrub=self._scrub)
            async for chunk in streamed.aiter_bytes():
                read += chunk
                if len(read) > limit:
                    raise self._too_large()
        headers = [(name, value) for name, value in streamed.headers.multi_items()
                   if name.lower() not in ("content-encoding", "content-length",
                                           "transfer-encoding")]
        return httpx.Response(streamed.status_code, headers=headers, content=bytes(read),
                              request=streamed.request)

    def _too_large(self) -> ModelReplyTooLarge:
        limit = self.spec.max_reply_bytes
        return ModelReplyTooLarge(
            f"the reply was larger than {limit / 1_000_000:g} MB and was cut off there "
            f"({self.shown_url})",
            hint="raise runner.model.max_reply_bytes, or bound the reply with "
            "runner.max_reply_tokens")

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key.get_secret_value()}"
        return headers

    def _scrub(self, text: str) -> str:
        """Blank the key in ``text``; keep one line of at most DETAIL_CHARS characters."""
        if self._key is not None:
            text = text.replace(self._key.get_secret_value(), HIDDEN)
        line = " ".join(text.split())
        return line if len(line) <= DETAIL_CHARS else line[: DETAIL_CHARS - 1] + "…"

    def _detail(self, response: httpx.Response) -> str:
        """The server's own words about an error: ``error.message`` if JSON, else the text."""
        try:
            data: Any = response.json()
        except ValueError:
            return self._scrub(response.text)
        if isinstance(data, dict):
            error = data.get("error", data)
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                code = error.get("code")
                prefix = f"{code}: " if isinstance(code, str) else ""
                return self._scrub(prefix + error["message"])
            if isinstance(error, str):
                return self._scrub(error)
        return self._scrub(response.text)

    def _failure(self, response: httpx.Response, attempt: int) -> tuple[ModelError, float]:
        """Map a non-2xx answer to its error and the wait before the next try; raise at
        once when repeating cannot help."""
        status = response.status_code
        detail = self._detail(response)
        said = f": {detail}" if detail else ""
        if status in (401, 403):
            raise refused(self.spec.api_key_env, self.spec.name, self.shown_url, status,
                          said)
        if status == 429:
            after = retry_after_seconds(response.headers.get("retry-after"), self._now())
            limited = ModelRateLimited(
                f"{self.shown_url} asked to slow down (HTTP 429"
                + (f", Retry-After {after:g} s" if after is not None else "")
                + f"){said}",
                hint="wait, or lower how many stages call this model at once",
                retryable=True,
                retry_after=after,
            )
            if after is not None and after > self.retry.max_retry_after:
                raise limited
            return limited, after if after is not None else self.retry.backoff(attempt)
        if status >= 500 or status == 408:
            unavailable = ModelUnavailable(
                f"{self.shown_url} failed (HTTP {status}){said}", retryable=True
            )
            return unavailable, self.retry.backoff(attempt)
        if status in (400, 413) and any(m in detail.lower() for m in CONTEXT_MARKERS):
            raise ModelContextExceeded(
                f"the conversation no longer fits the context window of {self.spec.name} "
                f"at {self.shown_url} (HTTP {status}){said}",
                hint="shorten the instructions or the files given, or use a model with a "
                "larger context",
            )
        raise ModelRejected(
            f"{self.shown_url} refused the request (HTTP {status}){said}",
            hint=f"check runner.model (name {self.spec.name!r}, base_url) in the agent",
        )

    def _read(self, response: httpx.Response) -> ChatResponse:
        """Parse a 2xx answer as a chat completion.

        Why raise outside the ``except``: a decoding error keeps the whole body (which a
        server could fill with the key) and would travel as the new error's ``__context__``.
        """
        problem: str | None = None
        try:
            data = response.json()
        except ValueError:
            data = None
            problem = (f"answered HTTP {response.status_code} with something that is not "
                       f"JSON: {self._scrub(response.text[:DETAIL_CHARS])!r}")
        if problem is None:
            try:
                return ChatResponse.model_validate(data)
            except ValidationError as error:
                first = error.errors()[0]
                where = ".".join(str(part) for part in first["loc"]) or "(the body)"
                problem = f"answered JSON that is not a chat completion: {where}: {first['msg']}"
        raise ModelAnswerInvalid(f"{self.shown_url} {problem}")

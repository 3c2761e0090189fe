"""The HTTP pieces of a model call that need no client: the chat completions URL, the URL as
errors show it, the server a waiting item names, a ``Retry-After`` header read, and how
often a call is repeated (:class:`RetryPolicy`).

:class:`~bees_cli.agents.model_client.ModelClient` uses them; ``model_client`` re-exports
:func:`server_name`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime

import httpx

from bees_cli.errors import ModelUnauthorized

CONTEXT_MARKERS = (
    "context_length_exceeded",
    "exceed_context_size",
    "context length",
    "context window",
    "context size",
    "maximum context",
)
"""Lower-case phrases by which OpenAI, llama.cpp, vLLM and Ollama say the prompt is too long."""


def chat_url(base_url: str) -> str:
    """Return ``{base_url}/chat/completions``, keeping any query of ``base_url`` after it."""
    base = httpx.URL(base_url)
    return str(base.copy_with(path=base.path.rstrip("/") + "/chat/completions"))


PROBE_SECONDS = 2.0
"""Seconds ``bees doctor`` gives a model server to answer ``GET {base_url}/models``."""


def models_url(base_url: str) -> str:
    """Return ``{base_url}/models`` (the OpenAI-style model list), keeping any query."""
    base = httpx.URL(base_url)
    return str(base.copy_with(path=base.path.rstrip("/") + "/models"))


def server_unreachable(base_url: str, *, timeout: float = PROBE_SECONDS,
                       transport: httpx.BaseTransport | None = None) -> str | None:
    """Tell whether a model server answers at all: one ``GET {base_url}/models``.

    Any HTTP answer counts (a 401 or 404 is a server that is up); only a connection that
    fails or stays silent for ``timeout`` seconds does not. Used by ``bees doctor`` as a
    warning: eligibility never asks the network (DESIGN.md, Rules: eligibility).

    Returns:
        None when the server answered; else why not, as the error's type
        (``ConnectError``, ``ConnectTimeout``, ``ReadTimeout``…).
    """
    try:
        with httpx.Client(transport=transport, timeout=timeout) as client:
            client.get(models_url(base_url))
    except httpx.HTTPError as error:
        return type(error).__name__
    return None


def is_loopback(base_url: str) -> bool:
    """True when ``base_url``'s host is this computer (``127.0.0.1``, ``::1``, ``localhost``)."""
    host = httpx.URL(base_url).host
    return host in {"localhost", "::1"} or host.startswith("127.")


def display_url(url: str) -> str:
    """Return ``url`` as errors show it: scheme, host, port and path (no user, no query)."""
    parsed = httpx.URL(url)
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    port = f":{parsed.port}" if parsed.port is not None else ""
    return f"{parsed.scheme}://{host}{port}{parsed.path}"


def server_name(base_url: str) -> str:
    """Return the model's server as a waiting item names it: the host and port of
    ``base_url`` (``127.0.0.1:8080``, ``api.openai.com`` when the URL gives no port)."""
    parsed = httpx.URL(base_url)
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    return host if parsed.port is None else f"{host}:{parsed.port}"


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """Read a ``Retry-After`` header: seconds, or an HTTP date (counted from ``now``).

    Returns:
        Seconds to wait (never negative), or None when absent or unreadable.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            return None
        seconds = (when - now).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


def refused(key_env: str | None, model: str, shown_url: str, status: int,
            said: str) -> ModelUnauthorized:
    """Return the error of an HTTP 401/403 (``said``: the server's words, scrubbed): it names
    the key's environment variable ``key_env``, never the key."""
    if key_env is None:
        return ModelUnauthorized(
            f"{shown_url} refused a request without an API key (HTTP {status}){said}",
            hint="name the key's environment variable in runner.model.api_key_env",
        )
    return ModelUnauthorized(
        f"the API key in {key_env} was refused by {shown_url} (HTTP {status}){said}",
        hint=f"check the key in {key_env}, and that it may use model {model!r}",
    )


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long one model call is repeated.

    Attributes:
        attempts: tries in all, the first included (1: never repeat).
        first_backoff: seconds before the second try after a 5xx or a connection error;
            doubled before each next one, capped at ``max_backoff``.
        max_backoff: the longest backoff, seconds.
        max_retry_after: the longest ``Retry-After`` (seconds) waited here; a longer one
            raises :class:`ModelRateLimited` at once, carrying it, for a scheduler to honour.
    """

    attempts: int = 4
    first_backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 60.0

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed try number ``attempt`` (1 first)."""
        return float(min(self.first_backoff * 2 ** (attempt - 1), self.max_backoff))

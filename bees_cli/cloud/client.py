"""The clients of a computer's sign-in (:func:`cloud_for`, :func:`sync_cloud_for`,
:func:`ask_owner`), and the typed clients of the Bees Cloud API v1 by their public names:
:class:`CloudClient` (blocking, :mod:`~bees_cli.cloud.blocking_client`) and
:class:`AsyncCloudClient` (:mod:`~bees_cli.cloud.async_client`), over the plans of
:class:`~bees_cli.cloud.client_base.BaseCloudClient` (whose docstring maps answers to errors).

Why lazy: the clients, their wire models (~0.1 s of CPU) and httpx (~0.1 s) are imported at
their first use (PEP 562), not with this module. Without a sign-in the three functions
return None and load none of them, so ``bees schedules``, ``bees doctor`` and ``bees item
create`` pay nothing for a cloud they do not ask.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bees_cli.cloud import wire
    from bees_cli.cloud.async_client import AsyncCloudClient
    from bees_cli.cloud.blocking_client import CloudClient
    from bees_cli.cloud.calls import Call, check_url, read_answer, url_problem
    from bees_cli.cloud.client_base import BaseCloudClient, Pause, Skew
    from bees_cli.machine.computer import Computer

__all__ = [
    "AsyncCloudClient",
    "BaseCloudClient",
    "Call",
    "CloudClient",
    "Pause",
    "Skew",
    "check_url",
    "read_answer",
    "url_problem",
]

_HOMES = {
    "AsyncCloudClient": "async_client",
    "BaseCloudClient": "client_base",
    "Call": "calls",
    "CloudClient": "blocking_client",
    "Pause": "client_base",
    "Skew": "client_base",
    "check_url": "calls",
    "read_answer": "calls",
    "url_problem": "calls",
}
"""Each public name and the module of :mod:`bees_cli.cloud` that holds it."""


def __getattr__(name: str) -> Any:
    """Import the module that holds ``name`` the first time it is read (PEP 562)."""
    module = _HOMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"bees_cli.cloud.{module}"), name)
    globals()[name] = value
    return value


def _client_class(name: str) -> Any:
    """Return the client class this module names ``name`` (imported now at its first use; a
    test may have replaced it, as with any module attribute)."""
    return getattr(sys.modules[__name__], name)


def cloud_for(
    computer: Computer, *, retries: int = 0, timeout: float = 5.0, backoff: float = 0.25
) -> AsyncCloudClient | None:
    """Return an async client for ``computer``'s sign-in, or None when it has none.

    Args:
        computer: the computer whose sign-in (and, in tests, transport and sleep) to use.
        retries: the client's own extra attempts (callers that count tries pass 0).
        timeout: seconds for connect, read and write.
        backoff: seconds before the client's first retry.
    """
    if computer.login is None:
        return None
    kwargs: dict[str, Any] = {}
    if computer.cloud_sleep is not None:
        kwargs["sleep"] = computer.cloud_sleep
    made: type[AsyncCloudClient] = _client_class("AsyncCloudClient")
    return made(
        computer.login.url, computer.login.token, transport=computer.transport,
        retries=retries, timeout=timeout, backoff=backoff, **kwargs)


def sync_cloud_for(
    computer: Computer, *, retries: int = 0, timeout: float = 5.0
) -> CloudClient | None:
    """Return a blocking client for ``computer``'s sign-in (the CLI), or None without one."""
    if computer.login is None:
        return None
    made: type[CloudClient] = _client_class("CloudClient")
    return made(computer.login.url, computer.login.token, retries=retries, timeout=timeout)


def owner_claim_of(computer: Computer, item_id: str) -> wire.OwnerClaim:
    """Return ``computer``'s request to own ``item_id`` (Rules: owners), the one request
    every owner claim sends (``bees item create``, ``bees run``, a fire, ``bees continue``)."""
    from bees_cli.cloud import wire

    return wire.OwnerClaim(item_id=item_id, machine_id=computer.machine_id,
                           computer_name=computer.computer)


def ask_owner(computer: Computer, item_id: str) -> wire.OwnerAnswer | None:
    """Ask Bees Cloud, blocking (two retries), that ``computer`` own ``item_id``.

    Returns:
        The cloud's answer (``granted`` False: another computer owns it); None when
        ``computer`` has no sign-in (no cloud to ask).

    Raises:
        CloudUnreachable: no answer (the claim may have been taken: asking again is safe,
            the same computer is granted it again).
        CloudRefused, CloudError: the cloud refused the request or answered badly.
    """
    api = sync_cloud_for(computer, retries=2)
    if api is None:
        return None
    with api:
        return api.claim_owner(owner_claim_of(computer, item_id))

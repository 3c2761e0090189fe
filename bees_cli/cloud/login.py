"""This computer's sign-in to Bees Cloud (``state_dir()/cloud.json``, mode 0600) and status."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.errors import CloudError, UserError
from bees_cli.machine.signin import (
    Login,
    clear_login,
    effective_login,
    load_login,
    login_path,
    save_login,
)
from bees_cli.utc import format_utc

__all__ = ["Login", "SignIn", "check_transport", "clear_login", "client", "effective_login",
           "is_loopback", "load_login", "login", "login_path",
           "normalise_url", "resolve_url", "save_login", "status", "workspace_cloud_url"]

if TYPE_CHECKING:
    import httpx

    from bees_cli.cloud.client import CloudClient


def workspace_cloud_url(workspace: Path | None) -> str | None:
    """Return the ``cloud:`` URL of the workspace (bees.yaml), or None when it names none.

    Uses the workspace loader when it is importable; otherwise reads only the
    ``cloud`` key of ``bees.yaml``.

    Raises:
        UserError: no workspace found, or bees.yaml is unreadable.
    """
    root = _workspace_root(workspace)
    from ruamel.yaml import YAML, YAMLError

    path = root / "bees.yaml"
    try:
        data = YAML(typ="safe", pure=True).load(path.read_text("utf-8"))
    except (OSError, YAMLError) as error:
        raise UserError(f"{path}: cannot read: {error}") from None
    url = data.get("cloud") if isinstance(data, dict) else None
    return url if isinstance(url, str) and url.strip() else None


def _workspace_root(workspace: Path | None) -> Path:
    try:
        from bees_cli.workspace.loader import find_workspace
    except ImportError:  # pragma: no cover - the loader ships with the package
        return (workspace or Path.cwd()).expanduser().resolve()
    return find_workspace(workspace)


def normalise_url(url: str) -> str:
    """Return ``url`` without blanks or a trailing slash.

    Raises:
        UserError: not a valid http(s) URL: no host, or a port that is not a number
            from 1 to 65535 (see :func:`bees_cli.cloud.client.url_problem`).
    """
    from bees_cli.cloud.client import check_url

    return check_url(url)


def is_loopback(host: str) -> bool:
    """Return True when ``host`` names this computer (``localhost``, 127.0.0.0/8, ``::1``)."""
    import ipaddress

    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_transport(url: str, *, insecure: bool = False) -> str:
    """Return ``url`` checked (:func:`normalise_url`), refusing plain ``http://`` to a host
    that is not this computer unless ``insecure``.

    Why: a bearer token sent over plain HTTP can be read by anyone on the way; only a
    loopback address stays on this computer (as ``gh`` and ``docker login`` do).

    Raises:
        UserError: the URL is not valid, or it is plain http to another host (exit 2).
    """
    from urllib.parse import urlsplit

    checked = normalise_url(url)
    parts = urlsplit(checked)
    if parts.scheme == "http" and not insecure and not is_loopback(parts.hostname or ""):
        raise UserError(
            f"refusing to send a token over plain http to {parts.hostname}",
            hint=f"use https://{parts.netloc}{parts.path}, or add --insecure if this network"
            " is trusted",
        )
    return checked


def resolve_url(url: str | None, workspace: Path | None = None) -> str:
    """Return the server URL to sign in to: ``url``, or the workspace's ``cloud:`` URL.

    Why: ``bees login`` asks for the token only after this succeeds, so a missing
    URL fails before the prompt.

    Raises:
        UserError: ``url`` is None and no workspace is found or it names no ``cloud:``
            URL; bees.yaml is unreadable; the URL is not valid.
    """
    if url is None:
        root: Path | None = workspace
        if workspace is None:
            try:
                root = _workspace_root(None)
            except UserError:  # no workspace here: say what is missing, once
                root = None
        url = workspace_cloud_url(root) if root is not None else None
        if url is None:
            raise UserError(
                "no URL given and no workspace cloud URL",
                hint="pass it: bees login https://cloud.example.com --with-token"
                " (or set `cloud:` in bees.yaml)",
            )
    return normalise_url(url)


@dataclass(frozen=True)
class SignIn:
    """What ``bees login`` did: the stored login, who the server says the token is
    (None when not checked), and this computer's person before (None when unset)."""

    login: Login
    me: Any
    person_before: str | None

    @property
    def person_changed(self) -> bool:
        """True when the check set a person other than the one set before (any case)."""
        if self.me is None:
            return False
        before = (self.person_before or "").lower()
        return before != str(self.me.person).lower()


LOGIN_TIMEOUT = 5.0
"""Seconds the sign-in's check gives Bees Cloud per try (two tries): a person waits on it."""


def login(
    url: str | None,
    token: str,
    *,
    workspace: Path | None = None,
    check: bool = True,
    transport: httpx.BaseTransport | None = None,
) -> SignIn:
    """Sign this computer in: check the token against the server, then store it.

    A checked sign-in also makes the token's person this computer's person
    (``bees whoami``), since the server acts for that person.

    Args:
        url: server URL; None means the workspace's ``cloud:`` URL.
        token: the bearer token printed by ``bees cloud person add``.
        workspace: workspace folder for the default URL.
        check: ask the server who the token is before storing (default True).
        transport: httpx transport (tests).

    Returns:
        The stored login, the server's :class:`~bees_cli.cloud.wire.Me` (None
        unchecked) and the person set before.

    Raises:
        UserError: no URL given and the workspace names none; a URL that is not
            valid; empty token.
        CloudUnreachable, CloudUnauthorized: the check failed (no answer within
            :data:`LOGIN_TIMEOUT` s, twice); nothing is stored.
    """
    from bees_cli.machine.identity import load_identity, set_identity

    stored_url = resolve_url(url, workspace)
    token = token.strip()
    if not token:
        raise UserError("empty token", hint="pass the token from `bees cloud person add`")
    stored = Login(url=stored_url, token=token)
    me = None
    if check:
        from bees_cli.cloud.client import CloudClient
        from bees_cli.errors import CloudUnreachable

        try:
            with CloudClient(stored.url, stored.token, transport=transport, retries=1,
                             timeout=LOGIN_TIMEOUT) as client:
                me = client.me()
        except CloudUnreachable as error:  # not the usual hint: it is the command just run
            raise CloudUnreachable(error.message, hint=f"is Bees Cloud running at "
                                   f"{stored.url}? nothing was stored") from None
    before = load_identity().person
    save_login(stored)
    done = SignIn(login=stored, me=me, person_before=before)
    if me is not None and before != me.person:
        set_identity(person=me.person)
    return done


def client(*, transport: httpx.BaseTransport | None = None, retries: int = 2) -> CloudClient:
    """Return a :class:`CloudClient` for the sign-in in force (the stored one, with
    ``BEES_CLOUD_URL`` and ``BEES_TOKEN`` over it).

    Raises:
        UserError: this computer is not signed in, or only half a sign-in is in the
            environment.
    """
    from bees_cli.cloud.client import CloudClient

    stored = effective_login()
    if stored is None:
        raise UserError("not signed in to Bees Cloud", hint="run `bees login URL --with-token`")
    return CloudClient(stored.url, stored.token, transport=transport, retries=retries)


def status(*, transport: httpx.BaseTransport | None = None) -> dict[str, Any]:
    """Return this computer's Bees Cloud status as a JSON-ready dict.

    Keys: ``url``, ``reachable`` (bool), ``person``, ``team``, ``server_time``
    (:func:`~bees_cli.utc.format_utc`), ``skew_seconds`` (server minus local),
    ``round_trip_seconds``,
    ``error`` (``{"code", "message", "hint"}`` when not reachable or refused).

    Raises:
        UserError: this computer is not signed in.
    """
    with client(transport=transport, retries=1) as api:
        result: dict[str, Any] = {
            "url": api.base_url,
            "reachable": False,
            "person": None,
            "team": None,
            "server_time": None,
            "skew_seconds": None,
            "round_trip_seconds": None,
            "error": None,
        }
        try:
            skew = api.skew()
        except CloudError as error:
            result["reachable"] = error.code != "cloud_unreachable"
            result["error"] = error.to_json()
            return result
    result.update(
        reachable=True,
        person=skew.me.person,
        team=skew.me.team,
        server_time=format_utc(skew.me.server_time),
        skew_seconds=round(skew.skew_seconds, 3),
        round_trip_seconds=round(skew.round_trip_seconds, 3),
    )
    return result

"""This computer's stored sign-in to Bees Cloud: ``STATE/cloud.json``, mode 0600."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from bees_cli.errors import UserError

URL_VARIABLE: Final = "BEES_CLOUD_URL"
"""The environment variable that overrides the saved Bees Cloud URL (CI)."""
TOKEN_VARIABLE: Final = "BEES_TOKEN"
"""The environment variable that overrides the saved bearer token (CI)."""

Source = Literal["saved", "BEES_CLOUD_URL", "BEES_TOKEN"]
"""Where a sign-in's URL or token came from: this computer's ``cloud.json``, or a variable."""


@dataclass(frozen=True)
class Login:
    """A sign-in: the server URL and the person's bearer token, and where each came from.

    Attributes:
        url: the server's URL.
        token: the bearer token.
        url_from: ``saved`` (``cloud.json``) or ``BEES_CLOUD_URL``.
        token_from: ``saved`` (``cloud.json``) or ``BEES_TOKEN``.
    """

    url: str
    token: str = field(repr=False)
    url_from: Source = "saved"
    token_from: Source = "saved"

    @property
    def sources(self) -> str:
        """Where the URL and token came from, for people (empty when both were saved)."""
        if self.url_from == self.token_from == "saved":
            return ""
        return f"URL from {self.url_from}, token from {self.token_from}"


def login_path(state: Path | None = None) -> Path:
    """Return the file holding the sign-in of the computer whose state folder is ``state``
    (default: this one's)."""
    from bees_cli.machine.paths import state_dir

    return (state or state_dir()) / "cloud.json"


def load_login(state: Path | None = None) -> Login | None:
    """Return the stored sign-in, or None when this computer is not signed in.

    Raises:
        UserError: the file exists but is not a valid sign-in.
    """
    from bees_cli.files import read_json

    path = login_path(state)
    try:
        data = read_json(path, None)
    except ValueError:
        raise UserError(f"{path}: not valid JSON", hint="run `bees logout`, then log in") from None
    if data is None:
        return None
    if not isinstance(data, dict) or not all(
        isinstance(data.get(k), str) for k in ("url", "token")
    ):
        raise UserError(f"{path}: not a Bees Cloud sign-in", hint="run `bees logout`")
    return Login(url=data["url"], token=data["token"])


def effective_login(
    state: Path | None = None, environ: Mapping[str, str] | None = None
) -> Login | None:
    """Return the sign-in in force: the saved one, with ``BEES_CLOUD_URL`` and ``BEES_TOKEN``
    overriding its URL and token (as ``GH_TOKEN`` and ``TEMPORAL_ADDRESS`` do), or None.

    Why: a CI job signs in by its environment, without writing a token to disk.

    Args:
        state: the computer's state folder (default: this one's).
        environ: the environment (default ``os.environ``).

    Raises:
        UserError: the saved file is not valid; or one variable is set and the other half
            (URL or token) is neither set nor saved.
    """
    env = os.environ if environ is None else environ
    url = env.get(URL_VARIABLE, "").strip() or None
    token = env.get(TOKEN_VARIABLE, "").strip() or None
    saved = load_login(state)
    if url is None and token is None:
        return saved
    if url is None and saved is None:
        raise UserError(f"{TOKEN_VARIABLE} is set but no Bees Cloud URL is",
                        hint=f"set {URL_VARIABLE} too (or run `bees login URL` once)")
    if token is None and saved is None:
        raise UserError(f"{URL_VARIABLE} is set but no token is",
                        hint=f"set {TOKEN_VARIABLE} too (or run `bees login --with-token`)")
    return Login(
        url=url.rstrip("/") if url else saved.url if saved else "",
        token=token or (saved.token if saved else ""),
        url_from=URL_VARIABLE if url else "saved",
        token_from=TOKEN_VARIABLE if token else "saved",
    )


def take_token_person(person: str, *, login: Login | None, current: str | None,
                      state: Path | None = None) -> bool:
    """Make ``person`` (who Bees Cloud says the token of ``login`` is) this computer's person
    when that token came from ``BEES_TOKEN`` and ``current`` (this computer's person now)
    differs; return True when it did.

    Why: ``bees login`` makes the token's person this computer's person (the server acts
    for that person); a computer signed in by its environment alone had none, so its
    schedules never fired and ``bees doctor`` named two people (issue 23, point 8). Whoever
    learns who the token is (``bees run`` at its start, ``bees doctor``) calls this.

    Args:
        person: the token's person, as Bees Cloud answered.
        login: the sign-in in force (:func:`effective_login`), or None.
        current: this computer's person now, or None.
        state: the computer's state folder (default: this one's).

    Raises:
        UserError: ``person`` is not an email address.
        DiskError: ``machine.json`` cannot be written.
    """
    from bees_cli.machine.identity import set_identity

    if login is None or login.token_from != TOKEN_VARIABLE or person == current:
        return False
    set_identity(person=person, state=state)
    return True


def save_login(login: Login) -> Path:
    """Store ``login`` atomically with mode 0600; return the file."""
    from bees_cli.files import write_json_atomic

    path = login_path()
    write_json_atomic(path, {"url": login.url, "token": login.token}, mode=0o600)
    return path


def clear_login() -> bool:
    """Forget the sign-in; return False when there was none."""
    try:
        login_path().unlink()
    except FileNotFoundError:
        return False
    return True

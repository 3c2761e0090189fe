"""This computer's stored sign-in to Bees Cloud: ``STATE/cloud.json``, mode 0600."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bees_cli.errors import UserError


@dataclass(frozen=True)
class Login:
    """A stored sign-in: the server URL and the person's bearer token."""

    url: str
    token: str


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

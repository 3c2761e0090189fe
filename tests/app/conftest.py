"""Fixtures of the Bees app's tests: one computer's :class:`Bees`, the app over it, a client
that speaks to it as a browser would, under the app's own name (Starlette's TestClient), and
an httpx transport that reaches ``*.localhost`` on loopback as browsers do."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.exceptions import StarletteDeprecationWarning

with warnings.catch_warnings():  # Starlette 1 asks for httpx2; httpx is what Bees has
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

from bees_cli.app.security import Guard
from bees_cli.app.server import create_app
from bees_cli.machine.computer import Computer
from bees_cli.usecases import Bees

PORT = 8765
"""The port the guard names (the TestClient never opens a socket)."""

HOST = "bees-0123456789abcdef0123456789abcdef.localhost"
"""The app's own name in these tests (a real app draws a random one)."""

ORIGIN = f"http://{HOST}:{PORT}"


@pytest.fixture
def computer(bees_home: Path) -> Computer:
    """This test's computer (a fresh ``BEES_HOME``)."""
    return Computer.load(bees_home)


@pytest.fixture
def guard() -> Guard:
    """The app's secrets, for :data:`HOST` and :data:`PORT`."""
    return Guard(port=PORT, host=HOST)


@pytest.fixture
def bees(computer: Computer) -> Bees:
    """The application over this test's computer (no engine: none runs)."""
    return Bees(computer)


@pytest.fixture
def anonymous(bees: Bees, guard: Guard, tmp_path: Path) -> Iterator[TestClient]:
    """A client that has not shown the secret (no cookie). The app's clock stands still
    (the live parts' versions count minutes: a test never crosses one)."""
    app = create_app(bees, guard, workspace=tmp_path / "ws")
    app.state.bees_app.clock = lambda: 1_800_000_000.0
    with TestClient(app, base_url=ORIGIN, follow_redirects=False) as client:
        yield client


@pytest.fixture
def client(anonymous: TestClient, guard: Guard) -> TestClient:
    """A client that opened the first URL: it holds the session cookie."""
    assert anonymous.get(f"/?secret={guard.secret}").status_code == 303
    return anonymous


def version(html: str) -> str:
    """Return the live part's version in ``html`` (its ``hx-vals``)."""
    found = re.search(r"hx-vals='\{\"v\": \"([0-9a-f]{16})\"\}'", html)
    assert found is not None, html
    return found.group(1)


def buttons(html: str) -> list[str]:
    """Return the ``data-testid`` of each action button in ``html``, in order."""
    return re.findall(r'<button type="submit" id="do-\w+" data-testid="(\w+)"', html)


class LocalhostTransport(httpx.HTTPTransport):
    """httpx's transport, connecting to 127.0.0.1 for a ``*.localhost`` URL (as browsers and
    curl resolve those names themselves; the system resolver here may not). The request keeps
    its URL, so its ``Host`` header and the cookies it stores name the app, as a browser's."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` to 127.0.0.1 when its host ends in ``.localhost``."""
        if request.url.host.endswith(".localhost"):
            request = httpx.Request(request.method, request.url.copy_with(host="127.0.0.1"),
                                    headers=request.headers, stream=request.stream,
                                    extensions=request.extensions)
        return super().handle_request(request)

"""A real ``bees app`` refuses a request without its secret (403), with a foreign ``Host``
(421: 127.0.0.1 and localhost too, it answers only under its own name) and a POST without
the session's CSRF token (403); the secret's cookie is host-only, HttpOnly and
SameSite=Strict."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
from playwright.async_api import Browser, expect

from tests.app.conftest import LocalhostTransport
from tests.app_browser.conftest import Machine, open_page, signed_in, weekly_report

ITEM = "01KB0000000000000000000000"
"""An item id no computer knows: the refusals come before any look-up."""


def test_the_app_refuses_requests_without_the_secret_a_foreign_host_or_the_csrf_token(
        tmp_path: Path, machines: Callable[..., Machine]) -> None:
    workspace = weekly_report(tmp_path / "ws", tmp_path / "gates")
    laptop = machines(tmp_path / "laptop", "maya-laptop", "maya@example.com")
    app = laptop.app(workspace)
    secret = app.url.split("?secret=", 1)[1]

    with httpx.Client(base_url=app.base, follow_redirects=False, timeout=10,
                      transport=LocalhostTransport()) as stranger:
        assert stranger.get("/items").status_code == 403
        assert stranger.get(f"/items/{ITEM}").status_code == 403
        assert stranger.get("/?secret=" + "0" * len(secret)).status_code == 403
        assert stranger.post(f"/items/{ITEM}/approve", data={"csrf": "x"}).status_code == 403
        assert "bees_app_session" not in stranger.cookies
        # DNS rebinding: the right secret under a foreign name is refused before the secret
        rebound = stranger.get(f"/?secret={secret}", headers={"Host": f"evil.example:{app.port}"})
        assert rebound.status_code == 421
        assert "bees_app_session" not in stranger.cookies
        foreign = stranger.get("/items", headers={"Host": "127.0.0.1.evil.example"})
        assert foreign.status_code == 421

    # the socket is 127.0.0.1's, but there the secret sets no cookie (it would reach every
    # other port of 127.0.0.1)
    with httpx.Client(base_url=f"http://127.0.0.1:{app.port}", follow_redirects=False,
                      timeout=10) as loopback:
        plain = loopback.get(f"/?secret={secret}")
        assert (plain.status_code, plain.headers.get("set-cookie")) == (421, None)

    with httpx.Client(follow_redirects=False, timeout=10,
                      transport=LocalhostTransport()) as browser:
        first = browser.get(app.url)
    assert (first.status_code, first.headers["location"]) == (303, "/items")
    cookie = [part.strip().lower() for part in first.headers["set-cookie"].split(";")]
    assert cookie[0].startswith("bees_app_session=")
    assert {"httponly", "samesite=strict", "path=/"} <= set(cookie[1:])
    assert [part for part in cookie if part.startswith("domain=")] == []  # host-only

    with signed_in(app) as client:
        assert client.get("/items").status_code == 200
        # loopback without the app's name is refused too: its cookies reach every port
        assert client.get("/items", headers={"Host": f"localhost:{app.port}"}).status_code == 421
        assert client.get("/items", headers={"Host": f"127.0.0.1:{app.port}"}).status_code == 421
        assert client.get("/items", headers={"Host": f"evil.example:{app.port}"}
                          ).status_code == 421
        assert client.post(f"/items/{ITEM}/approve").status_code == 403
        assert client.post(f"/items/{ITEM}/approve", data={"csrf": "wrong"}).status_code == 403
        assert client.post(f"/items/{ITEM}/deny", data={"reason": "no"}).status_code == 403



async def test_a_page_says_so_when_the_app_stops_answering(
        tmp_path: Path, machines: Callable[..., Machine], browser: Browser) -> None:
    workspace = weekly_report(tmp_path / "ws", tmp_path / "gates")
    laptop = machines(tmp_path / "laptop", "maya-laptop", "maya@example.com")
    app = laptop.app(workspace)
    async with open_page(browser, app.url) as page:
        offline = page.locator("#offline")
        await expect(page.locator("h1")).to_have_text("Items")
        await expect(offline).to_be_hidden()
        assert app.stop() == 0
        # the list's next poll (every second) cannot reach the app: the page says so
        await expect(offline).to_be_visible()
        await expect(offline).to_contain_text("cannot reach bees app")

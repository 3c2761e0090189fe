"""The app's guard (issue 17, point 1; APP_CONTRACT.md, Security): 421 for a foreign Host,
403 without the secret or its cookie, the secret sets the cookie, 403 without the csrf.

Issue 23, point 6: the app answers only under its own random name ``bees-<hex>.localhost``
and its port, never ``127.0.0.1`` or ``localhost`` (whose cookies reach every other port),
and its session cookie is host-only on that name."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from bees_cli.app.security import COOKIE, Guard
from tests.app.conftest import HOST, PORT

ITEM = "01JH3QX5Z8KZ2W4M6N8P0R2T4V"


@pytest.mark.parametrize("path", ["/", "/items", "/items/rows", f"/items/{ITEM}",
                                  "/schedules", "/doctor", "/static/htmx.min.js"])
def test_every_route_answers_403_without_the_secret_or_its_cookie(
        anonymous: TestClient, path: str) -> None:
    answer = anonymous.get(path)
    assert answer.status_code == 403
    assert answer.text == ("403 Forbidden: open the URL bees app printed (it holds the "
                           "secret)")


def test_a_wrong_secret_is_403_and_sets_no_cookie(anonymous: TestClient) -> None:
    answer = anonymous.get("/?secret=not-it")
    assert answer.status_code == 403
    assert "set-cookie" not in answer.headers


def test_the_secret_sets_the_session_cookie_and_redirects_to_the_items(
        anonymous: TestClient, guard: Guard) -> None:
    answer = anonymous.get(f"/?secret={guard.secret}")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/items"
    # no Domain: host-only, sent back to the app's own name only
    assert answer.headers["set-cookie"] == (
        f"{COOKIE}={guard.session}; HttpOnly; Path=/; SameSite=strict")
    assert anonymous.get("/items").status_code == 200


def test_the_secret_on_another_page_keeps_that_page_and_its_query(
        anonymous: TestClient, guard: Guard) -> None:
    answer = anonymous.get(f"/items?show=failed&secret={guard.secret}")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/items?show=failed"


def test_a_forged_cookie_is_403(anonymous: TestClient) -> None:
    anonymous.cookies.set(COOKIE, "forged")
    assert anonymous.get("/items").status_code == 403


FOREIGN = ["evil.example", f"evil.example:{PORT}", "127.0.0.1", f"127.0.0.1:{PORT + 1}",
           f"[::1]:{PORT}", f"localhost.evil.example:{PORT}",
           # loopback without the app's name: a cookie there reaches every other port
           f"127.0.0.1:{PORT}", f"localhost:{PORT}",
           # near the name: another name, its parent or child, another port, no port
           f"bees-{'f' * 32}.localhost:{PORT}", f"sub.{HOST}:{PORT}", f"{HOST}.:{PORT}",
           f"{HOST}:{PORT + 1}", HOST, f"{HOST}.evil.example:{PORT}"]
"""``Host`` headers the app refuses: every one but ``HOST:PORT``."""


@pytest.mark.parametrize("host", FOREIGN)
def test_a_foreign_host_is_421_before_the_secret_is_looked_at(
        anonymous: TestClient, guard: Guard, host: str) -> None:
    answer = anonymous.get(f"/?secret={guard.secret}", headers={"host": host})
    assert answer.status_code == 421
    assert "set-cookie" not in answer.headers
    # the refusal never says the name: a program asking 127.0.0.1:PORT must not learn it
    assert answer.text == ("421 Misdirected Request: this app answers only at the address "
                           "bees app printed")


@pytest.mark.parametrize("host", FOREIGN)
def test_a_foreign_host_is_421_even_with_the_cookie(client: TestClient, host: str) -> None:
    assert client.get("/items", headers={"host": host}).status_code == 421
    assert client.post(f"/items/{ITEM}/retry", headers={"host": host}).status_code == 421


def test_only_the_apps_own_name_and_port_are_served(client: TestClient) -> None:
    assert client.get("/items", headers={"host": f"{HOST}:{PORT}"}).status_code == 200
    assert client.get("/items", headers={"host": f"{HOST.upper()}:{PORT}"}).status_code == 200
    assert client.get("/items", headers={"host": f"localhost:{PORT}"}).status_code == 421
    assert client.get("/items", headers={"host": f"127.0.0.1:{PORT}"}).status_code == 421


def test_port_80_may_be_left_out_of_the_host() -> None:
    guard = Guard(port=80, host=HOST)
    assert (guard.host_ok(HOST), guard.host_ok(f"{HOST}:80"), guard.host_ok("127.0.0.1:80"),
            guard.host_ok("localhost"), guard.host_ok(None)) == (True, True, False, False, False)


def test_a_post_without_or_with_a_wrong_csrf_is_403(client: TestClient, guard: Guard) -> None:
    for form in ({}, {"csrf": ""}, {"csrf": "wrong"}, {"csrf": guard.session}):
        answer = client.post(f"/items/{ITEM}/retry", data=form)
        assert answer.status_code == 403, form
    answer = client.post(f"/items/{ITEM}/retry", data={"csrf": guard.csrf})
    assert answer.status_code == 303


def test_a_post_without_the_cookie_is_403_even_with_the_csrf(
        anonymous: TestClient, guard: Guard) -> None:
    assert anonymous.post(f"/items/{ITEM}/retry", data={"csrf": guard.csrf}).status_code == 403


def test_a_get_never_acts(client: TestClient) -> None:
    assert client.get(f"/items/{ITEM}/retry").status_code == 405


def test_every_answer_forbids_framing_and_referrers(client: TestClient) -> None:
    headers = client.get("/items").headers
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "no-referrer"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]


def test_each_process_has_its_own_name_and_secrets() -> None:
    one, two = Guard(port=1), Guard(port=1)
    assert len({one.secret, one.session, one.csrf, two.secret, two.session, two.csrf}) == 6
    assert one.host != two.host
    for guard in (one, two):
        assert re.fullmatch(r"bees-[0-9a-f]{32}\.localhost", guard.host), guard.host
        assert guard.origin == f"http://{guard.host}:1"
        assert guard.url() == f"http://{guard.host}:1/?secret={guard.secret}"


@pytest.mark.parametrize("headers", [
    {"origin": "http://127.0.0.1:8080"},
    {"origin": "null", "sec-fetch-site": "cross-site"},
    {"origin": f"http://{HOST}:{PORT + 1}"},
    {"sec-fetch-site": "cross-site"},
    {"sec-fetch-site": "same-site"},
])
def test_a_post_from_another_origin_is_403_even_with_the_cookie_and_the_csrf(
        client: TestClient, guard: Guard, headers: dict[str, str]) -> None:
    answer = client.post(f"/items/{ITEM}/retry", data={"csrf": guard.csrf}, headers=headers)
    assert (answer.status_code, answer.text) == (
        403, "403 Forbidden: the form was sent from another site")


def test_a_post_from_the_apps_own_origin_or_without_one_acts(
        client: TestClient, guard: Guard) -> None:
    for headers in ({"origin": guard.origin, "sec-fetch-site": "same-origin"}, {},
                    {"sec-fetch-site": "none"}, {"origin": "null"},
                    {"origin": "null", "sec-fetch-site": "same-origin"}):
        answer = client.post(f"/items/{ITEM}/retry", data={"csrf": guard.csrf}, headers=headers)
        assert answer.status_code == 303, headers

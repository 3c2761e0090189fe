"""Issue 23, point 6: another program on another loopback port, opened in the same browser
as the Bees app, neither receives the app's session nor reads or approves through it; and
no other program can answer for the app's name on IPv6 loopback (Chromium tries ``::1``
first for a ``*.localhost`` name).

The attacker is a real HTTP server on ``127.0.0.1:OTHER``. Its page is opened in the
browser context where the person signed in to the app; the server keeps every
``bees_app_session`` cookie the browser sends it and, with one, reads the item page
(its CSRF token) and approves as the page would. The page itself tries, against the app's
port on ``127.0.0.1`` and ``localhost``: a credentialed fetch of the item page, a no-cors
fetch, an iframe, a no-cors POST and a form POST of the approval.
"""

from __future__ import annotations

import contextlib
import errno
import json
import re
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from playwright.async_api import Browser, expect
from temporalio.testing import WorkflowEnvironment

from bees_cli.record.local import LocalRecord
from tests.app_browser.conftest import LIVE, Machine, weekly_report
from tests.support.wait import until

ATTACK_JS = """
async (targets) => {
  const item = document.body.dataset.item, csrf = document.body.dataset.csrf;
  const results = {};
  const loaded = (element) => new Promise((done) => {
    element.addEventListener("load", () => done("load"), {once: true});
    setTimeout(() => done("timeout"), 5000);
  });
  const body = () => new URLSearchParams({csrf});
  for (const base of targets) {
    const page = `${base}/items/${item}`, approve = `${page}/approve`;
    const got = {};
    try {
      const answer = await fetch(page, {credentials: "include"});
      got.read = `read ${answer.status}: ${await answer.text()}`;
    } catch (error) { got.read = error.name; }
    try {
      const answer = await fetch(page, {credentials: "include", mode: "no-cors"});
      got.opaque = `${answer.type} ${answer.status} ${(await answer.text()).length}`;
    } catch (error) { got.opaque = error.name; }
    const frame = document.createElement("iframe");
    frame.src = page;
    const shown = loaded(frame);
    document.body.append(frame);
    got.iframe_load = await shown;
    try {
      const seen = frame.contentDocument;
      got.iframe = seen === null ? "no document" : `read: ${seen.body.innerText}`;
    } catch (error) { got.iframe = error.name; }
    try {
      const answer = await fetch(approve, {method: "POST", credentials: "include",
                                           mode: "no-cors", body: body()});
      got.post = `${answer.type} ${answer.status}`;
    } catch (error) { got.post = error.name; }
    const sink = document.createElement("iframe");
    sink.name = `sink-${Object.keys(results).length}`;
    document.body.append(sink);
    const form = document.createElement("form");
    form.method = "post";
    form.action = approve;
    form.target = sink.name;
    const token = document.createElement("input");
    token.type = "hidden";
    token.name = "csrf";
    token.value = csrf;
    form.append(token);
    document.body.append(form);
    const sent = loaded(sink);  // after the sink's own first (blank) load
    form.submit();
    got.form = await sent;
    try {
      got.form_read = sink.contentDocument === null ? "no document"
        : `read: ${sink.contentDocument.body.innerText}`;
    } catch (error) { got.form_read = error.name; }
    results[base] = got;
  }
  return results;
}
"""
"""What the attacker's page tries against each base URL; it returns what it could see."""


@dataclass
class Attacker:
    """The other program: what it received and what it did with it."""

    app_port: int
    item: str
    stolen: list[str] = field(default_factory=list)
    """Every ``bees_app_session`` value the browser sent to this server."""
    relayed: list[str] = field(default_factory=list)
    """What the server did with a stolen session: ``GET item page -> STATUS`` and
    ``POST approve -> STATUS``."""
    csrf: str = ""
    """The CSRF token read from the item page with a stolen session ("" if none)."""
    paths: list[str] = field(default_factory=list)
    """The path (and query: a first URL's secret) of every request this server answered."""

    def relay(self, session: str) -> None:
        """Use a stolen session as the app's own page would: read, then approve."""
        with httpx.Client(base_url=f"http://127.0.0.1:{self.app_port}", timeout=10,
                          cookies={"bees_app_session": session}) as web:
            page = web.get(f"/items/{self.item}")
            self.relayed.append(f"GET item page -> {page.status_code}")
            found = re.search(r'name="csrf" value="([^"]+)"', page.text)
            if found is None:
                return
            self.csrf = found.group(1)
            done = web.post(f"/items/{self.item}/approve", data={"csrf": self.csrf})
            self.relayed.append(f"POST approve -> {done.status_code}")

    def page(self) -> bytes:
        """The attacker's page (the script runs from the test, see :data:`ATTACK_JS`)."""
        return (f'<!doctype html><html><body data-item="{self.item}" '
                f'data-csrf="{self.csrf}"><h1>Cute cats</h1></body></html>').encode()


class _V6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


@contextmanager
def attacker_server(attacker: Attacker, *, at: tuple[str, int] = ("127.0.0.1", 0)
                    ) -> Iterator[str]:
    """Serve the attacker at ``at`` (a free port on 127.0.0.1 by default; an IPv6 address
    may be given); yield its base URL.

    Raises:
        OSError: the address cannot be bound (the app holds it).
    """

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            attacker.paths.append(self.path)
            jar: SimpleCookie = SimpleCookie()
            jar.load(self.headers.get("cookie", ""))
            if "bees_app_session" in jar:
                session = jar["bees_app_session"].value
                attacker.stolen.append(session)
                attacker.relay(session)
            body = attacker.page()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    kind = _V6Server if ":" in at[0] else ThreadingHTTPServer
    server = kind(at, Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{at[0]}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


async def test_a_page_on_another_loopback_port_neither_reads_nor_approves(
        tmp_path: Path, machines: Callable[..., Machine], browser: Browser,
        dev_env: WorkflowEnvironment) -> None:
    gates = tmp_path / "gates"
    gates.mkdir()
    workspace = weekly_report(tmp_path / "ws", gates)
    laptop = machines(tmp_path / "laptop", "maya-laptop", "maya@example.com")
    await laptop.run(workspace, dev_env.client.service_client.config.target_host)
    app = laptop.app(workspace)
    item = laptop.create(workspace, "Week 52 report")
    record = LocalRecord(laptop.computer.record_path)
    await until(lambda: record.item(item).status == "waiting for approval",
                f"{item} never reached Send's approval")

    context = await browser.new_context()
    context.set_default_timeout(LIVE)
    try:
        person = await context.new_page()
        await person.goto(app.url)  # the person signs in as bees app opened it
        await expect(person.locator("h1")).to_have_text("Items")

        attacker = Attacker(app.port, item)
        with attacker_server(attacker) as evil:
            other = await context.new_page()
            await other.goto(evil)
            await expect(other.locator("h1")).to_have_text("Cute cats")
            targets = [f"http://127.0.0.1:{app.port}", f"http://localhost:{app.port}"]
            seen = await other.evaluate(ATTACK_JS, targets)

        # the other program never received the session, so it read and approved nothing
        assert attacker.stolen == []
        assert attacker.relayed == []
        assert attacker.csrf == ""
        # its page read nothing of the app: every answer opaque, every frame closed to it
        nothing = {"read": "TypeError", "opaque": "opaque 0 0", "iframe_load": "load",
                   "iframe": "no document",
                   "post": "opaque 0", "form": "load", "form_read": "no document"}
        assert seen == {base: nothing for base in targets}, json.dumps(seen, indent=1)

        # the mail still waits for the person, who can still answer it in the app
        shown = await laptop_approvals(laptop)
        assert shown == [(item, "Send", "mail.send")]
        assert record.item(item).status == "waiting for approval"
        assert sorted((workspace / "outbox").glob(f"{item}-*.eml")) == []
        await person.goto(f"{app.base}/items/{item}")
        await expect(person.locator('[data-testid="item-status"]')).to_have_text(
            "waiting for approval")
        await person.locator('button[data-testid="approve"]').click()
        await expect(person.locator('[data-testid="item-status"]')).to_have_text("done")
    finally:
        await context.close()
    assert len(sorted((workspace / "outbox").glob(f"{item}-*.eml"))) == 1


async def laptop_approvals(laptop: Machine) -> list[tuple[str, str, str]]:
    """``bees approvals --json`` on the laptop: (item, stage, action) of each request."""
    listed = laptop.bees("approvals", "--json")
    assert listed.returncode == 0, listed.stderr
    return [(row["item_id"], row["stage"], row["action"])
            for row in json.loads(listed.stdout)["approvals"]]


async def test_no_other_program_answers_for_the_apps_name_on_ipv6_loopback(
        tmp_path: Path, machines: Callable[..., Machine], browser: Browser) -> None:
    workspace = weekly_report(tmp_path / "ws", tmp_path / "gates")
    laptop = machines(tmp_path / "laptop", "maya-laptop", "maya@example.com")
    app = laptop.app(workspace)
    attacker = Attacker(app.port, "")
    refused: int | None = None
    context = await browser.new_context()
    context.set_default_timeout(LIVE)
    try:
        # another program takes the app's port on ::1, where Chromium goes first for the name
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(attacker_server(attacker, at=("::1", app.port)))
            except OSError as error:
                refused = error.errno
            person = await context.new_page()
            await person.goto(app.url)
            heading = await person.locator("h1").inner_text()
        cookies = await context.cookies()
    finally:
        await context.close()
    assert (attacker.paths, attacker.stolen) == ([], [])
    assert (heading, refused) == ("Items", errno.EADDRINUSE)
    host = app.base.removeprefix("http://").split(":")[0]
    assert [(c["name"], c["domain"], c["path"], c["httpOnly"], c["sameSite"])
            for c in cookies] == [("bees_app_session", host, "/", True, "Strict")]

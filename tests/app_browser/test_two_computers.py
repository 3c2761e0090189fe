"""Two computers (two ``BEES_HOME``), one Bees Cloud, in Chromium: the laptop's app says where
the desktop's item runs and offers no Approve; Maya relinquishes a report in the laptop's app
and continues it in the desktop's.

Run folders live in the declared folder ``shared``, linked on both computers to one
directory (as a synced Dropbox folder would be); both workspaces' agents wait at the same
gates.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, expect
from temporalio.testing import WorkflowEnvironment

from bees_cli.record.local import LocalRecord
from tests.app_browser.conftest import (
    PHONE,
    App,
    Machine,
    fits,
    open_page,
    save_screenshot,
    weekly_report,
)
from tests.e2e.conftest import Cloud
from tests.support.wait import until


@dataclass
class Pair:
    """Maya's laptop and desktop, each with ``bees run`` and ``bees app`` on its own copy of
    the gated example."""

    laptop: Machine
    desktop: Machine
    laptop_ws: Path
    desktop_ws: Path
    laptop_app: App
    desktop_app: App
    gates: Path
    shared: Path
    """The directory both computers link as the folder ``shared`` (the run folders)."""


@pytest_asyncio.fixture(scope="module")
async def pair(dev_env: WorkflowEnvironment, cloud: Cloud,
               tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Pair]:
    """Maya's two computers in a fresh team; their apps must stop with exit code 0."""
    root = tmp_path_factory.mktemp("pair")
    team = f"team-{secrets.token_hex(4)}"
    assert cloud.storage.add_team(team) is True
    maya = f"maya@{team}.example"
    token = cloud.storage.add_person(maya, team)
    shared = root / "Dropbox" / "bees-runs"
    shared.mkdir(parents=True)
    gates = root / "gates"
    gates.mkdir()
    address = dev_env.client.service_client.config.target_host
    machines: list[Machine] = []
    try:
        started: list[tuple[Machine, Path, App]] = []
        for name in ("maya-laptop", "maya-desktop"):
            workspace = weekly_report(root / f"{name}-ws", gates, shared=True)
            machine = Machine.make(root / name, name, maya, cloud_url=cloud.url, token=token,
                                   shared=shared)
            machines.append(machine)
            await machine.run(workspace, address)
            started.append((machine, workspace, machine.app(workspace)))
        (laptop, laptop_ws, laptop_app), (desktop, desktop_ws, desktop_app) = started
        yield Pair(laptop, desktop, laptop_ws, desktop_ws, laptop_app, desktop_app, gates,
                   shared)
    finally:
        for gate in gates.iterdir():
            gate.unlink()
        codes = [code for machine in machines for code in machine.stop().values()]
    assert codes == [0, 0]


def status(machine: Machine, item: str) -> str:
    """The item's status in ``machine``'s local record."""
    return str(LocalRecord(machine.computer.record_path).item(item).status)


async def test_the_laptop_says_where_the_desktops_item_runs_and_offers_no_approve(
        browser: Browser, pair: Pair) -> None:
    item = pair.desktop.create(pair.desktop_ws, "Week 50 report")
    await until(lambda: status(pair.desktop, item) == "waiting for approval",
                "the desktop's report never reached Send's approval")
    await pair.desktop.sync()
    await pair.laptop.sync()
    async with open_page(browser, pair.laptop_app.url) as page:
        row = page.locator(f'tr[data-item-id="{item}"]')
        await expect(row.locator('[data-field="where"]')).to_have_text("maya-desktop")
        await expect(row.locator('[data-field="stage"]')).to_have_text("Send")
        await row.locator(f'a[href="/items/{item}"]').first.click()
        await expect(page.locator('[data-testid="runs-elsewhere"]')).to_contain_text(
            "maya-desktop")
        await expect(page.locator('[data-testid="item-where"]')).to_have_text("maya-desktop")
        for verb in ("approve", "deny", "relinquish", "retry", "cancel"):
            await expect(page.locator(f'button[data-testid="{verb}"]')).to_have_count(0)
    # on the desktop, the same item offers Approve
    async with open_page(browser, pair.desktop_app.url) as page:
        await page.goto(f"{pair.desktop_app.base}/items/{item}")
        await expect(page.locator('button[data-testid="approve"]')).to_be_visible()
        await expect(page.locator('[data-testid="runs-elsewhere"]')).to_have_count(0)


async def test_relinquish_in_the_laptops_app_and_continue_in_the_desktops(
        browser: Browser, pair: Pair) -> None:
    (pair.gates / "Draft").touch()
    item = pair.laptop.create(pair.laptop_ws, "Week 51 report")
    async with open_page(browser, pair.laptop_app.url) as page:
        await page.goto(f"{pair.laptop_app.base}/items/{item}")
        state = page.locator('[data-testid="item-status"]')
        await expect(state).to_have_text("running")
        await expect(page.locator('button[data-testid="continue"]')).to_have_count(0)
        await page.locator('button[data-testid="relinquish"]').click()
        # relinquishing loses the stage's work in progress: it is confirmed first
        await expect(page).to_have_url(f"{pair.laptop_app.base}/items/{item}/relinquish")
        await expect(page.locator('[data-testid="confirm-words"]')).to_contain_text(
            "The work in progress is lost")
        await expect(state).to_have_count(0)
        await page.locator('button[data-testid="confirm"]').click()
        await expect(page).to_have_url(pair.laptop_app.item_page(item))
        await expect(state).to_have_text("free")
        await expect(page.locator('button[data-testid="relinquish"]')).to_have_count(0)
        await expect(page.locator('[data-testid="story"] li[data-event="relinquished"]')
                     ).to_have_count(1)
    await pair.laptop.sync()
    await pair.desktop.sync()

    # a file changed since the checkpoint: Continue is refused, file by file
    run_folder = pair.shared / item
    checkpoint = json.loads((run_folder / "checkpoint.json").read_text(encoding="utf-8"))
    changed = checkpoint["files"][0]["path"]
    kept = (run_folder / changed).read_bytes()
    (run_folder / changed).write_bytes(kept.upper())
    digests = hashlib.sha256(kept.upper()).hexdigest(), hashlib.sha256(kept).hexdigest()
    async with open_page(browser, pair.desktop_app.url) as page:
        await page.goto(f"{pair.desktop_app.base}/items/{item}")
        await page.locator('button[data-testid="continue"]').click()
        refusal = page.locator('[role="alert"][data-testid="refusal"]')
        await expect(refusal.locator('[data-testid="verification"] li')).to_have_text(
            [f"{changed}: content changed (sha256 {digests[0]} expected {digests[1]})"])
        (run_folder / changed).write_bytes(kept)

        await page.locator('button[data-testid="continue"]').click()
        await expect(page).to_have_url(pair.desktop_app.item_page(item))
        await expect(page.locator('[role="alert"]')).to_have_count(0)
        state = page.locator('[data-testid="item-status"]')
        await expect(state).to_have_text("running")
        await expect(page.locator('[data-testid="item-where"]')).to_have_text("maya-desktop")
        await expect(page.locator('[data-testid="item-stage"]')).to_have_text("Draft")
        (pair.gates / "Draft").unlink()
        await expect(page.locator('[data-testid="item-stage"]')).to_have_text("Send")
        await expect(state).to_have_text("waiting for approval")
        await expect(page.locator('button[data-testid="approve"]')).to_be_visible()
    assert status(pair.desktop, item) == "waiting for approval"


async def test_the_team_view_shows_each_computer_what_it_runs_and_when_it_was_heard_from(
        browser: Browser, pair: Pair) -> None:
    # issue 28, point 5: every computer of the team from the shared record
    item = pair.desktop.create(pair.desktop_ws, "Week 52 report")
    await until(lambda: status(pair.desktop, item) == "waiting for approval",
                "the desktop's report never reached Send's approval")
    await pair.desktop.sync()
    await pair.laptop.sync()
    async with open_page(browser, pair.laptop_app.url) as page:
        await page.locator('header a[href="/team"]').click()
        await expect(page).to_have_url(f"{pair.laptop_app.base}/team")
        team = page.locator('[data-testid="team"]')
        computers = team.locator("section[data-computer]")
        await expect(computers).to_have_count(2)
        assert [await c.get_attribute("data-computer") for c in await computers.all()] == [
            "maya-laptop", "maya-desktop"]
        laptop = team.locator('section[data-computer="maya-laptop"]')
        await expect(laptop.locator(".badge")).to_have_text("this computer")
        await expect(laptop.locator('[data-field="heard"]')).to_have_text(
            "bees run is running")
        desktop = team.locator('section[data-computer="maya-desktop"]')
        await expect(desktop.locator('[data-field="person"]')).to_have_text(
            pair.desktop.computer.person or "")
        await expect(desktop.locator('[data-field="heard"]')).to_contain_text(
            "last heard from ")
        await expect(desktop.locator('[data-field="heard"]')).to_contain_text("(just now)")
        run = desktop.locator(f'li[data-item-id="{item}"]')
        await expect(run.locator("a")).to_have_text("Week 52 report")
        await expect(run.locator(".pill")).to_have_text("Send · waiting for approval")
        await expect(page.locator('[data-testid="team-alone"]')).to_have_count(0)
        await save_screenshot(page, "app-team.png")
        await page.set_viewport_size(PHONE)
        await expect(run).to_be_visible()
        assert await fits(page) == [PHONE["width"], PHONE["width"]]
        await save_screenshot(page, "app-phone-team.png")

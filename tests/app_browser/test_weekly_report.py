"""One computer, in Chromium: the weekly report (command agents, no model) moves Draft ->
Review -> Send on the list without a reload; the Send approval shows the mail; the keyboard
alone approves it and the item finishes; Deny's reason shows in the story (with JavaScript
off too); the list fits a phone's width. The run writes the docs' screenshots when told
(``BEES_WRITE_SCREENSHOTS=1``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Locator, Page, expect
from temporalio.testing import WorkflowEnvironment

from tests.app_browser.conftest import (
    SCREENSHOTS,
    WIDE,
    App,
    Machine,
    open_page,
    weekly_report,
    write_screenshots,
)

MAYA = "maya@example.com"


@dataclass
class Laptop:
    """Maya's laptop: ``bees run`` and ``bees app`` on a gated copy of the example."""

    machine: Machine
    workspace: Path
    gates: Path
    app: App


@pytest_asyncio.fixture(scope="module")
async def laptop(dev_env: WorkflowEnvironment,
                 tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Laptop]:
    """Maya's laptop for this module; its app must stop with exit code 0."""
    root = tmp_path_factory.mktemp("laptop")
    gates = root / "gates"
    gates.mkdir()
    workspace = weekly_report(root / "ws", gates)
    machine = Machine.make(root / "home", "maya-laptop", MAYA)
    try:
        await machine.run(workspace, dev_env.client.service_client.config.target_host)
        yield Laptop(machine, workspace, gates, machine.app(workspace))
    finally:
        codes = machine.stop()
    assert set(codes.values()) == {0}, codes


async def screenshot(page: Page, name: str, down_to: Locator) -> None:
    """Take a screenshot of the page down to the bottom of ``down_to``; into
    docs/screenshots/NAME when this run writes them."""
    box = await down_to.bounding_box()
    assert box is not None, f"{down_to} is not shown"
    clip = {"x": 0, "y": 0, "width": WIDE["width"], "height": box["y"] + box["height"] + 16}
    shot = await page.screenshot(full_page=True, clip=clip)  # type: ignore[arg-type]
    assert shot.startswith(b"\x89PNG")
    if write_screenshots():
        SCREENSHOTS.mkdir(exist_ok=True)
        (SCREENSHOTS / name).write_bytes(shot)


async def tab_to(page: Page, testid: str, most: int = 50) -> int:
    """Press Tab until the focused element is ``[data-testid=testid]``; return the presses."""
    for presses in range(1, most + 1):
        await page.keyboard.press("Tab")
        if await page.evaluate("document.activeElement?.dataset?.testid") == testid:
            return presses
    raise AssertionError(f"{most} presses of Tab never reached [data-testid={testid}]")


async def test_the_report_moves_to_send_on_screen_and_the_keyboard_approves_the_mail(
        browser: Browser, laptop: Laptop) -> None:
    for stage in ("Draft", "Review"):
        (laptop.gates / stage).touch()
    async with open_page(browser, laptop.app.url) as page:
        assert page.url == f"{laptop.app.base}/items"
        await page.evaluate("window.notReloaded = true")
        item = laptop.machine.create(laptop.workspace, "Week 48 report")
        row = page.locator(f'tr[data-item-id="{item}"]')
        stage, status = row.locator('[data-field="stage"]'), row.locator('[data-field="status"]')
        await expect(row.locator('[data-field="process"]')).to_have_text("weekly-report")
        await expect(stage).to_have_text("Draft")
        await expect(status).to_have_text("running")
        await expect(row.locator('[data-field="agent"]')).to_have_text("writer")
        await expect(row.locator('[data-field="where"]')).to_have_text("maya-laptop")
        (laptop.gates / "Draft").unlink()
        await expect(stage).to_have_text("Review")
        await expect(row.locator('[data-field="agent"]')).to_have_text("reviewer")
        (laptop.gates / "Review").unlink()
        await expect(stage).to_have_text("Send")
        await expect(status).to_have_text("waiting for approval")
        assert await page.evaluate("window.notReloaded") is True

        # a phone's width: the list scrolls down, never sideways
        await page.set_viewport_size({"width": 375, "height": 740})
        await expect(row).to_be_visible()
        assert await page.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        ) == [375, 375]
        await page.set_viewport_size(WIDE)

        await row.locator(f'a[href="/items/{item}"]').first.click()
        await expect(page).to_have_url(laptop.app.item_page(item))
        approval = page.locator('[data-testid="approval"]')
        await expect(approval.locator('[data-field="to"]')).to_have_text("team@example.com")
        await expect(approval.locator('[data-field="subject"]')).to_have_text("Week 48 report")
        body = await approval.locator('[data-field="body"]').inner_text()
        assert body.startswith("# Week 48 report\n\n## Summary\n\n2 people sent notes this week.")
        await expect(page.locator('[data-testid="item-status"]')).to_have_text(
            "waiting for approval")
        await expect(page.locator('[data-testid="item-where"]')).to_have_text("maya-laptop")
        await screenshot(page, "app-approval.png", page.locator('[data-testid="actions"]'))

        # the keyboard alone: Tab reaches Approve (focus visible), Enter presses it
        await page.locator("body").focus()
        await tab_to(page, "approve")
        assert await page.evaluate("document.activeElement.matches(':focus-visible')") is True
        await page.keyboard.press("Enter")
        await expect(page).to_have_url(laptop.app.item_page(item))
        await expect(page.locator('[data-testid="item-status"]')).to_have_text("done")
        await expect(page.locator('[data-testid="item-stage"]')).to_have_text("Done")
        await expect(page.locator('button[data-testid="approve"]')).to_have_count(0)
        story = page.locator('[data-testid="story"]')
        await expect(story.locator('li[data-event="approved"]')).to_contain_text(
            f"approved by {MAYA}")

    sent = sorted((laptop.workspace / "outbox").glob(f"{item}-*.eml"))
    assert len(sent) == 1
    assert sent[0].read_text(encoding="utf-8").rstrip("\n") == (
        f"To: team@example.com\nSubject: Week 48 report\n\n{body}".rstrip("\n"))


async def test_deny_with_a_reason_shows_the_reason_in_the_story(
        browser: Browser, laptop: Laptop) -> None:
    item = laptop.machine.create(laptop.workspace, "Week 49 report")
    reason = "Wait for Sam's numbers before mailing the team"
    async with open_page(browser, laptop.app.url) as page:
        row = page.locator(f'tr[data-item-id="{item}"]')
        await expect(row.locator('[data-field="status"]')).to_have_text(
            "waiting for approval")
        await screenshot(page, "app-items.png", page.locator('table[data-testid="items"]'))
        await row.locator(f'a[href="/items/{item}"]').first.click()
        await page.locator('textarea[name="reason"]').fill(reason)
        await page.locator('button[data-testid="deny"]').click()
        await expect(page).to_have_url(laptop.app.item_page(item))
        story = page.locator('[data-testid="story"]')
        denied = story.locator('li[data-event="denied"]')
        await expect(denied).to_contain_text(f"denied by {MAYA}")
        await expect(denied).to_contain_text(reason)
        await expect(page.locator('button[data-testid="approve"]')).to_have_count(0)
        assert sorted((laptop.workspace / "outbox").glob(f"{item}-*.eml")) == []

    # without JavaScript the pages still read: the list, and the story with the reason
    async with open_page(browser, laptop.app.url, script=False) as page:
        await expect(page.locator(f'tr[data-item-id="{item}"] [data-field="stage"]')
                     ).to_have_text("Send")
        await page.goto(f"{laptop.app.base}/items/{item}")
        await expect(page.locator('[data-testid="story"] li[data-event="denied"]')
                     ).to_contain_text(reason)

"""One computer, in Chromium: the item page draws the process's stages as a progress line
(the current one marked, the review's send-back shown) and the story as a timeline; every
page fits a phone's 390 px without scrolling sideways (issue 28, point 5). The run writes
the docs' screenshots when told (``BEES_WRITE_SCREENSHOTS=1``).

The writer's first draft misses its title and summary (the flag file ``sloppy``), so the
real reviewer sends it back once before the report reaches Send.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from playwright.async_api import Browser, expect
from temporalio.testing import WorkflowEnvironment

from bees_cli.record.local import LocalRecord
from tests.app_browser.conftest import (
    PHONE,
    WIDE,
    Machine,
    fits,
    open_page,
    save_screenshot,
    weekly_report,
)
from tests.support.wait import until

SLOPPY = '''import os as _os, pathlib as _pathlib, sys as _sys
_flag = _pathlib.Path(_os.environ["BEES_GATE"]) / "sloppy"
if _flag.exists():  # the test's first draft: no title, no summary
    _flag.unlink()
    _pathlib.Path("report.md").write_text("notes, more or less\\n", encoding="utf-8")
    _sys.exit(0)
'''


async def test_the_progress_line_shows_the_send_back_and_pages_fit_a_phone(
        tmp_path: Path, machines: Callable[..., Machine], browser: Browser,
        dev_env: WorkflowEnvironment) -> None:
    gates = tmp_path / "gates"
    gates.mkdir()
    workspace = weekly_report(tmp_path / "ws", gates)
    writer = workspace / "scripts" / "write_report.py"
    writer.write_text(SLOPPY + writer.read_text(encoding="utf-8"), encoding="utf-8")
    laptop = machines(tmp_path / "laptop", "maya-laptop", "maya@example.com")
    await laptop.run(workspace, dev_env.client.service_client.config.target_host)
    app = laptop.app(workspace)
    (gates / "sloppy").touch()
    item = laptop.create(workspace, "Week 48 report")
    record = LocalRecord(laptop.computer.record_path)
    await until(lambda: record.item(item).status == "waiting for approval",
                "the report never reached Send's approval")

    async with open_page(browser, app.url) as page:
        await page.goto(f"{app.base}/items/{item}")
        line = page.locator('[data-testid="progress"]')
        steps = line.locator("li")
        await expect(steps).to_have_count(4)
        assert [await s.get_attribute("data-stage") for s in await steps.all()] == [
            "Draft", "Review", "Send", "Done"]
        assert [await s.get_attribute("data-state") for s in await steps.all()] == [
            "done", "done", "waiting", "todo"]
        current = line.locator('li[aria-current="step"]')
        await expect(current).to_have_attribute("data-stage", "Send")
        await expect(current.locator(".state")).to_have_text("waits for you")
        await expect(line.locator('li[data-stage="Review"] [data-testid="sent-back"]')
                     ).to_have_text("↩ sent back to Draft 1×")
        # drawn as a line: the four steps side by side on a desktop
        tops = {round((await s.bounding_box() or {"y": -1})["y"]) for s in await steps.all()}
        assert len(tops) == 1, tops
        # the story is a timeline: the review that sent the draft back is marked as such
        story = page.locator('[data-testid="story"]')
        await expect(story.locator('li[data-event="stage_finished"].tone-bad')).to_have_count(1)
        await expect(story.locator('li[data-event="stage_finished"].tone-bad')).to_contain_text(
            "verdict changes_requested")
        # the held action's card: the recipient first
        card = page.locator('[data-testid="approval"]')
        fields = card.locator("dl.fields dt")
        await expect(fields.first).to_have_text("To")
        await expect(card.locator('[data-field="to"]')).to_have_text("team@example.com")
        await save_screenshot(page, "app-item.png")

        # a phone's width: list, item, team and doctor scroll down, never sideways
        await page.set_viewport_size(PHONE)
        for path in ("/items", f"/items/{item}", "/team", "/schedules", "/doctor"):
            await page.goto(f"{app.base}{path}")
            await expect(page.locator("h1")).to_be_visible()
            assert await fits(page) == [PHONE["width"], PHONE["width"]], path
            if path == f"/items/{item}":
                await expect(line).to_be_visible()
                box = await line.bounding_box()
                assert box is not None and box["x"] + box["width"] <= PHONE["width"]
                await expect(page.locator('button[data-testid="approve"]')).to_be_visible()
                await save_screenshot(page, "app-phone-item.png")
            if path == "/items":
                await expect(page.locator(f'tr[data-item-id="{item}"]')).to_be_visible()
                await save_screenshot(page, "app-phone-items.png")
        await page.set_viewport_size(WIDE)

"""One computer, in Chromium: the list's "bees run is not running" note comes and goes with
``bees run`` without a reload; Cancel asks first, with JavaScript off, and "No" keeps the
item running."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from playwright.async_api import Browser, expect
from temporalio.testing import WorkflowEnvironment

from bees_cli.app.views import BEES_RUN_DOWN
from bees_cli.record.local import LocalRecord
from tests.app_browser.conftest import Machine, open_page, weekly_report
from tests.support.wait import until


async def test_the_bees_run_note_is_live_and_cancel_asks_first(
        tmp_path: Path, machines: Callable[..., Machine], browser: Browser,
        dev_env: WorkflowEnvironment) -> None:
    gates = tmp_path / "gates"
    gates.mkdir()
    workspace = weekly_report(tmp_path / "ws", gates)
    laptop = machines(tmp_path / "laptop", "maya-laptop", "maya@example.com")
    app = laptop.app(workspace)
    async with open_page(browser, app.url) as listing:
        note = listing.locator("#notes p.warning", has_text=BEES_RUN_DOWN)
        await expect(note).to_have_count(1)
        await listing.evaluate("window.notReloaded = true")
        await laptop.run(workspace, dev_env.client.service_client.config.target_host)
        await expect(note).to_have_count(0)

        (gates / "Draft").touch()  # Draft holds: the item stays running
        item = laptop.create(workspace, "Week 50 report")
        status = listing.locator(f'tr[data-item-id="{item}"] [data-field="status"]')
        await expect(status).to_have_text("running")
        async with open_page(browser, app.url, script=False) as page:
            await page.goto(f"{app.base}/items/{item}")
            await page.locator('button[data-testid="cancel"]').click()
            await expect(page).to_have_url(f"{app.base}/items/{item}/cancel")
            await expect(page.locator('[data-testid="confirm-words"]')).to_contain_text(
                "It cannot be undone")
            await page.locator('a[data-testid="keep"]').click()
            await expect(page).to_have_url(app.item_page(item))
            await expect(page.locator('[data-testid="item-status"]')).to_have_text("running")
            await page.locator('button[data-testid="cancel"]').click()
            await page.locator('button[data-testid="confirm"]').click()
            await expect(page).to_have_url(app.item_page(item))
            await expect(page.locator('[data-testid="done"]')).to_contain_text(
                "cancel: cancel requested")
        record = LocalRecord(laptop.computer.record_path)
        await until(lambda: record.item(item).status == "cancelled",
                    f"{item} was not cancelled")
        await expect(status).to_have_text("cancelled")

        assert laptop.worker is not None
        laptop.worker.terminate()  # bees run stops: the note comes back, no reload
        assert laptop.worker.wait(30) == 0
        await expect(note).to_have_count(1)
        assert await listing.evaluate("window.notReloaded") is True

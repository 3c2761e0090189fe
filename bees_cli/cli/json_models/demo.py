"""``bees demo --json``: where the demo left its item."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bees_cli.cli.json_models.base import Out, Part


class DemoDecisionOut(Part):
    """One decision the demo delivered (oldest first)."""

    decision: Literal["approved", "denied"]
    action: str | None = Field(description="The held add-on action (ADDON.ACTION); null: a "
                               "stage's finish.")
    reason: str | None = Field(description="A denial's reason (the agent was told); null for "
                               "an approval.")


class DemoOut(Out):
    """``bees demo``: the item it made and where it ended, its workspace and the files it made."""

    item_id: str
    outcome: Literal["done", "quit", "stopped", "failed", "waiting for a person", "cancelled"] = (
        Field(description="done; quit: the person chose to decide later (the item waits for "
              "approval); stopped: Ctrl-C stopped the run (the item waits for the next bees "
              "run); else where the item stopped."))
    status: str = Field(description="The item's status then, as bees status --json gives it.")
    stage: str
    workspace: str = Field(description="The workspace the demo made (a copy of the example).")
    run_folder: str
    results: list[str] = Field(description="The files the item made: each mail in the "
                               "workspace's outbox, then the report (Draft/report.md).")
    model_url: str = Field(description="The base URL of the model the agents used.")
    model_embedded: bool = Field(description="True: the embedded model, served for the demo "
                                 "and stopped at its end.")
    decisions: list[DemoDecisionOut]

"""bees run says a model call that failed in one readable line: the stage, the item, the
error's first line, the try and what comes next."""

from __future__ import annotations

from bees_cli.engine.model_shown import retry_line
from bees_cli.errors import ModelUnavailable
from bees_cli.record.views import ModelRetry


def test_a_failed_model_call_is_said_with_its_stage_try_and_next_try() -> None:
    error = ModelUnavailable("cannot reach http://127.0.0.1:11434/v1/chat/completions: "
                             "ConnectError\nmore")
    wait = ModelRetry(why="unavailable", server="127.0.0.1:11434", try_number=5, tries=5,
                      until="2026-12-02T06:50:12Z", error=str(error))
    assert retry_line("Draft", "01M8TR0G", None, error, attempt=4, wait=wait) == (
        "Draft of 01M8TR0G: cannot reach http://127.0.0.1:11434/v1/chat/completions: "
        "ConnectError (try 4 of 5); trying again at 2026-12-02T06:50:12Z")
    assert retry_line("Draft", "01M8TR0G", "notes", error, attempt=5, wait=None) == (
        "Draft of 01M8TR0G (piece notes): cannot reach "
        "http://127.0.0.1:11434/v1/chat/completions: ConnectError (try 5); no try left")

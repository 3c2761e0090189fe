"""How a runner is said (``bees runners``, ``bees status``; issue 27, point 4): its pool,
what it runs, and when Bees Cloud last heard it, counted on the clock given
(``runner-2: pool build, runs nothing, silent for 12 min``).

No event loop and no wire models here: ``bees status`` reads the list its last sync kept
(``sync_meta`` ``runners``, the JSON of ``RunnerList``) on its quick path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from bees_cli.rules import runner_silent
from bees_cli.utc import parse_utc


def span(seconds: float) -> str:
    """Return ``seconds`` as a short span: ``40 s``, ``12 min``, ``3 h``, ``2 d``."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min"
    if whole < 86400:
        return f"{whole // 3600} h"
    return f"{whole // 86400} d"


def heard_words(heard: datetime | None, retired: datetime | None, now: datetime) -> str:
    """Return ``heard 5 s ago``, ``silent for 12 min``, ``never heard`` or ``retired``."""
    if retired is not None:
        return f"retired {span((now - retired).total_seconds())} ago"
    if heard is None:
        return "never heard"
    ago = span((now - heard).total_seconds())
    return f"silent for {ago}" if runner_silent(heard, now) else f"heard {ago} ago"


def runner_line(name: str, pool: str, *, heard: datetime | None, retired: datetime | None,
                running: Sequence[str], now: datetime) -> str:
    """Return one runner in words: ``runner-2: pool build, runs 01JH3QX5Z8, silent for
    12 min`` (``runs nothing`` when it holds no item)."""
    runs = ", ".join(running) if running else "nothing"
    return f"{name}: pool {pool}, runs {runs}, {heard_words(heard, retired, now)}"


def line_of(view: Mapping[str, Any], now: datetime) -> str:
    """Return :func:`runner_line` of one runner as JSON (``RunnerView``'s fields)."""
    def when(key: str) -> datetime | None:
        value = view.get(key)
        return None if value is None else parse_utc(value)

    return runner_line(view["name"], view["pool"], heard=when("heard_at"),
                       retired=when("retired_at"), running=view.get("running") or [], now=now)


def kept_runner_lines(record_path: Path) -> list[str]:
    """Return the team's runners as the last sync here heard them, one line each, counted
    on Bees Cloud's clock at that sync (at most one sync, 15 s, old; none: no cloud, no
    runners, or not synced yet)."""
    from bees_cli.record.shared import SharedRecord

    text = SharedRecord(record_path).meta("runners")
    if not text:
        return []
    kept = json.loads(text)
    now = parse_utc(kept["server_time"])
    return [line_of(view, now) for view in kept.get("runners", [])]

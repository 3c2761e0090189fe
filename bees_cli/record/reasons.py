"""Reasons as history facts store them: the reader of stored sentences, and pick tiers.

History facts (:mod:`bees_cli.record.events`) were stored with their reasons as sentences
(``"folder notes: not linked on this computer (bees link notes PATH)"``). ``--json`` gives
the machine value instead (issue 15, point 2: no display strings inside data): a
:class:`Reason` with its ``code`` and the values that word it (folder, path, agent,
counts…). Since issue 24 every new fact stores its reason as that object (the typed
writers dump it), so readers use the code; :meth:`Reason.words` gives the sentence for
people, the same words the old writers stored.

:func:`read_reason` and :func:`read_reasons` (the regular expressions below) are the reader
of old rows, written before issue 24 with sentences, and read a stored object as it is. The
model itself lives in :mod:`bees_cli.why` (re-exported here), low enough that the reason's
producers (the agent runner, the model loop, a denied finish, a busy agent's slot,
eligibility) hand it over as a :class:`Reason`; the engine reads a sentence only from an
output a history written before that carries (``StageOutput.reason`` or
``PieceOutput.reason`` without its ``why``). A sentence this Bees cannot read is the code
``other`` with its ``text`` kept whole.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator

from bees_cli.agents.selection import PICK_WORDS, pick_tier
from bees_cli.rules import REVIEW_LIMIT_WORDS
from bees_cli.why import (
    SKIP_WORDS,
    AddonMissing,
    Reason,
    ReasonCode,
    Skip,
    SkippedAgent,
    SkipWhy,
    read_skipped,
)

__all__ = ["SKIP_WORDS", "AddonMissing", "EventTier", "Reason", "ReasonCode", "ReasonField",
           "Skip", "SkipWhy", "SkippedAgent", "read_reason", "read_reasons", "read_skipped",
           "read_tier", "tier_words"]

_PATTERNS = [
    (re.compile(r"folder (\S+): not linked on this computer \(bees link \1 PATH\)", re.S),
     "folder_not_linked", ("folder",)),
    (re.compile(r"folder (\S+): linked to (.+), which is not an existing directory", re.S),
     "folder_link_not_dir", ("folder", "path")),
    (re.compile(r"folder (\S+): default path (.+): environment variable (\w+) is not set",
                re.S), "folder_env_unset", ("folder", "path", "env")),
    (re.compile(r"folder (\S+): default path (.+) is not an existing directory", re.S),
     "folder_default_not_dir", ("folder", "path")),
    (re.compile(re.escape(REVIEW_LIMIT_WORDS).replace(re.escape("{stage}"), r"(\S+)")
                .replace(re.escape("{count}"), r"(\d+)"), re.S), "review_limit",
     ("stage", "count")),
    (re.compile(r"(\S+) was not run: the item was (cancelled|relinquished)", re.S),
     "action_not_run", ("action", "status")),
    (re.compile(r"finish denied by (\S+): (.*)", re.S), "finish_denied", ("who", "said")),
    (re.compile(r"(\S+) was denied by (\S+): (.*)", re.S), "action_denied",
     ("action", "who", "said")),
    (re.compile(r"agent (\S+): (.*)", re.S), "agent_failed", ("agent", "said")),
    (re.compile(r"exit (-?\d+): (.*)", re.S), "agent_exit", ("exit_code", "said")),
]
_BUSY = re.compile(r"waiting for agent (\S+): (\d+) of (\d+) busy \(items ([^)]*)\)"
                   r"(?:; place (\d+) in its queue)?(?: for (\d+) minutes)?", re.S)
_NO_AGENT = re.compile(r"no enabled agent for (a piece of )?(.+?): (.*)", re.S)


def _no_agent(match: re.Match[str]) -> Reason:
    piece, stage, detail = match.groups()
    skipped = [] if detail == "the workspace declares no agents" else [
        read_skipped(*part.split(" ", 1)) for part in detail.split("; ") if " " in part]
    return Reason(code="no_agent_for_piece" if piece else "no_agent", stage=stage,
                  skipped=skipped)


def read_reason(value: Any) -> Reason:
    """Read a stored reason: a sentence (a row written before issue 24) as its code and
    values, an object (what new facts store, and ``--json``'s shape) as it is.

    Args:
        value: the stored reason: text, or a dict with ``code``.

    Returns:
        The :class:`Reason`; ``other`` with the text kept when no code fits, or when the
        code's words would not give the stored text back. Never raises for a string.
    """
    if isinstance(value, Reason):
        return value
    if isinstance(value, dict):
        return Reason.model_validate(value)
    text = str(value)
    reason = _coded(text)
    return reason if reason is not None and reason.words() == text else Reason(
        code="other", text=text)


def _coded(text: str) -> Reason | None:
    fixed = {Reason(code=c).words(): c for c in (  # type: ignore[arg-type]
        "run_stopped", "worker_stopped", "piece_stopped", "engine_replaced")}
    if text in fixed:
        return Reason(code=fixed[text])  # type: ignore[arg-type]
    if (busy := _BUSY.fullmatch(text)) is not None:
        agent, taken, cap, items, position, minutes = busy.groups()
        return Reason(code="busy_too_long" if minutes else "agent_busy", agent=agent,
                      busy=int(taken), cap=int(cap), items=items.split(", ") if items else [],
                      position=int(position) if position else None,
                      minutes=int(minutes) if minutes else None)
    if (none := _NO_AGENT.fullmatch(text)) is not None:
        return _no_agent(none)
    for pattern, code, names in _PATTERNS:
        if (match := pattern.fullmatch(text)) is not None:
            return Reason.model_validate({"code": code, **dict(zip(names, match.groups(),
                                                                   strict=True))})
    return None


_NEXT = re.compile(r"; (?=folder \S+: |no enabled agent for |waiting for agent )")


def read_reasons(value: Any) -> list[Reason]:
    """Read reasons stored as one sentence joined with ``"; "`` (a piece's wait), or as a
    list, each as :func:`read_reason` does."""
    if isinstance(value, list):
        return [read_reason(v) for v in value]
    return [read_reason(part) for part in _NEXT.split(str(value))]


def _reason(value: Any) -> Any:
    return value if value is None or isinstance(value, Reason) else read_reason(value)


ReasonField = Annotated[Reason, BeforeValidator(_reason)]
"""A fact's reason as stored (a sentence) or as ``--json`` gives it (a :class:`Reason`)."""


EventTier = Literal["item", "stage", "default", "by_name", "caller", "none", "other"]
"""A history fact's pick tier: :data:`~bees_cli.agents.selection.PickTier`, or ``other``
(stored words this Bees cannot read as a tier, kept in ``text``)."""


def read_tier(data: Any) -> Any:
    """Read a stored pick's ``reason`` words as its tier (:data:`EventTier`), with the
    ``process`` and ``of_stage`` of ``stage agents of PROCESS.STAGE`` and the ``text`` of
    words no tier fits; a tier, or anything not a dict, as it is. For a model's
    ``mode="before"`` validator."""
    if isinstance(data, dict) and isinstance(data.get("reason"), str) and \
            data["reason"] not in EventTier.__args__:  # type: ignore[attr-defined]
        words = data["reason"]
        if words.startswith("stage agents of ") and "." in words:
            process, _, stage = words.removeprefix("stage agents of ").partition(".")
            return {**data, "reason": "stage", "process": process, "of_stage": stage}
        tier = pick_tier(words)
        if tier == "none" and not words.startswith("no enabled agent"):
            return {**data, "reason": "other", "text": words}
        return {**data, "reason": tier}
    return data


def tier_words(tier: str | None, process: str | None, of_stage: str | None,
               text: str | None = None) -> str:
    """Return a pick's tier as people read it (``stage agents of weekly-report.Draft``)."""
    if tier == "stage" and process and of_stage:
        return f"stage agents of {process}.{of_stage}"
    if tier == "other":
        return text or "?"
    return PICK_WORDS.get(tier or "none", str(tier))

"""Why a stage waited, failed or stopped: a closed code and the values that word it.

The model of a reason (:class:`Reason`), low enough that its producers hand it over as
they fail (issue 24, point 3): the agent runner (``agents/``), the model loop, a denied
finish, a busy agent's slot (``engine/``). :mod:`bees_cli.record.reasons` re-exports it and
keeps the reader of reasons stored as sentences (rows written before issue 24). Its words
(:meth:`Reason.words`) are the sentences people read, worded here only.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from bees_cli.rules import BUSY_LIMIT, review_limit_reason

ReasonCode = Literal[
    "folder_not_linked", "folder_link_not_dir", "folder_default_not_dir", "folder_env_unset",
    "no_agent", "no_agent_for_piece", "agent_busy", "busy_too_long", "review_limit",
    "action_not_run", "action_denied", "finish_denied", "agent_failed", "agent_exit",
    "run_stopped", "worker_stopped", "piece_stopped", "engine_replaced", "other"]
"""Every reason a history fact gives (``other``: a sentence this Bees cannot read)."""

SkipWhy = Literal["not_declared", "disabled", "under_review", "in_chain",
                  "addons_not_connected", "other"]
"""Why agent choice did not use an agent (``in_chain``: a piece's caller; ``other``: words
this Bees cannot read, kept in ``text``)."""

SKIP_WORDS: dict[str, str] = {
    "not_declared": "not declared in the workspace", "disabled": "disabled",
    "under_review": "did the work under review", "in_chain": "already in the chain of callers"}
"""How people read each :data:`SkipWhy` (its add-ons apart)."""

def _opt(description: str) -> Any:
    """A value of some codes only: left out of the document when None."""
    return Field(default=None, exclude_if=lambda v: v is None, description=description)


class AddonMissing(BaseModel):
    """An add-on of an agent's tools not connected here, and what it misses (``env
    GMAIL_TOKEN``, ``not connected here``…)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    addon: str
    missing: list[str] = Field(default_factory=list)


class SkippedAgent(BaseModel):
    """An agent agent choice looked at and did not use: ``why`` as a code, and for
    ``addons_not_connected`` each add-on with what it misses."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    agent: str
    why: SkipWhy
    addons: list[AddonMissing] = Field(default_factory=list)
    text: str | None = _opt("The stored words of ``other``.")

    def why_words(self) -> str:
        """``add-on mail not connected (env GMAIL_TOKEN)``, ``disabled``."""
        if self.why == "other":
            return self.text or ""
        if self.why != "addons_not_connected":
            return SKIP_WORDS[self.why]
        return ", ".join(
            f"add-on {a.addon} not connected ({', '.join(a.missing) or 'not connected here'})"
            for a in self.addons)

    def words(self) -> str:
        """``mailer add-on mail not connected (env GMAIL_TOKEN)``, ``writer disabled``."""
        return f"{self.agent} {self.why_words()}"


def read_skipped(agent: str, why: str) -> SkippedAgent:
    """Read a stored skip (``{"agent", "why"}`` with ``why`` a phrase) as its code."""
    codes = {words: code for code, words in SKIP_WORDS.items()}
    if why in codes:
        return SkippedAgent(agent=agent, why=codes[why])  # type: ignore[arg-type]
    addons = [AddonMissing(addon=m[1], missing=m[2].split(", "))
              for m in re.finditer(r"add-on (\S+) not connected \(([^)]*)\)", why)]
    skipped = SkippedAgent(agent=agent, why="addons_not_connected", addons=addons)
    return skipped if addons and skipped.why_words() == why else SkippedAgent(
        agent=agent, why="other", text=why)


def _skipped(value: Any) -> Any:
    """A stored ``{"agent", "why": PHRASE}`` read as its code; a coded one as it is."""
    if isinstance(value, dict) and isinstance(value.get("why"), str) and \
            value["why"] not in SkipWhy.__args__:  # type: ignore[attr-defined]
        return read_skipped(str(value.get("agent")), value["why"])
    return value


Skip = Annotated[SkippedAgent, BeforeValidator(_skipped)]
"""A skipped agent as stored (a phrase) or as ``--json`` gives it (a code)."""


class Reason(BaseModel):
    """One reason as machine values: ``code`` and the values its words need.

    ``folder_*``: ``folder``, ``path``, ``env`` (``folder_env_unset``); ``no_agent`` and
    ``no_agent_for_piece``: ``stage``, ``skipped``; ``agent_busy`` and ``busy_too_long``:
    ``agent``, ``busy``, ``cap``, ``items``, ``position`` (its place in the queue when
    over 1), ``minutes``; ``review_limit``: ``stage``, ``count``; ``action_not_run``:
    ``action``, ``status`` (``cancelled``, ``relinquished``); ``action_denied``:
    ``action``, ``who``, ``said`` (the person's reason); ``finish_denied``: ``who``,
    ``said``; ``agent_failed``: ``agent``, ``said`` (what the agent's run said);
    ``agent_exit``: ``exit_code``, ``said`` (its last stderr lines); ``other``: ``text``.
    ``run_stopped``, ``worker_stopped``, ``piece_stopped``, ``engine_replaced``: none.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)
    code: ReasonCode
    folder: str | None = _opt("The folder.")
    path: str | None = _opt("The folder's path here (linked, or its default path).")
    env: str | None = _opt("The environment variable that is not set.")
    stage: str | None = _opt("The stage.")
    skipped: list[Skip] | None = _opt("Each agent looked at, and why it was not used.")
    agent: str | None = _opt("The agent.")
    busy: int | None = _opt("How many of the agent's slots are taken.")
    cap: int | None = _opt("The agent's max_concurrent_runs.")
    items: list[str] | None = _opt("The items holding the agent's slots.")
    position: int | None = _opt("The place in the agent's queue (over 1).")
    minutes: int | None = _opt("How long the stage waited, minutes.")
    count: int | None = _opt("How many requests for changes.")
    action: str | None = _opt("The add-on action (ADDON.ACTION).")
    status: str | None = _opt("What became of the item (cancelled, relinquished).")
    who: str | None = _opt("The person who decided.")
    said: str | None = _opt("Their own words: a person's reason, an agent's message.")
    exit_code: int | None = _opt("The agent's exit code.")
    text: str | None = _opt("The stored sentence this Bees cannot read as a code.")

    def words(self) -> str:
        """Return the reason as people read it (the words its writer stored)."""
        c = self.code
        if c == "folder_not_linked":
            return f"folder {self.folder}: not linked on this computer (bees link " \
                   f"{self.folder} PATH)"
        if c == "folder_link_not_dir":
            return f"folder {self.folder}: linked to {self.path}, which is not an existing " \
                   "directory"
        if c == "folder_default_not_dir":
            return f"folder {self.folder}: default path {self.path} is not an existing directory"
        if c == "folder_env_unset":
            return f"folder {self.folder}: default path {self.path}: environment variable " \
                   f"{self.env} is not set"
        if c in ("no_agent", "no_agent_for_piece"):
            which = self.stage if c == "no_agent" else f"a piece of {self.stage}"
            return f"no enabled agent for {which}: " + (
                "; ".join(s.words() for s in self.skipped or [])
                or "the workspace declares no agents")
        if c in ("agent_busy", "busy_too_long"):
            text = (f"waiting for agent {self.agent}: {self.busy} of {self.cap} busy "
                    f"(items {', '.join(self.items or [])})")
            if self.position is not None and self.position > 1:
                text += f"; place {self.position} in its queue"
            return text + (f" for {self.minutes} minutes" if c == "busy_too_long" else "")
        return self._more_words()

    def _more_words(self) -> str:
        fixed = {"run_stopped": "bees run stopped",
                 "worker_stopped": "its worker stopped (bees run ended or was killed)",
                 "piece_stopped": "stopped with its run",
                 "engine_replaced": "the engine's database was replaced"}
        c = self.code
        if c in fixed:
            return fixed[c]
        if c == "review_limit":
            return review_limit_reason(str(self.stage), self.count or 0)
        if c == "action_not_run":
            return f"{self.action} was not run: the item was {self.status}"
        if c == "action_denied":
            return f"{self.action} was denied by {self.who}: {self.said}"
        if c == "finish_denied":
            return f"finish denied by {self.who}: {self.said}"
        if c == "agent_failed":
            return f"agent {self.agent}: {self.said}"
        if c == "agent_exit":
            return f"exit {self.exit_code}: {self.said}"
        return self.text or ""


def busy_too_long(busy: Reason) -> Reason:
    """Return the reason a stage or piece fails with after waiting
    :data:`~bees_cli.rules.BUSY_LIMIT` for a busy agent (Rules: busy agent): the slot's last
    ``agent_busy`` reason as ``busy_too_long`` with the ``minutes`` waited (10), worded as
    :func:`~bees_cli.rules.busy_reason` words it."""
    return busy.model_copy(update={"code": "busy_too_long",
                                   "minutes": BUSY_LIMIT // timedelta(minutes=1)})

"""One add-on action call of an agent, typed: who calls, in which stage, what, with which input.

Both kinds of agent reach the approval gate (:mod:`bees_cli.gate`) with an
:class:`ActionCallInput`. A model agent's tool call builds it directly from its turn (the
engine's tool-call activity); a command agent's program runs ``bees action ADDON.ACTION`` in
its stage, whose environment (``BEES_ITEM_ID``, ``BEES_STAGE``, ``BEES_AGENT``,
``BEES_ROUND``, ``BEES_ATTEMPT``, ``BEES_PIECE``, ``BEES_WORKSPACE``,
``BEES_TEMPORAL_ADDRESS``) is that program's public interface and is read here, in
:func:`from_environment`, and nowhere else.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Awaitable, Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bees_cli.errors import UserError


class ActionCallInput(BaseModel):
    """One call of add-on action ``action`` (``ADDON.ACTION``) by ``agent`` in ``stage``.

    ``environ`` is what the add-on's own program (or MCP server) starts from: the stage's
    environment, filtered later to the base and the names the add-on declares
    (:func:`~bees_cli.agents.child_env.child_environment`); Bees reads nothing from it.
    ``cwd`` is the folder the add-on runs in (None: the current folder). ``temporal_address``
    is the engine to ask when the call is held (None: this computer's).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    item_id: str
    stage: str
    agent: str
    action: str
    data: Any = Field(default_factory=dict)
    round: int = 1
    attempt: int = 1
    piece: str | None = None
    """The piece whose agent calls (issue 14); None: the stage's own agent."""
    workspace: str = ""
    """The workspace's folder: ``${BEES_WORKSPACE}`` in an add-on's command."""
    cwd: str | None = None
    environ: dict[str, str] = Field(default_factory=dict)
    temporal_address: str | None = None

    @cached_property
    def digest(self) -> str:
        """The SHA-256 (64 hex digits) of the input's canonical JSON (:func:`digest_of`)."""
        return digest_of(self.data)

    @property
    def key(self) -> str:
        """The action's idempotency key, ``BEES_ACTION_KEY`` (:func:`action_key`)."""
        return action_key(self.item_id, self.stage, self.digest)

    def with_data(self, data: Any) -> ActionCallInput:
        """Return this call with input ``data`` (a person's corrected input, issue 26,
        point 4), its digest and key computed afresh (``model_copy`` would keep the cached
        digest of the old input)."""
        return ActionCallInput.model_validate({**self.model_dump(), "data": data})


def from_environment(name: str, input_text: str | None, environ: Mapping[str, str], *,
                     cwd: str | None = None) -> ActionCallInput:
    """Read ``bees action NAME --input TEXT`` as called by a command agent's program: the one
    place Bees reads a stage's ``BEES_*`` variables back.

    Args:
        name: ``ADDON.ACTION``.
        input_text: ``--input`` (JSON, ``@FILE``, or None for ``{}``; :func:`parse_input`).
        environ: the program's environment (the stage's, as the runner gave it).
        cwd: the folder the add-on runs in (None: the current folder).

    Raises:
        UserError: not inside a stage (``BEES_ITEM_ID``, ``BEES_STAGE`` or ``BEES_AGENT``
            unset), ``name`` is not ``ADDON.ACTION``, or the input is not JSON.
    """
    item_id, stage, agent = (environ.get(k, "") for k in
                             ("BEES_ITEM_ID", "BEES_STAGE", "BEES_AGENT"))
    if not (item_id and stage and agent):
        raise UserError("bees action runs inside a stage: BEES_ITEM_ID, BEES_STAGE and "
                        "BEES_AGENT are not set",
                        hint="an agent's program calls it while its stage runs")
    check_name(name)
    return ActionCallInput(
        item_id=item_id, stage=stage, agent=agent, action=name, data=parse_input(input_text),
        round=int(environ.get("BEES_ROUND", "1") or 1),
        attempt=int(environ.get("BEES_ATTEMPT", "1") or 1),
        piece=environ.get("BEES_PIECE") or None, workspace=environ.get("BEES_WORKSPACE", ""),
        cwd=cwd, environ=dict(environ),
        temporal_address=environ.get("BEES_TEMPORAL_ADDRESS") or None)


def check_name(name: str) -> None:
    """Check that ``name`` is ``ADDON.ACTION``.

    Raises:
        UserError: it is not.
    """
    if name.count(".") != 1 or not all(name.split(".")):
        raise UserError(f"{name!r} is not ADDON.ACTION", hint="e.g. bees action mail.send")


def parse_input(text: str | None) -> Any:
    """Read ``--input``: JSON text, ``@FILE`` (JSON in a file), ``@-`` (JSON on stdin), or
    nothing (``{}``).

    Raises:
        UserError: not valid JSON, or the file cannot be read.
    """
    if text is None:
        return {}
    source = "--input"
    if text == "@-":
        source, text = "stdin", sys.stdin.read()
    elif text.startswith("@"):
        path = Path(text[1:])
        source = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise UserError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        return json.loads(text)
    except ValueError as error:
        raise UserError(f"{source} is not valid JSON: {error}",
                        hint='e.g. --input \'{"to": "team@example.com"}\'') from None


def canonical(data: Any) -> str:
    """Return ``data`` as canonical JSON: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest_of(data: Any) -> str:
    """Return the SHA-256 (64 hex digits) of :func:`canonical` ``data``."""
    return hashlib.sha256(canonical(data).encode("utf-8")).hexdigest()


def action_key(item_id: str, stage: str, digest: str) -> str:
    """Return the action's idempotency key, ``BEES_ACTION_KEY``: the SHA-256 (64 hex digits)
    of ``ITEM\nSTAGE\nDIGEST``, the same on every attempt and computer, so an add-on can
    pass it to a service that deduplicates (mail and payment APIs commonly do)."""
    return hashlib.sha256(f"{item_id}\n{stage}\n{digest}".encode()).hexdigest()


ActionRunner = Callable[[ActionCallInput], Awaitable[Any]]
"""Runs one typed add-on action call through the gate (the use case ``call_action``,
injected: the engine does not import use cases); its ``cwd`` is the stage's folder, where a
command agent's ``bees action`` runs, so an add-on sees the same current folder from either
kind of agent. Returns its outcome (``exit_code``, ``stdout``, ``from_journal``,
``binary``) or raises ``Refused``/``UserError``; a held call waits on the run."""

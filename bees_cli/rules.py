"""The post's rules that are numbers or small decisions, each in one named place.

Every constant and function here is used by the code that runs the rule (never a copy of
it), and each names the rule of DESIGN.md ("Rules") it comes from. A mutation run over this
module (``scripts/mutate_rules.sh``) shows the tests notice any of them changing.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

RECHECK_EVERY = timedelta(seconds=15)
"""How often an item that may not start yet checks again: eligibility and a busy agent's
slot (Rules: eligibility, busy agent)."""

BUSY_LIMIT = timedelta(minutes=10)
"""How long a stage waits for a slot of a busy agent before it fails for a person to retry
(Rules: busy agent)."""

REVIEW_LIMIT = 3
"""The request for changes of one review stage that stops the item for a person: the third
(Rules: moving)."""

LATE_AFTER = timedelta(seconds=60)
"""A schedule fire asked for its key later than this after the scheduled instant is skipped,
never caught up (Rules: schedules). Exactly 60 s late still runs."""

KEY_TRIES = 5
"""How many times a firing computer asks Bees Cloud for a schedule key before it gives up
that time (Rules: schedules)."""

SYNC_EVERY = timedelta(seconds=15)
"""How often a computer sends its items' changes to the shared record and fetches the
team's (Rules: shared record)."""

RUNNER_SILENT_AFTER = 3 * SYNC_EVERY
"""A runner not heard for longer than this (three missed syncs' heartbeats) is shown as
``silent for N min``; nothing moves on its own (DESIGN.md, Runners): a person decides,
and may retire it."""


def runner_silent(heard: datetime | None, now: datetime) -> bool:  # pragma: no mutate
    """Return True when a runner last heard at ``heard`` (None: never) is silent at ``now``:
    more than :data:`RUNNER_SILENT_AFTER` ago. Exactly 45 s is still heard."""
    return heard is None or now - heard > RUNNER_SILENT_AFTER


UNDER_WAY = frozenset({"pending", "starting", "waiting", "running"})
"""Statuses of an item that holds one of a runner's slots: started here and not parked for a
person (waiting for approval, failed, at the review limit) or finished."""


def runner_room(slots: int, statuses: list[str]) -> int:
    """Return how many more offers a runner with ``slots`` may claim now, given the statuses
    of the items of its local record: ``slots`` less those :data:`UNDER_WAY`, never below 0.

    A runner claims only what it has room to run, so that a pool widens: one that claimed
    every offer it could continue would hold them queued while its fellows sat idle
    (DESIGN.md, Runners; issue 27)."""
    return max(0, slots - sum(1 for status in statuses if status in UNDER_WAY))


UNDECLARED_KIND = "gated"
"""The kind of an MCP tool the workspace gives no kind and the server does not mark
read-only: held like ``send`` on an ``approval: required`` stage, never silently ungated
(DESIGN.md, words: add-on; issue 25). Not a kind a workspace may declare."""

GATED_KINDS: frozenset[str] = frozenset({"send", "post", "delete", "pay", UNDECLARED_KIND})
"""Add-on action kinds an agent may not run on an ``approval: required`` stage until a person
approves (Rules: approvals), with :data:`UNDECLARED_KIND`."""

MCP_START_SECONDS = 10.0
"""Default bound (seconds) on starting or reaching an MCP add-on's server and on each of its
answers before a tool call (the handshake, the list of tools); an add-on may set its own
``mcp.start_seconds``. A server that does not answer within it is not connected, never a
hang (issue 25, point 3)."""

MODEL_READ_SECONDS = 300.0
"""Default bound (seconds) on connecting to a model's server and on each read and write of
one model call (``runner.model.timeout_seconds``). A model that does not stream sends
nothing until its reply is whole, so this is also how long it may think: a small model on a
busy laptop CPU took over 120 s (issue 26, point 1)."""

MODEL_CALL_SECONDS = 600.0
"""Default deadline (seconds) of one model call as a whole, from sending the request to the
reply's last byte (``runner.model.deadline_seconds``): a server that drips its reply is cut
there, whatever each read takes. A cut call is tried again like a timeout (issue 26, point 1)."""

MODEL_CALL_MOST_SECONDS = 1800.0
"""The longest deadline a workspace may set: the engine's own bound on one model call
(``MODEL_CALL_TIMEOUT``, 30 minutes), which must not cut a call first."""

MODEL_REPLY_BYTES = 1_000_000
"""Default limit (bytes, decoded) of one model reply (``runner.model.max_reply_bytes``): the
reply is read as it arrives and cut off past it with "the reply was larger than 1 MB", never
read whole; the stage fails with that reason, not tried again. Kept under the engine's
2 MB limit on one step's result, which a larger reply would hit (issue 26, point 1)."""

MODEL_TOOL_CALLS = 50
"""Default limit of tool calls in one model reply (``runner.max_tool_calls``): a reply asking
for more runs none of them; the model is told why once, and a second such reply fails the
stage with that reason (issue 26, point 1)."""

MCP_CALL_SECONDS = 60.0
"""Default bound (seconds) on one MCP tool call's answer; an add-on may set its own
``mcp.call_seconds``. A call not answered within it may have taken effect, so a gated one is
held for a person like any interrupted action (issue 25)."""

TOOL_RESULT_BYTES = 64_000
"""Most bytes (UTF-8) of an add-on tool's result (a script's stdout, an MCP tool's text) that
go into a model's conversation; a longer one is cut there, at a character boundary, and the
model is told (:func:`cap_tool_result`). Keeps one result from filling the model's context
and the engine's 2 MB limit on one step's result (issue 25, point 6)."""


def size_words(size: int) -> str:
    """Say ``size`` (bytes; 1 KB = 10^3, 1 MB = 10^6) as people read it: ``999 bytes``,
    whole KB below 1 MB (``200 KB``), MB with one decimal from 1 MB (``1.3 MB``); KB and MB
    rounded up, so a result one byte over the cap never reads as the cap."""
    if size < 1_000:
        return f"{size} bytes"
    if size < 1_000_000:
        return f"{-(-size // 1_000)} KB"
    return f"{-(-size // 100_000) / 10:.1f} MB"


def cap_tool_result(text: str, cap: int = TOOL_RESULT_BYTES) -> str:
    """Return ``text`` whole when its UTF-8 form holds at most ``cap`` bytes; else its longest
    start of at most ``cap`` bytes that ends on a whole character, then
    ``\n[result cut at 64 KB of 200 KB]`` (the cap, then the whole size, in
    :func:`size_words`). Bounded tool results (issue 25, point 6)."""
    data = text.encode("utf-8")
    if len(data) <= cap:
        return text
    kept = data[:cap].decode("utf-8", "ignore")  # a character cut in two is dropped whole
    return f"{kept}\n[result cut at {size_words(cap)} of {size_words(len(data))}]"


def binary_refusal(what: str) -> str:  # pragma: no mutate
    """Return what a model is told instead of a binary tool result; ``what`` says what it is:
    a media type (an MCP image, audio or blob) or ``not UTF-8 text`` (a script's stdout). The
    tool ran, so the call counts as made (issue 25, point 6)."""
    return (f"refused: the tool ran, but its result is binary ({what}), which this model "
            "cannot read")


CLOCK_TOLERANCE_SECONDS = 300
"""How far (seconds) a shared-record change's origin time may be ahead of Bees Cloud's clock
before the change is refused, shown and kept for a later sync (Rules: under faults — changes
stamped too far ahead are refused and shown, never dropped).

Why: last-writer-wins follows the origin clock; a clock far ahead would win every later
change of the item for good."""

MAX_FILES = 1_000
"""Most regular files a handed-over run folder may hold, ``checkpoint.json`` excluded
(Rules: handover)."""

MAX_FILE_BYTES = 20_000_000
"""Largest size in bytes (1 MB = 10^6 bytes) of one file of a handed-over run folder
(Rules: handover)."""

MAX_TOTAL_BYTES = 250_000_000
"""Largest size in bytes of all files of a handed-over run folder together (Rules:
handover)."""


def is_late(scheduled_utc: datetime, asked_utc: datetime) -> bool:
    """Tell whether a fire asked too late for its key and is skipped (Rules: schedules).

    The one-minute rule judges the asking, not the making: a key already won is made into
    its item however late that happens.

    Args:
        scheduled_utc: the aware instant the fire was scheduled for (UTC).
        asked_utc: the aware instant this computer handles the fire (UTC).

    Returns:
        True when more than :data:`LATE_AFTER` passed (exactly 60 s still runs).

    Raises:
        ValueError: either datetime is naive.
    """
    if scheduled_utc.tzinfo is None or asked_utc.tzinfo is None:
        raise ValueError("is_late needs aware datetimes")
    return asked_utc - scheduled_utc > LATE_AFTER


def waited_for_slot(attempt: int) -> timedelta:
    """Return how long a stage has waited for a busy agent's slot at the ``attempt``-th
    check of its waiting activity (Rules: busy agent).

    Args:
        attempt: the activity's attempt, from 1 (the first check, nothing waited yet).

    Returns:
        ``(attempt - 1)`` times :data:`RECHECK_EVERY`: the attempts are that far apart.
    """
    return RECHECK_EVERY * (attempt - 1)


def busy_fails(waited: timedelta) -> bool:
    """Tell whether a stage that waited ``waited`` for a busy agent's slot fails now (Rules:
    busy agent): once :data:`BUSY_LIMIT` has passed, exactly 10 minutes included."""
    return waited >= BUSY_LIMIT


def busy_reason(slot_reason: str | None) -> str:  # pragma: no mutate
    """Return the reason a stage or piece fails with after waiting :data:`BUSY_LIMIT` for a
    busy agent (Rules: busy agent), e.g. ``... 1 of 1 busy (items X) for 10 minutes``.

    Args:
        slot_reason: the last answer of the slot's check (who holds the agent's slots).

    Returns:
        ``"<slot_reason> for 10 minutes"`` (the minutes of :data:`BUSY_LIMIT`).
    """
    return f"{slot_reason} for {BUSY_LIMIT // timedelta(minutes=1)} minutes"


def needs_approval(kind: str, stage_approval: str | None) -> bool:  # pragma: no mutate
    """Tell whether an add-on action of ``kind`` is held for a person on a stage whose
    ``approval`` is ``stage_approval`` (Rules: approvals).

    Args:
        kind: the action's kind (``read``, ``write``, ``send``, ``post``, ``delete``, ``pay``).
        stage_approval: the stage's ``approval`` setting (``"required"`` or None).
    """
    return stage_approval == "required" and kind in GATED_KINDS


REVIEW_LIMIT_WORDS = "{stage} asked for changes {count} times"
"""How the reason of an item stopped by its review limit reads (``count`` requests for
changes of ``stage``); stored in history facts and saved checkpoints, so kept byte for byte."""


def review_limit_reason(stage: str, count: int = REVIEW_LIMIT) -> str:  # pragma: no mutate
    """Return the reason an item stops with when review ``stage`` asked for changes
    ``count`` times (Rules: moving), e.g. ``Review asked for changes 3 times``."""
    return REVIEW_LIMIT_WORDS.format(stage=stage, count=count)


def review_stops(requests_for_changes: int) -> bool:
    """Tell whether a review's ``requests_for_changes``-th request for changes (counted from
    1 since the last person's answer) stops the item for a person (Rules: moving)."""
    return requests_for_changes >= REVIEW_LIMIT


ToolKindWhy = Literal["declared", "read_only_hint", "undeclared"]
"""Why an MCP tool has its kind: the workspace declares it, the server marks the tool
read-only, or neither (:data:`UNDECLARED_KIND`)."""


def mcp_tool_kind(declared: str | None,  # pragma: no mutate
                  read_only_hint: bool | None) -> tuple[str, ToolKindWhy]:
    """Return the kind of an MCP tool and why (DESIGN.md, words: add-on; issue 25, point 2).

    The workspace's declared kind wins; otherwise only the server's ``readOnlyHint: true``
    makes the tool ``read``; otherwise it is :data:`UNDECLARED_KIND`, gated like ``send``.

    Args:
        declared: the kind the add-on's ``kinds:`` gives the tool, or None.
        read_only_hint: the tool's ``annotations.readOnlyHint`` as the server lists it (None:
            the server says nothing).

    Returns:
        ``(kind, why)``, e.g. ``(send, declared)``, ``(read, read_only_hint)``,
        ``(gated, undeclared)``.
    """
    if declared is not None:
        return declared, "declared"
    if read_only_hint is True:
        return "read", "read_only_hint"
    return UNDECLARED_KIND, "undeclared"


WriteFolder = Literal["run", "writes", "reads", "outside"]
"""Where a model's ``write_file`` would land: the stage's own folder in the run folder, a
linked folder the stage lists under ``writes:``, a linked folder it only reads (``reads:``,
the item's folders, other stages' folders), or outside all of them."""

STAGE_FOLDER_WORD = "stage"
"""The name by which a model's file tools mean the stage's own folder."""


def write_refusal(where: WriteFolder, *, folder: str,  # pragma: no mutate
                  approval_required: bool, approved: bool) -> str | None:
    """Return why a stage's model may not write into ``folder`` now, or None: it may (issue
    25, point 5: no side doors; Rules: approvals).

    The stage's own folder is always writable; a folder under the stage's ``writes:`` is
    writable, on a stage with ``approval: required`` only once a person approved something
    of the stage's current round (before that a write would change a linked folder while
    the stage shows "waiting for approval"); a folder the stage only reads, and anything
    outside these, never.

    Args:
        where: what ``folder`` is to the stage (:data:`WriteFolder`).
        folder: the folder's name as the model gave it (for the reason).
        approval_required: the stage is marked ``approval: required``.
        approved: a person approved a request of the stage's current round.

    Returns:
        None, or the reason told to the model as the tool's result (after ``refused:``).
    """
    if where == "run":
        return None
    if where == "writes":
        if not approval_required or approved:
            return None
        return (f"folder {folder} is a linked folder and this stage needs a person's approval "
                f"before it changes one; write in the stage's own folder ({STAGE_FOLDER_WORD}) "
                "until then")
    if where == "reads":
        return f"folder {folder} is read-only to this stage: it is not under the stage's writes:"
    return (f"that path is outside the folders this stage may write: its own folder "
            f"({STAGE_FOLDER_WORD}) and those under its writes:")

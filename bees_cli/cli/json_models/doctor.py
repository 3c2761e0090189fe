"""``--json`` document of ``bees doctor``: each check's machine values and each process's."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from bees_cli.cli.json_models.base import Out, Part
from bees_cli.machine.links import FolderHow
from bees_cli.record.views import UtcTime


def _opt(description: str) -> Any:
    """A field of some checks only: left out of the document when None."""
    return Field(default=None, exclude_if=lambda v: v is None, description=description)


class LostItem(Part):
    """An item whose run the engine lost, and the stage ``bees retry`` starts again."""

    item_id: str
    stage: str | None


class RefusedChange(Part):
    """A change Bees Cloud refused, kept until it can be sent (``code``: ``clock_ahead``
    with ``offset_seconds``, ``not_owner`` with ``owner``…)."""

    item_id: str
    code: str
    message: str
    offset_seconds: float | None
    owner: str | None


class DoctorCheck(Part):
    """One ``bees doctor`` check: its name, ``ok``, and the machine values of its kind (the
    text view words them; a field a check does not have is left out).

    ``engine``: ``address``, ``version``; ``bees run``: ``state``, ``pid``; ``lost items``:
    ``lost``, ``items``, ``hint``; ``cloud``: ``configured``, ``url``, ``url_from``,
    ``token_from``, ``person``, ``team``; ``clock``: ``skew_seconds``, ``measured``;
    ``time zones``: ``tz_version``, ``tz_source``; ``workspace``: ``path``, ``from_env``;
    ``folder NAME``: ``folder``, ``link``, ``path``, ``env``; ``add-on NAME``: ``addon``,
    ``missing``; ``agent NAME``: ``agent``, ``url`` (a model agent's server; one that does
    not answer is a ``warning``, ``error`` ``model_unreachable``); ``shared record``:
    ``last_sync``; ``refused changes``: ``refused``. A check that failed on an error has its
    ``error`` code, ``message`` and ``hint``."""

    check: str
    ok: bool
    warning: bool | None = _opt("True on a check that did not pass but does not fail the "
                                "doctor (``agent NAME``: its model server does not answer).")
    error: str | None = _opt("The error's code when the check failed on one.")
    message: str | None = _opt("The error's one-line message.")
    hint: str | None = _opt("What to do next (lost items: `bees retry ITEM`).")
    address: str | None = _opt("The engine's address.")
    version: str | None = _opt("The engine's Bees version (left out: unknown).")
    state: Literal["running", "starting", "not_running", "stopped_without_cleanup"] | None = (
        _opt("``bees run``'s process: ``stopped_without_cleanup`` after a kill -9 or crash."))
    pid: int | None = _opt("``bees run``'s pid (the live one, or the last one seen).")
    lost: int | None = _opt("How many items are lost.")
    items: list[LostItem] | None = _opt("The lost items.")
    configured: bool | None = _opt("A Bees Cloud is configured on this computer.")
    url: str | None = _opt("Bees Cloud's URL; for ``agent NAME``, its model's base URL.")
    agent: str | None = _opt("The model agent whose server was asked.")
    url_from: str | None = _opt("Where the URL comes from: ``saved`` or ``BEES_CLOUD_URL``.")
    token_from: str | None = _opt("Where the token comes from: ``saved`` or ``BEES_TOKEN``.")
    person: str | None = _opt("Who Bees Cloud says is signed in.")
    team: str | None = _opt("The person's team.")
    skew_seconds: float | None = _opt("Bees Cloud's clock minus this one, seconds.")
    measured: Literal["now", "last_sync"] | None = _opt("When the skew was measured.")
    tz_version: str | None = _opt("The time-zone database's version (left out: unknown).")
    tz_source: str | None = _opt("Where the time-zone database comes from.")
    path: str | None = _opt("The workspace's folder, or where the folder resolves here "
                             "(``env_unset``: its default path, as declared).")
    from_env: bool | None = _opt("The workspace was found by ``BEES_WORKSPACE``.")
    folder: str | None = _opt("The folder's name.")
    link: FolderHow | None = _opt(
        "How the folder resolves here: ``linked`` (bees link), ``default_path``, or why not: "
        "``not_linked``, ``link_not_dir``, ``default_not_dir`` (``path`` is not a directory), "
        "``env_unset`` (``path``, the default path, names ``env``, not set).")
    env: str | None = _opt("The environment variable the default path needs, not set here.")
    addon: str | None = _opt("The add-on's name.")
    missing: list[str] | None = _opt("What the add-on misses here (``env GMAIL_TOKEN``…).")
    last_sync: UtcTime | None = _opt("The last sync of the shared record (left out: never).")
    refused: list[RefusedChange] | None = _opt("The changes Bees Cloud refused.")


class SkippedAgent(Part):
    """An agent agent choice did not use, and why: ``not_declared``, ``disabled``,
    ``under_review`` (it did the work under review) or ``addons_not_connected`` (``addons``:
    its tools' add-ons not connected here; their checks say what they miss)."""

    agent: str
    why: Literal["not_declared", "disabled", "under_review", "addons_not_connected"]
    addons: list[str]


class CannotRun(Part):
    """Why a process cannot run here now: ``folder_not_linked`` (``folder``, one it reads;
    the check ``folder NAME`` says how it resolves) or ``no_agent`` (``skipped``: each agent
    looked at, and why not)."""

    code: Literal["folder_not_linked", "no_agent"]
    folder: str | None
    skipped: list[SkippedAgent]


class ProcessCheck(Part):
    """Whether this computer could run a process's first stage now, and if not, why."""

    process: str
    stage: str
    can_run: bool
    reasons: list[CannotRun]


class DoctorOut(Out):
    """``bees doctor``: ``ok`` when every check passed but warnings (exit 1 otherwise)."""

    ok: bool
    computer: str
    machine_id: str
    person: str | None
    checks: list[DoctorCheck]
    processes: list[ProcessCheck]


def doctor_out(report: dict[str, Any]) -> DoctorOut:
    """Return ``bees doctor --json`` of the use case's report (``DoctorReport.to_json()``):
    each check without its ``detail``, the text view's line."""
    checks = [{k: v for k, v in check.items() if k != "detail"} for check in report["checks"]]
    return DoctorOut.model_validate({**report, "checks": checks})

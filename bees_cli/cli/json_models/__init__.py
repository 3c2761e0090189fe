"""What each command prints with ``--json``: one typed model per output (issue 15, point 2).

The contract, for every command: stdout is one JSON object with ``version``
(:data:`VERSION`); lists sit under a named key (``items``, ``approvals``…); an item's id is
always ``item_id``; every time is RFC 3339 UTC to whole seconds with ``Z``
(``2026-12-01T08:00:00Z``, :data:`~bees_cli.record.views.UtcTime`); data holds machine
values, never display strings (the text view formats them).
An error is ``{"version", "error": {"code", "message", "hint", …}}`` (:class:`ErrorOut`).
The JSON Schemas generated from these models are in ``schemas/output/``
(:mod:`bees_cli.cli.json_schemas`).

The models live in one module per command group; this package names them all, so
``from bees_cli.cli import json_models as out`` reaches every one. A group's module is
imported when one of its names is first read (PEP 562's module ``__getattr__``): building
the ~120 models of every group cost each command ~0.3 s of CPU before it did anything
(``bees whoami`` needs only the machine group's).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bees_cli.cli.json_models.approvals import (
        ApprovalOut,
        ApprovalsOut,
        DecisionOut,
        approval_out,
    )
    from bees_cli.cli.json_models.base import (
        DISPLAY_KEYS,
        VERSION,
        ErrorBody,
        ErrorOut,
        Out,
        Part,
        emit,
        item_out,
    )
    from bees_cli.cli.json_models.cloud import (
        AppOut,
        CloudStatusOut,
        LoginOut,
        LogoutOut,
        PersonAddOut,
        PersonRevokeOut,
        RunnerAddOut,
        RunnerRetireOut,
        TeamAddOut,
    )
    from bees_cli.cli.json_models.demo import DemoDecisionOut, DemoOut
    from bees_cli.cli.json_models.doctor import (
        CannotRun,
        DoctorCheck,
        DoctorOut,
        LostItem,
        ProcessCheck,
        RefusedChange,
        SkippedAgent,
        doctor_out,
    )
    from bees_cli.cli.json_models.handover import (
        CheckpointProblem,
        ContinueOut,
        OfferNoteOut,
        OfferOut,
        OffersOut,
        RelinquishOut,
        RepairOut,
        RunnerOut,
        RunnersOut,
        VerifyOut,
    )
    from bees_cli.cli.json_models.items import (
        CancelOut,
        DelegateOut,
        ItemCreateErrorOut,
        ItemCreateOut,
        ItemShowOut,
        PersonDoneOut,
        StatusItem,
        StatusOut,
        StatusWarningOut,
        TeamItemShow,
        status_out,
    )
    from bees_cli.cli.json_models.machine import (
        AddonConnection,
        AddonsOut,
        FolderLink,
        InitOut,
        LinkOut,
        LinksOut,
        SchemasWriteOut,
        ToolKindOut,
        UnlinkOut,
        ValidateOut,
        WhoamiOut,
    )
    from bees_cli.cli.json_models.schedules import (
        FireOut,
        Placement,
        ScheduleOut,
        SchedulesOut,
        ZoneWarning,
    )
    from bees_cli.cli.json_models.watch import (
        ItemWatchOut,
        WatchEndOut,
        WatchFactOut,
        WatchModelOut,
        WatchStatusOut,
        watch_line,
    )
    from bees_cli.record.views import ItemView  # ``item create --wait``'s ``final``

_HOMES: dict[str, tuple[str, ...]] = {
    "approvals": ("ApprovalOut", "ApprovalsOut", "DecisionOut", "approval_out"),
    "base": (
        "DISPLAY_KEYS", "VERSION", "ErrorBody", "ErrorOut", "Out", "Part", "emit", "item_out",
    ),
    "cloud": (
        "AppOut", "CloudStatusOut", "LoginOut", "LogoutOut", "PersonAddOut", "PersonRevokeOut",
        "RunnerAddOut", "RunnerRetireOut", "TeamAddOut",
    ),
    "demo": ("DemoDecisionOut", "DemoOut"),
    "doctor": (
        "CannotRun", "DoctorCheck", "DoctorOut", "LostItem", "ProcessCheck", "RefusedChange",
        "SkippedAgent", "doctor_out",
    ),
    "handover": (
        "CheckpointProblem", "ContinueOut", "OfferNoteOut", "OfferOut", "OffersOut",
        "RelinquishOut", "RepairOut", "RunnerOut", "RunnersOut", "VerifyOut",
    ),
    "items": (
        "CancelOut", "DelegateOut", "ItemCreateErrorOut", "ItemCreateOut", "ItemShowOut",
        "PersonDoneOut", "StatusItem", "StatusOut", "StatusWarningOut", "TeamItemShow",
        "status_out",
    ),
    "machine": (
        "AddonConnection", "AddonsOut", "FolderLink", "InitOut", "LinkOut", "LinksOut",
        "SchemasWriteOut", "ToolKindOut", "UnlinkOut", "ValidateOut", "WhoamiOut",
    ),
    "schedules": ("FireOut", "Placement", "ScheduleOut", "SchedulesOut", "ZoneWarning"),
    "watch": (
        "ItemWatchOut", "WatchEndOut", "WatchFactOut", "WatchModelOut", "WatchStatusOut",
        "watch_line",
    ),
    "bees_cli.record.views": ("ItemView",),  # ``item create --wait``'s ``final``
}
"""Each module (under this package, or a full name) and the names it gives."""

_HOME = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """Import the module that holds ``name`` the first time it is read (PEP 562)."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    full = module if "." in module else f"{__name__}.{module}"
    value = getattr(importlib.import_module(full), name)
    globals()[name] = value
    return value


__all__ = [
    "ItemView",
    "ItemWatchOut",
    "WatchEndOut",
    "WatchFactOut",
    "WatchModelOut",
    "WatchStatusOut",
    "watch_line",
    "VERSION",
    "DISPLAY_KEYS",
    "Out",
    "Part",
    "DemoDecisionOut",
    "DemoOut",
    "emit",
    "item_out",
    "ErrorBody",
    "ErrorOut",
    "WhoamiOut",
    "LinkOut",
    "UnlinkOut",
    "FolderLink",
    "LinksOut",
    "AddonConnection",
    "AddonsOut",
    "InitOut",
    "ToolKindOut",
    "ValidateOut",
    "SchemasWriteOut",
    "StatusItem",
    "StatusWarningOut",
    "StatusOut",
    "status_out",
    "ItemCreateErrorOut",
    "ItemCreateOut",
    "TeamItemShow",
    "ItemShowOut",
    "PersonDoneOut",
    "CancelOut",
    "DelegateOut",
    "ApprovalOut",
    "approval_out",
    "ApprovalsOut",
    "DecisionOut",
    "FireOut",
    "Placement",
    "ZoneWarning",
    "ScheduleOut",
    "SchedulesOut",
    "LostItem",
    "RefusedChange",
    "DoctorCheck",
    "SkippedAgent",
    "CannotRun",
    "ProcessCheck",
    "DoctorOut",
    "doctor_out",
    "RelinquishOut",
    "RepairOut",
    "ContinueOut",
    "CheckpointProblem",
    "VerifyOut",
    "TeamAddOut",
    "PersonRevokeOut",
    "CloudStatusOut",
    "LoginOut",
    "LogoutOut",
    "AppOut",
    "PersonAddOut",
    "RunnerAddOut",
    "RunnerRetireOut",
    "OfferNoteOut",
    "OfferOut",
    "OffersOut",
    "RunnerOut",
    "RunnersOut",
]

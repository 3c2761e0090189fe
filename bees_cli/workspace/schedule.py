"""``schedules/NAME.yaml``: the schedule model, and the checks of its cron, time zone and title.

:mod:`bees_cli.workspace.models` re-exports these names (``models.Schedule``, ...).
"""

from __future__ import annotations

import string
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StringConstraints, field_validator, model_validator

from bees_cli.ids import EMAIL_PATTERN
from bees_cli.workspace.fields import TIME_PATTERN, Name, Strict

Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

TITLE_FIELDS: tuple[str, ...] = ("schedule", "date", "time")
"""Placeholders a schedule's ``title`` may use: ``{schedule}`` (its name), ``{date}``
(``YYYY-MM-DD``) and ``{time}`` (``HH:MM``), both in the schedule's time zone."""

CRON_MACROS: frozenset[str] = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
"""Cron shorthands accepted besides five-field expressions."""


class Calendar(Strict):
    """Calendar fields of a schedule: on ``days`` at ``time`` (``H:MM``, 24 h, in its time zone)."""

    days: list[Weekday] = Field(min_length=1, description="Weekdays on which it fires.")
    time: Annotated[str, StringConstraints(pattern=TIME_PATTERN)] = Field(
        description="Wall-clock time, H:MM on 24 hours, in the schedule's time zone."
    )


class Schedule(Strict):
    """``schedules/NAME.yaml``: creates a work item at set times; owned by one person.

    Exactly one of ``cron`` (five fields, or a shorthand such as ``@daily``) and
    ``calendar`` is given; ``timezone`` is an IANA name such as ``Europe/Paris``.
    """

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["cron"]}, {"required": ["calendar"]}]}
    )

    process: Name = Field(description="The process each new item follows.")
    owner: Annotated[str, StringConstraints(pattern=EMAIL_PATTERN)] = Field(
        description="The person (email) whose computers fire this schedule."
    )
    cron: str | None = Field(
        default=None, description="Five cron fields or a shorthand such as @daily."
    )
    calendar: Calendar | None = Field(default=None, description="Days and a time, instead of cron.")
    timezone: str = Field(description="IANA time zone name, e.g. Europe/Paris.")
    title: str = Field(
        default="{schedule} {date}",
        description="Item title; {schedule}, {date}, {time} are filled in.",
    )
    agents: list[Name] = Field(
        default_factory=list, description="Agents named on each new item (first choice)."
    )
    folders: list[Name] = Field(
        default_factory=list, description="Folders each new item reads (must be linked to fire)."
    )
    enabled: bool = Field(default=True, description="A disabled schedule does not fire.")

    @field_validator("cron")
    @classmethod
    def _cron_parses(cls, value: str | None) -> str | None:
        if value is not None:
            check_cron(value)
        return value

    @field_validator("timezone")
    @classmethod
    def _zone_exists(cls, value: str) -> str:
        check_timezone(value)
        return value

    @field_validator("title")
    @classmethod
    def _title_fields(cls, value: str) -> str:
        check_title(value)
        return value

    @model_validator(mode="after")
    def _one_timing(self) -> Schedule:
        if (self.cron is None) == (self.calendar is None):
            raise ValueError("give exactly one of 'cron' or 'calendar'")
        return self


CRON_HORIZON_YEARS = 8
"""A cron expression that does not fire within this many years is an error (``0 9 30 2 *``)."""


def check_cron(expression: str) -> None:
    """Check a cron expression: five fields (minute hour day month weekday) or a shorthand.

    It must also fire at least once in the next :data:`CRON_HORIZON_YEARS` years.

    Raises:
        ValueError: with a one-line human message.
    """
    text = expression.strip()
    if text.startswith("@"):
        if text not in CRON_MACROS:
            from bees_cli.suggest import did_you_mean

            raise ValueError(f"unknown cron shorthand '{text}'{did_you_mean(text, CRON_MACROS)}")
        return
    fields = text.split()
    if len(fields) != 5:
        raise ValueError(
            f"a cron expression has 5 fields (minute hour day month weekday), got {len(fields)}"
        )
    from croniter import CroniterBadDateError, croniter

    if not croniter.is_valid(text):
        raise ValueError(f"not a valid cron expression: '{expression}'")
    try:
        croniter(text, datetime.now(UTC), max_years_between_matches=CRON_HORIZON_YEARS).get_next()
    except CroniterBadDateError:
        raise ValueError(f"cron '{expression}' never fires") from None


def check_timezone(name: str) -> None:
    """Check an IANA time zone name such as ``Europe/Paris`` (zoneinfo, with tzdata).

    Raises:
        ValueError: unknown zone, with the nearest known name when there is one.
    """
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        from bees_cli.suggest import did_you_mean

        hint = did_you_mean(name, zoneinfo.available_timezones())
        raise ValueError(f"unknown time zone '{name}'{hint}") from None


def check_title(template: str) -> None:
    """Check a title template: only ``{schedule}``, ``{date}`` and ``{time}`` placeholders.

    Raises:
        ValueError: a broken brace or an unknown placeholder.
    """
    from bees_cli.suggest import did_you_mean

    try:
        parts = list(string.Formatter().parse(template))
    except ValueError:
        raise ValueError(
            "unbalanced '{' or '}' in the title; write '{{' or '}}' for a brace"
        ) from None
    for _text, field, spec, conversion in parts:
        if field is None:
            continue
        if field not in TITLE_FIELDS or spec or conversion:
            allowed = ", ".join("{" + name + "}" for name in TITLE_FIELDS)
            raise ValueError(
                f"unknown placeholder '{{{field}}}' in the title{did_you_mean(field, TITLE_FIELDS)}"
                f" (allowed: {allowed})"
            )

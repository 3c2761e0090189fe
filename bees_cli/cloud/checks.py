"""What the Bees Cloud API accepts: ids, names, e-mail addresses, times and item fields.

Shared by the wire models (:mod:`bees_cli.cloud.wire`, which re-exports these names; their
base :class:`Wire` is here too), the server and the client, so both refuse the same input.
Each rule is also stated in the OpenAPI document where JSON schema can say it (patterns,
lengths).
"""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    JsonValue,
    PlainSerializer,
    WithJsonSchema,
)

from bees_cli.utc import as_utc, format_utc, parse_utc

MAX_FIELDS_DEPTH = 16
"""Deepest nesting of lists and objects in ``fields`` (the top object is depth 1)."""
MAX_INT = 2**63 - 1
"""Largest integer the server stores or reads from a query (a signed 64-bit integer)."""
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,199}$"
"""The ids the server accepts (without ``..``); stated in the OpenAPI document."""

_ID_RE = re.compile(ID_PATTERN)
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


def check_id(value: str) -> str:
    """Return ``value`` when it is a safe id (1-200 chars of ``A-Z a-z 0-9 . _ : @ + = -``).

    Raises:
        ValueError: the id is empty, too long, starts with a punctuation mark,
            holds a path separator, ``..`` or a control or other character.
    """
    if not _ID_RE.match(value) or ".." in value:
        raise ValueError(
            "ids are 1-200 characters of letters, digits and . _ : @ + = -,"
            " starting with a letter or digit, without '..', '/' or control characters"
        )
    return value


def check_name(value: str) -> str:
    """Return ``value`` stripped when it is a printable name of 1-200 characters.

    Raises:
        ValueError: empty, too long, or holding a control character.
    """
    value = value.strip()
    if not 1 <= len(value) <= 200:
        raise ValueError("names are 1-200 characters")
    # A printable string holds no control, format, surrogate, private or unassigned
    # character (category C); only the others are looked at one by one.
    if not value.isprintable() and any(
        unicodedata.category(ch).startswith("C") for ch in value
    ):
        raise ValueError("names may not hold control characters")
    return value


def check_email(value: str) -> str:
    """Return ``value`` lower-cased when it is an email address by the one rule Bees has
    (:func:`bees_cli.ids.check_email`: the workspace and this computer use it too).

    Raises:
        ValueError: not an email address.
    """
    from bees_cli.ids import check_email as check

    return check(value).lower()


def _strict_str(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    return value


MIN_TIME = datetime(1970, 1, 1, tzinfo=UTC)
"""Earliest time the API accepts (UTC)."""
MAX_TIME = datetime(9000, 1, 1, tzinfo=UTC)
"""Latest time the API accepts (UTC, exclusive).

Why: times at the calendar's edges with extreme offsets cannot be converted to UTC,
and times before year 1000 have no four-digit text form.
"""


def _aware_time(value: Any) -> datetime:
    """Accept a ``datetime`` or an ISO 8601 string with a zone; return it in UTC.

    Raises:
        ValueError: not a zoned time, or outside [:data:`MIN_TIME`, :data:`MAX_TIME`).
    """
    try:
        if isinstance(value, str):
            moment = parse_utc(value)
        elif isinstance(value, datetime):
            moment = as_utc(value)
        else:
            raise ValueError("a time must be an ISO 8601 string with a zone")
    except OverflowError:
        moment = MAX_TIME  # beyond the calendar once moved to UTC
    if not MIN_TIME <= moment < MAX_TIME:
        raise ValueError("a time must be from 1970-01-01 up to (not including) 9000-01-01 UTC")
    return moment


def _depth(value: Any) -> int:
    """Return how deeply lists and objects nest in ``value`` (a scalar is 0), iteratively.

    Raises:
        ValueError: ``value`` holds an integer beyond 64 bits (:data:`MAX_INT`).
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            if isinstance(node, int) and not isinstance(node, bool) and abs(node) > MAX_INT:
                raise ValueError("fields may hold integers of at most 64 bits")
            continue
        deepest = max(deepest, depth + 1)
        if deepest > MAX_FIELDS_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _check_fields(value: dict[str, Any]) -> dict[str, Any]:
    """Return ``value`` when it nests at most :data:`MAX_FIELDS_DEPTH` deep and is UTF-8 text.

    Raises:
        ValueError: too deeply nested, an integer beyond 64 bits, a float that JSON
            cannot carry, or text that is not encodable as UTF-8 (e.g. a lone surrogate).
    """
    if _depth(value) > MAX_FIELDS_DEPTH:
        raise ValueError(f"fields may nest at most {MAX_FIELDS_DEPTH} deep")
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("fields hold text that is not valid Unicode (a lone surrogate)") from None
    except ValueError:
        raise ValueError("fields hold a number JSON cannot carry (NaN or infinity)") from None
    return value


Fields = Annotated[dict[str, JsonValue], AfterValidator(_check_fields)]
"""An item's fields: a JSON object of UTF-8 text, nested at most :data:`MAX_FIELDS_DEPTH` deep."""


ID_SCHEMA: dict[str, Any] = {
    "type": "string",
    "pattern": ID_PATTERN,
    "minLength": 1,
    "maxLength": 200,
}
"""The JSON schema of an id (the ``..`` rule is checked too, but is not a JSON-schema rule)."""

Id = Annotated[
    str, BeforeValidator(_strict_str), AfterValidator(check_id), WithJsonSchema(ID_SCHEMA)
]
"""A safe id: item, schedule, machine, piece."""
Name = Annotated[
    str,
    BeforeValidator(_strict_str),
    AfterValidator(check_name),
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 200}),
]
"""A printable name such as a computer name."""
UtcTime = Annotated[
    datetime,
    BeforeValidator(_aware_time),
    PlainSerializer(format_utc, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
"""A zoned time, normalised to UTC; naive times are refused; JSON has one fixed precision."""
Sha256 = Annotated[
    str,
    BeforeValidator(_strict_str),
    AfterValidator(lambda v: v if _SHA256_RE.match(v) else _fail("64 lower-case hex digits")),
    WithJsonSchema({"type": "string", "pattern": _SHA256_RE.pattern}),
]
"""A SHA-256 digest as 64 lower-case hex digits."""


WALL_TIME_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}$"
"""A schedule's wall-clock time: local date and time to the minute (``2025-01-06T09:00``)."""
ZONE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+/-]{0,63}$"
"""A time-zone name of the tz database (``Europe/Paris``, ``Etc/GMT+5``, ``UTC``)."""
TZ_VERSION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,31}$"
"""A tz database version (``2025b``)."""


def _wall_time(value: str) -> str:
    if not re.match(WALL_TIME_PATTERN, value):
        raise ValueError("a wall-clock time is YYYY-MM-DDTHH:MM")
    datetime.strptime(value, "%Y-%m-%dT%H:%M")  # raises ValueError for 2025-13-45T25:00
    return value


def _zone(value: str) -> str:
    if not re.match(ZONE_PATTERN, value) or ".." in value:
        raise ValueError("a zone name is 1-64 characters of letters, digits and . _ + / -")
    return value


WallTime = Annotated[
    str,
    BeforeValidator(_strict_str),
    AfterValidator(_wall_time),
    WithJsonSchema({"type": "string", "pattern": WALL_TIME_PATTERN}),
]
"""A schedule's wall-clock time in its own zone, to the minute (``2025-01-06T09:00``)."""
ZoneName = Annotated[
    str,
    BeforeValidator(_strict_str),
    AfterValidator(_zone),
    WithJsonSchema({"type": "string", "pattern": ZONE_PATTERN}),
]
"""A tz database zone name, e.g. ``Europe/Paris``."""
TzVersion = Annotated[
    str,
    BeforeValidator(_strict_str),
    AfterValidator(lambda v: v if re.match(TZ_VERSION_PATTERN, v) else _fail(
        "a tz database version is 1-32 characters of letters, digits and . _ + -")),
    WithJsonSchema({"type": "string", "pattern": TZ_VERSION_PATTERN}),
]
"""A tz database version, e.g. ``2025b``."""


def _fail(message: str) -> str:
    raise ValueError(message)


class Wire(BaseModel):
    """Base of every wire model: unknown fields are refused, values are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

"""Which time-zone database this computer's schedules are computed with (``bees doctor``).

Issue 11, point 9: two computers with different zone rules compute different instants for
the same wall-clock time, so ``bees doctor`` names the database in use. Python's
:mod:`zoneinfo` reads the first zone folder of :data:`zoneinfo.TZPATH` that has the zone
(the system's), then the ``tzdata`` package; the version is read the same way round.
"""

from __future__ import annotations

import re
import zoneinfo
from pathlib import Path

from pydantic import BaseModel

_VERSION = re.compile(r"^#\s*version\s+(\S+)")


class TzDatabase(BaseModel):
    """The time-zone database in use: ``version`` (``2025b``, or None when unknown) and
    ``source`` (a system zone folder, ``tzdata package``, or ``none found``)."""

    version: str | None
    source: str

    @property
    def text(self) -> str:
        """One line for ``bees doctor``: ``tz database 2025b (/usr/share/zoneinfo)``."""
        return f"tz database {self.version or 'version unknown'} ({self.source})"


def tz_database(tzpath: tuple[str, ...] | None = None) -> TzDatabase:
    """Return the time-zone database :mod:`zoneinfo` reads on this computer.

    Args:
        tzpath: the zone folders to look in (default :data:`zoneinfo.TZPATH`).

    Returns:
        The first system folder that has zones, with the version from its ``tzdata.zi``
        (``# version 2025b``) or ``+VERSION`` (macOS), else the ``tzdata`` package's
        ``IANA_VERSION``.
    """
    for folder in zoneinfo.TZPATH if tzpath is None else tzpath:
        root = Path(folder)
        if not (root / "UTC").is_file() and not (root / "Etc" / "UTC").is_file():
            continue
        version = _zi_version(root / "tzdata.zi") or _plain_version(root / "+VERSION")
        return TzDatabase(version=version, source=str(root))
    try:
        import tzdata
    except ImportError:
        return TzDatabase(version=None, source="none found")
    return TzDatabase(version=str(tzdata.IANA_VERSION), source="tzdata package")


def _zi_version(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8") as file:
            match = _VERSION.match(file.readline())
    except OSError:
        return None
    return match.group(1) if match else None


def _plain_version(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text or None

"""Zone-rule disagreements: one wall-clock time of a schedule placed at two instants.

Issue 11, point 9: two computers of one person whose tz databases differ compute different
instants for the same wall-clock time. Bees Cloud keys the time once (the second claim is
``taken``) and keeps the disagreement; this module keeps what this computer learnt of them
(from a claim's answer, or from ``GET /v1/keys/disagreements`` when ``bees schedules``
asks) in ``zone_disagreements.json`` in the data folder, and words the warning
``bees schedules`` shows: both computers, both instants, both tz database versions.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from bees_cli.errors import CloudError
from bees_cli.files import read_json, write_json_atomic
from bees_cli.utc import display_utc

if TYPE_CHECKING:
    from pathlib import Path

    from bees_cli.cloud import wire
    from bees_cli.machine.computer import Computer

FILE_NAME = "zone_disagreements.json"
"""The file, in the computer's data folder, that keeps the disagreements seen here."""
ASK_TIMEOUT = 3.0
"""Seconds ``bees schedules`` waits for Bees Cloud's list (one request, no retry)."""


class Placement(BaseModel):
    """Where one computer placed the wall-clock time: its instant and its tz database."""

    model_config = ConfigDict(extra="forbid")

    computer: str
    machine_id: str
    instant: datetime
    tz_version: str | None = None

    @property
    def text(self) -> str:
        """``laptop computed 2025-01-06T07:00:00Z (tz 2023c)``."""
        version = self.tz_version or "version unknown"
        return f"{self.computer} computed {display_utc(self.instant)} (tz {version})"


class ZoneDisagreement(BaseModel):
    """One wall-clock time of a schedule that computers placed at different instants.

    ``holder`` holds the key (it ran there, once); ``others`` asked at other instants.
    """

    model_config = ConfigDict(extra="forbid")

    schedule_id: str
    local_time: str
    zone: str
    holder: Placement
    others: list[Placement]

    @property
    def ident(self) -> str:
        """``weekly@2025-01-06T09:00@Europe/Paris``: one entry per schedule, time and zone."""
        return f"{self.schedule_id}@{self.local_time}@{self.zone}"

    @property
    def warning(self) -> str:
        """The line ``bees schedules`` shows, naming both computers, instants and versions."""
        sides = ", ".join(p.text for p in [self.holder, *self.others])
        return (
            f"zone rules disagree for {self.local_time.replace('T', ' ')} ({self.zone}): "
            f"{sides}; it ran once, on {self.holder.computer}. Update the time-zone "
            "database on the computer that is behind (bees doctor shows its version)"
        )

    @classmethod
    def of(cls, answer: wire.KeyAnswer) -> ZoneDisagreement | None:
        """Return the disagreement a key answer carries, or None when it carries none."""
        if not answer.disagreements or answer.local_time is None or answer.zone is None:
            return None
        return cls(
            schedule_id=answer.schedule_id, local_time=answer.local_time, zone=answer.zone,
            holder=Placement(computer=answer.computer_name, machine_id=answer.machine_id,
                             instant=answer.scheduled_time, tz_version=answer.tz_version),
            others=[Placement(computer=d.computer_name, machine_id=d.machine_id,
                              instant=d.scheduled_time, tz_version=d.tz_version)
                    for d in answer.disagreements],
        )


def _path(computer: Computer) -> Path:
    return computer.data_dir / FILE_NAME


def seen(computer: Computer) -> list[ZoneDisagreement]:
    """Return the disagreements this computer has learnt of, by schedule and time.

    Raises:
        StateFileInvalid: the file is not JSON.
    """
    data = read_json(_path(computer), {})
    found = [ZoneDisagreement.model_validate(entry) for entry in data.get("disagreements", [])]
    return sorted(found, key=lambda d: (d.schedule_id, d.local_time, d.zone))


def remember(computer: Computer, answers: list[wire.KeyAnswer]) -> list[ZoneDisagreement]:
    """Keep the disagreements carried by ``answers`` (a later answer replaces an entry).

    Returns:
        Every disagreement kept now.
    """
    kept = {d.ident: d for d in seen(computer)}
    changed = False
    for answer in answers:
        found = ZoneDisagreement.of(answer)
        if found is not None and kept.get(found.ident) != found:
            kept[found.ident] = found
            changed = True
    if changed:
        entries = sorted(kept.values(), key=lambda d: (d.schedule_id, d.local_time, d.zone))
        write_json_atomic(_path(computer), {
            "disagreements": [d.model_dump(mode="json") for d in entries]})
    return sorted(kept.values(), key=lambda d: (d.schedule_id, d.local_time, d.zone))


def zone_warnings(computer: Computer) -> dict[str, list[ZoneDisagreement]]:
    """Return ``bees schedules``' warnings by schedule id: the disagreements Bees Cloud lists
    for this person (one request, :data:`ASK_TIMEOUT` s) and those seen here before, as
    machine values (:attr:`ZoneDisagreement.warning` words one).

    Cloud trouble is not an error here: the disagreements seen before are still shown.

    Raises:
        StateFileInvalid: the file of seen disagreements is not JSON.
    """
    from bees_cli.cloud.client import sync_cloud_for

    api = sync_cloud_for(computer, retries=0, timeout=ASK_TIMEOUT)
    known = seen(computer)
    if api is not None:
        try:
            with api:
                known = remember(computer, api.key_disagreements(computer.machine_id))
        except CloudError:
            pass
    warnings: dict[str, list[ZoneDisagreement]] = {}
    for found in known:
        warnings.setdefault(found.schedule_id, []).append(found)
    return warnings

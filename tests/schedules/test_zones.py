"""``bees doctor`` names the time-zone database schedules are computed with (issue 11, point 9)."""

from __future__ import annotations

from pathlib import Path

import tzdata

from bees_cli.schedules.zones import TzDatabase, tz_database


def test_a_system_folder_with_tzdata_zi(tmp_path: Path) -> None:
    (tmp_path / "UTC").write_bytes(b"TZif")
    (tmp_path / "tzdata.zi").write_text("# version 2025b\n# ddeps\n")
    found = tz_database((str(tmp_path),))
    assert found == TzDatabase(version="2025b", source=str(tmp_path))
    assert found.text == f"tz database 2025b ({tmp_path})"


def test_a_macos_folder_with_plus_version(tmp_path: Path) -> None:
    (tmp_path / "UTC").write_bytes(b"TZif")
    (tmp_path / "+VERSION").write_text("2024a\n")
    assert tz_database((str(tmp_path),)) == TzDatabase(version="2024a", source=str(tmp_path))


def test_a_folder_without_version_is_unknown(tmp_path: Path) -> None:
    (tmp_path / "Etc").mkdir()
    (tmp_path / "Etc" / "UTC").write_bytes(b"TZif")
    found = tz_database((str(tmp_path),))
    assert found.text == f"tz database version unknown ({tmp_path})"


def test_no_system_zones_is_the_tzdata_package(tmp_path: Path) -> None:
    found = tz_database((str(tmp_path / "missing"),))
    assert found == TzDatabase(version=tzdata.IANA_VERSION, source="tzdata package")


async def test_doctor_shows_the_database(tmp_path: Path) -> None:
    from bees_cli.usecases.doctor import doctor_checks
    from tests.e2e.conftest import make_computer

    here = make_computer(tmp_path, "maya-laptop", None)
    report = await doctor_checks(here, tmp_path / "no-workspace")
    [zones] = [c for c in report.checks if c.check == "time zones"]
    assert (zones.ok, zones.detail) == (True, tz_database().text)

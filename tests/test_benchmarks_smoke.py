"""CI runs every benchmark once, one short round each (issue 29, fair floors): none can
silently break again. This checks the list in ``.ci/run`` against ``benchmarks/``."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HELPERS = {"cloud_floors.py", "bare_worker.py", "engine_floor.py"}
"""Modules of ``benchmarks/`` that are not benchmarks: ``cloud.py`` imports and starts the
first, ``run_start.py`` starts the second, ``engine.py`` imports the third (their floors)."""


def smoke_list() -> list[str]:
    """The scripts of the ``smoke_benchmarks=(...)`` array in ``.ci/run``."""
    found = re.search(r"^smoke_benchmarks=\(([^)]*)\)", (REPO / ".ci" / "run").read_text(),
                      re.MULTILINE)
    assert found is not None, ".ci/run has no smoke_benchmarks=(...) list"
    return found.group(1).split()


def test_ci_runs_every_benchmark_quick() -> None:
    scripts = sorted(p.name for p in (REPO / "benchmarks").glob("*.py"))
    assert sorted(smoke_list()) == [s for s in scripts if s not in HELPERS]
    run = (REPO / ".ci" / "run").read_text()
    assert '.venv/bin/python "benchmarks/$script" --quick' in run
    assert run.index("== lint ==") < run.index("smoke_benchmarks=(")


def test_every_benchmark_has_a_quick_round() -> None:
    missing = [p.name for p in sorted((REPO / "benchmarks").glob("*.py"))
               if p.name not in HELPERS and '"--quick"' not in p.read_text()]
    assert missing == []

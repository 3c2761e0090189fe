"""Heavy libraries stay off the import path of ``bees --help`` and ``bees validate``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLE

HEAVY = ("temporalio", "sqlalchemy", "fastapi", "httpx")

PROBE = """
import json, sys
sys.argv = ["bees", *json.loads(sys.argv[1])]
from bees_cli.cli.main import run
try:
    run()
except SystemExit as exit:
    code = exit.code
print("MODULES=" + json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


@pytest.mark.parametrize(
    ("args", "ran_validation"),
    [(["--help"], False), (["validate", str(EXAMPLE)], True), (["validate", "--help"], False)],
)
def test_heavy_modules_not_imported(
    args: list[str], ran_validation: bool, bees_home: object
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    line = [x for x in result.stdout.splitlines() if x.startswith("MODULES=")][-1]
    loaded = set(json.loads(line.removeprefix("MODULES=")))
    assert "bees_cli" in loaded
    assert ("ruamel" in loaded) == ran_validation
    assert sorted(loaded & set(HEAVY)) == []

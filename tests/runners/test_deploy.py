"""The container recipe (issue 27, point 5): ``deploy/compose.yaml`` and ``deploy/Dockerfile``
parse, and name exactly the services, volumes and environment docs/runners.md says.

No container engine runs here: the image is never built and the compose file never started;
this checks what can be checked without one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
DOC = (REPO / "docs" / "runners.md").read_text(encoding="utf-8")
RUNNERS = ("runner-1", "runner-2")


def _compose() -> dict[str, Any]:
    return dict(YAML(typ="safe").load((DEPLOY / "compose.yaml").read_text(encoding="utf-8")))


def _doc_table(heading: str) -> list[list[str]]:
    """The rows of the first table after ``heading`` in docs/runners.md, cells stripped."""
    part = DOC.split(heading, 1)[1]
    rows = []
    for line in part.splitlines():
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
        elif rows:
            break
    return [row for row in rows if not set(row[0]) <= {"-"}]  # past the header's rule


def _ticked(text: str) -> set[str]:
    return set(re.findall(r"`([^`]+)`", text))


def test_the_compose_file_runs_bees_cloud_on_postgresql_and_runners_sharing_run_folders(
) -> None:
    compose = _compose()
    services = compose["services"]
    assert sorted(services) == ["cloud", "db", "runner-1", "runner-2"]
    assert sorted(compose["volumes"]) == ["cloud-admin", "pgdata", "runner-1-home",
                                          "runner-2-home", "runs"]
    assert services["db"]["image"].startswith("postgres:")
    assert services["db"]["volumes"] == ["pgdata:/var/lib/postgresql/data"]
    cloud = services["cloud"]
    assert "bees cloud serve --db" in " ".join(cloud["entrypoint"])
    assert cloud["environment"]["BEES_CLOUD_DB"].startswith("postgresql+psycopg://bees:")
    assert cloud["environment"]["BEES_CLOUD_DB"].endswith("@db/bees")
    assert cloud["depends_on"] == ["db"]
    homes = set()
    for name in RUNNERS:
        runner = services[name]
        assert runner["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
        env = runner["environment"]
        assert sorted(env) == ["BEES_CLOUD_URL", "BEES_TOKEN", "BEES_WORKSPACE", "MAIL_TOKEN",
                               "POOL", "RUNS_DIR"]
        assert (env["POOL"], env["BEES_CLOUD_URL"], env["BEES_WORKSPACE"], env["RUNS_DIR"]) == (
            "build", "http://cloud:8765", "/workspace", "/runs")
        token_var = name.upper().replace("-", "_") + "_TOKEN"
        assert env["BEES_TOKEN"].startswith("${" + token_var + ":?")  # its own token
        volumes = runner["volumes"]
        assert "runs:/runs" in volumes  # the one shared volume of run folders
        home = f"{name}-home:/home/bees/bees-home"
        assert home in volumes  # its own home: its own machine id
        homes.add(home)
        assert any(v.endswith(":/workspace:ro") for v in volumes)
    assert len(homes) == len(RUNNERS)


def test_the_doc_names_what_the_compose_file_declares() -> None:
    compose = _compose()
    services = compose["services"]
    named = set().union(*(_ticked(row[0]) for row in _doc_table("| service | what it is |")))
    assert named == set(services)
    described = " ".join(row[1] for row in _doc_table("| service | what it is |"))
    assert _ticked(described) >= set(compose["volumes"])
    variables = {row[0].strip("`") for row in _doc_table("| variable | what |")}
    for name in RUNNERS:
        assert variables == set(services[name]["environment"])
    for token in ("RUNNER_1_TOKEN", "RUNNER_2_TOKEN", "WORKSPACE_DIR"):
        assert token in (DEPLOY / "compose.yaml").read_text() and token in DOC
    assert "docker compose -f deploy/compose.yaml up -d" in DOC
    assert "no container engine" in DOC


def test_the_runner_image_runs_bees_run_runner_pool_with_its_settings_from_the_environment(
) -> None:
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert lines[0].startswith("FROM python:3.11-slim")
    assert "RUN pip install --no-cache-dir '.[postgres]' && rm -rf /src" in lines
    assert lines[-1] == 'ENTRYPOINT ["sh", "-c", "exec bees run --runner \\"$POOL\\""]'
    for variable in ("POOL", "BEES_CLOUD_URL", "BEES_TOKEN", "BEES_WORKSPACE", "RUNS_DIR"):
        assert variable in text and variable in DOC

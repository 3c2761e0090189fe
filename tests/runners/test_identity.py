"""A runner identity (issue 27, point 1): ``bees cloud admin runner add NAME --pool POOL``
prints a token once; Bees Cloud keeps only its hash and knows the token as that runner of
that pool, signed in as the pool's runner identity."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import sqlalchemy as sa

from bees_cli.cloud.client import CloudClient
from bees_cli.cloud.server.storage import Storage
from bees_cli.cloud.server.tables import runners, tokens

from ..cloud.conftest import ServerProcess, Team
from ..conftest import BeesRunner

TOKEN = re.compile(r"^bees\.([0-9a-f]{16})\.([A-Za-z0-9_-]{43})$")


def test_the_cli_adds_a_runner_whose_token_is_shown_once_and_kept_hashed(
    bees: BeesRunner, bees_home: Path, server: ServerProcess, team: Team, admin: Storage
) -> None:
    file = str(server.admin_token_file)
    added = bees("cloud", "admin", "runner", "add", "runner-1", "--pool", "build", "--team",
                 team.name, "--server", server.url, "--admin-token-file", file)
    assert added.returncode == 0, added.stderr
    found = TOKEN.match(added.stdout.strip())
    assert found is not None
    assert added.stderr == (
        f"token for runner runner-1 of pool build in team {team.name} on server {server.url}"
        " (shown once; give it to the runner as BEES_TOKEN)\n")
    token = added.stdout.strip()
    with admin.engine.connect() as conn:
        row = conn.execute(sa.select(tokens).where(tokens.c.token_id == found.group(1))).one()
        runner = conn.execute(sa.select(runners).where(runners.c.token_id == found.group(1))
                              ).one()
    assert found.group(2) not in row.secret_sha256 and len(row.secret_sha256) == 64
    assert (runner.name, runner.pool, runner.retired_us) == ("runner-1", "build", None)
    with CloudClient(server.url, token, retries=0) as client:
        me = client.me()
    assert (me.person, me.team, me.runner, me.pool) == (
        "pool-build@runners.invalid", team.name, "runner-1", "build")
    # a person's answer carries no runner fields at all
    with httpx.Client(base_url=server.url) as http:
        person = http.get("/v1/me", headers={"authorization": f"Bearer {team.tokens['maya']}"})
    assert sorted(person.json()) == ["person", "server_time", "team"]
    again = bees("cloud", "admin", "runner", "add", "runner-1", "--pool", "other", "--team",
                 team.name, "--server", server.url, "--admin-token-file", file, "--json")
    assert again.returncode != 0
    assert f"team {team.name} has a runner named 'runner-1' already" in again.stdout


def test_two_runners_of_a_pool_share_its_identity_but_not_their_tokens(
    team: Team, admin: Storage, server: ServerProcess
) -> None:
    one = admin.add_runner("r-a", "ops", team.name)
    two = admin.add_runner("r-b", "ops", team.name)
    assert one != two
    with CloudClient(server.url, one, retries=0) as a, CloudClient(server.url, two,
                                                                    retries=0) as b:
        me_a, me_b = a.me(), b.me()
    assert (me_a.person, me_a.runner) == ("pool-ops@runners.invalid", "r-a")
    assert (me_b.person, me_b.runner) == ("pool-ops@runners.invalid", "r-b")

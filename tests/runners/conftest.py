"""The runners' tests reuse the Bees Cloud fixtures (real servers on SQLite and PostgreSQL)."""

from tests.cloud.conftest import (  # noqa: F401 - fixtures
    admin,
    db_url,
    postgres_server,
    server,
    server_factory,
    team,
)

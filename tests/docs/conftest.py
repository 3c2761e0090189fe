"""The docs' commands may need the Bees Cloud tests' PostgreSQL (``$CLOUD_DB``)."""

from tests.cloud.conftest import postgres_url as postgres_url  # noqa: F401  (a fixture)

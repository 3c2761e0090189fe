"""The docs' commands may need the Bees Cloud tests' PostgreSQL (``$CLOUD_DB``)."""

from tests.cloud.conftest import postgres_server as postgres_server  # noqa: F401  (a fixture)
from tests.cloud.conftest import postgres_url as postgres_url  # noqa: F401  (a fixture)

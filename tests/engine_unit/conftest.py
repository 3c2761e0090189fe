"""Engine code tested without a Temporal server (models, activities in an ``ActivityEnvironment``,
the snapshot store, the database pin): part of the fast run, unlike ``tests/engine/``."""

from tests.engine.conftest import record, space  # noqa: F401 - the same fixtures

"""The Bees Cloud server: ASGI app (``app``), storage (``storage``) and Alembic migrations."""

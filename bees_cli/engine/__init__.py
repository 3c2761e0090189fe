"""Temporal adapters: dev server, worker, workflows (pure), activities, client gateway."""

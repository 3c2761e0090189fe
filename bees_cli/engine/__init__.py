"""The engine: an embedded Temporal dev server, the worker, workflows (pure) and activities."""

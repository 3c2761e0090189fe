"""Where this computer keeps its state; functions, never module constants, so tests can redirect.

Layout (``BEES_HOME`` set)::

    $BEES_HOME/state/     machine.json, links.json, cloud.json (0600)
    $BEES_HOME/data/      temporal.db, record.db, runs/ (run folders), logs

Without ``BEES_HOME`` the two folders come from platformdirs (``user_config_dir`` for
state, ``user_data_dir`` for data).
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "bees"


def bees_home() -> Path | None:
    """Return the ``BEES_HOME`` override as an absolute path, or None when unset or empty."""
    value = os.environ.get("BEES_HOME", "").strip()
    if not value:
        return None
    return Path(value).expanduser().resolve()


def state_dir(home: Path | None = None) -> Path:
    """Return (creating it, mode 0700) the folder of this computer's small state files.

    Args:
        home: the computer's home (its ``BEES_HOME``); default: ``BEES_HOME`` if set.
    """
    home = home or bees_home()
    if home is not None:
        path = home / "state"
    else:
        import platformdirs

        path = Path(platformdirs.user_config_dir(APP_NAME))
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def data_dir(home: Path | None = None) -> Path:
    """Return (creating it) the folder of this computer's databases, logs and run folders.

    Args:
        home: the computer's home (its ``BEES_HOME``); default: ``BEES_HOME`` if set.
    """
    home = home or bees_home()
    if home is not None:
        path = home / "data"
    else:
        import platformdirs

        path = Path(platformdirs.user_data_dir(APP_NAME))
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def default_runs_dir(home: Path | None = None) -> Path:
    """Return (creating it) the folder that holds run folders when the workspace names none."""
    path = data_dir(home) / "runs"
    path.mkdir(parents=True, exist_ok=True)
    return path

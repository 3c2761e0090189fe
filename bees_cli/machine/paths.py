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

from bees_cli.errors import UserError

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


def run_folder_of(root: Path, item_id: str) -> Path:
    """Return ``ROOT/ITEM``, the run folder of item ``item_id`` under the folder of run
    folders ``root`` (this computer's runs folder, or the workspace's linked ``run_folder``).

    Why: an id comes from people and from other computers; checked here as well as where a
    command reads it, no id can name a folder outside ``root`` (``..``, ``/``, NUL).

    Raises:
        UserError: ``item_id`` is not a whole item id (:func:`bees_cli.ids.check_item_id`).
    """
    from bees_cli.ids import check_item_id

    if check_item_id(item_id, prefix=False) != item_id:
        raise UserError(f"not an item id as Bees writes it: {item_id!r} (upper case, no spaces)")
    return root / item_id

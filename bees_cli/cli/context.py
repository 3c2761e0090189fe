"""The CLI edge: the one place a command loads this computer and builds its :class:`Bees`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bees_cli.usecases import Bees


def bees_here(say: Callable[[str], None] | None = None) -> Bees:
    """Return the application for this computer (``BEES_HOME`` or platformdirs); use cases
    talk on stderr, through ``say`` when given (``bees run``: timestamped lines).

    Raises:
        StateFileInvalid, UserError: a state file of this computer is not valid.
    """
    from bees_cli.cli.output import say as plain
    from bees_cli.machine.computer import Computer
    from bees_cli.usecases import Bees

    return Bees(Computer.load(), say=say or plain)

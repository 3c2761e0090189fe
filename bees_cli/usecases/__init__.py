"""The application layer: typed async use cases over an explicit computer (:class:`Bees`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bees_cli.usecases.bees import Bees

__all__ = ["Bees"]


def __getattr__(name: str) -> Any:
    """``Bees``, imported at its first use: a command that only reads (``bees status``)
    imports a use case module without :class:`Bees`, its async record and asyncio (issue
    29, point 3)."""
    if name == "Bees":
        from bees_cli.usecases.bees import Bees

        return Bees
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

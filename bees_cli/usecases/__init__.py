"""The application layer: typed async use cases over an explicit computer (:class:`Bees`)."""

from bees_cli.usecases.bees import Bees

__all__ = ["Bees"]

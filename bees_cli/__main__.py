"""Entry point for ``python -m bees_cli``."""

from bees_cli.cli.entry import run

run()

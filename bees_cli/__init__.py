"""Bees: multi-stage agent work on people's own computers, with no central dispatcher."""

__version__ = "0.1.0"

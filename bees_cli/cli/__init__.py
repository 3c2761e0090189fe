"""The ``bees`` command: thin typer layers that parse, call the library, render and exit."""

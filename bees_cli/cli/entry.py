"""The ``bees`` console entry point: the root's ``--help`` and ``--version``, and the usual lines
of ``bees status``, ``bees validate``, ``bees item show`` and ``bees checkpoint verify``
(:mod:`bees_cli.cli.quick`), answered without importing typer; anything else goes to the typer
app (:mod:`bees_cli.cli.main`)."""

from __future__ import annotations

import sys


def run() -> None:
    """Run ``bees`` with ``sys.argv``: ``bees --help``/``-h`` (or ``bees help``) prints the
    root's help, ``bees help TOPIC`` a topic (:mod:`bees_cli.cli.topics`),
    ``bees --version`` the version at the cost of a bare interpreter (issue 16, point 4:
    ``--help`` within 3× ``python -c pass``), ``status``, ``validate``, ``item show`` and
    ``checkpoint verify`` go through :func:`bees_cli.cli.quick.run` when it takes their line
    (issue 29, point 3); every other command line
    runs the typer app. A reader of its output that went away ends any of them quietly
    with 141 (:func:`bees_cli.cli.pipes.closed_pipe_ends_quietly`)."""
    try:
        _run(sys.argv[1:])
        sys.stdout.flush()
    except BrokenPipeError:  # the root's help or version, or click's own usage error
        from bees_cli.cli.pipes import leave_closed_pipe

        leave_closed_pipe()


def _run(args: list[str]) -> None:
    if args in (["--help"], ["-h"]):
        from bees_cli.cli.roothelp import render

        sys.stdout.write(render() + "\n")
        return
    if args[:1] == ["help"] and len(args) <= 2:
        from bees_cli.cli.topics import TOPICS

        if args[1:] == [] or args[1] in TOPICS:
            from bees_cli.cli.roothelp import render, width
            from bees_cli.cli.topics import render as render_topic

            sys.stdout.write((render_topic(args[1], width()) if args[1:] else render()) + "\n")
            return
    if args == ["--version"]:
        from bees_cli import __version__

        sys.stdout.write(f"bees {__version__}\n")
        return
    if args and args[0] in ("status", "validate", "item", "checkpoint"):
        from bees_cli.cli.quick import run as run_quick

        code = run_quick(args)
        if code is not None:
            raise SystemExit(code)
    from bees_cli.cli.main import run as run_app

    run_app()

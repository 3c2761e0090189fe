"""The Bees app: a local web page over the same use cases as the CLI (issue 17).

:func:`~bees_cli.app.server.create_app` builds it from an explicit
:class:`~bees_cli.usecases.bees.Bees` and a :class:`~bees_cli.app.security.Guard`;
``bees app`` (:mod:`bees_cli.cli.app`) serves it on loopback.
"""

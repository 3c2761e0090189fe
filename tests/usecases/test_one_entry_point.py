"""Each use case has one entry point, its :class:`Bees` method (issue 24, point 5): the
function that carries it out is private to its module, so the CLI, the app, the worker and
the tests all go through the same door."""

from __future__ import annotations

import ast
from pathlib import Path

import bees_cli.usecases.bees

BEES = Path(bees_cli.usecases.bees.__file__)

NOT_YET: dict[str, str] = {}
"""Use cases whose module function is still public while another change is under way."""


def _delegates() -> dict[str, list[str]]:
    """Return each public async method of ``Bees`` → the use-case functions it imports."""
    tree = ast.parse(BEES.read_text("utf-8"))
    [bees] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Bees"]
    found = {}
    for method in bees.body:
        if isinstance(method, ast.AsyncFunctionDef) and not method.name.startswith("_"):
            found[method.name] = [alias.name for node in ast.walk(method)
                                  if isinstance(node, ast.ImportFrom)
                                  and (node.module or "").startswith("bees_cli.usecases.")
                                  for alias in node.names]
    return found


def test_every_bees_use_case_is_carried_out_by_a_private_function() -> None:
    delegates = _delegates()
    assert len(delegates) >= 19
    public = {method: names for method, names in delegates.items()
              if any(not name.startswith("_") and name not in NOT_YET for name in names)}
    assert public == {"engine": ["NOT_UP"]}


def test_an_add_on_action_has_its_bees_methods_as_its_doors() -> None:
    """``bees action`` and a model agent's tool call enter through ``Bees.action`` and
    ``Bees.call_action``; the module functions behind them are private."""
    from bees_cli.usecases import actions

    delegates = _delegates()
    assert (delegates["action"], delegates["call_action"]) == (["_run_action"], ["_call_action"])
    assert [name for name in ("run_action", "call_action") if hasattr(actions, name)] == []

"""One email rule (issue 15, point 8): the workspace, this computer and Bees Cloud agree."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from bees_cli.cloud import wire
from bees_cli.errors import UserError
from bees_cli.ids import check_email
from bees_cli.machine.identity import set_identity
from bees_cli.workspace.models import Schedule
from tests.support.examples import examples

REPO = Path(__file__).resolve().parents[1]
SCHEDULE = {"process": "weekly", "cron": "0 9 * * 1", "timezone": "UTC"}
OWNER_SCHEMA = json.loads((REPO / "schemas" / "schedule.json").read_text())["properties"]["owner"]

CASES = {
    "maya@example.com": True,
    "Maya.Lee+bees@example.co.uk": True,
    "ü@bücher.de": True,
    "maya/x@example.com": False,  # the workspace once took it; Bees Cloud never did
    "maya\\x@example.com": False,
    "ma ya@example.com": False,
    "maya@example.com\n": False,
    "maya\u200b@example.com": False,
    "maya\x00@example.com": False,
    "a@b@c": False,
    "@example.com": False,
    "maya@": False,
    "a" * 100 + "@x": True,
    "a" * 101 + "@x": False,
    "a@" + "x" * 201: False,
}


def _workspace(text: str) -> bool:
    try:
        Schedule.model_validate({**SCHEDULE, "owner": text})
    except ValidationError:
        return False
    return True


def _cloud(text: str) -> bool:
    try:
        wire.check_email(text)
    except ValueError:
        return False
    return True


def _shared(text: str) -> bool:
    try:
        check_email(text)
    except ValueError:
        return False
    return True


def _schema(text: str) -> bool:
    """The JSON Schema's answer, as an editor (ECMAScript ``$``: the end) gives it; Python's
    ``jsonschema`` searches with ``re``, whose ``$`` also matches before a final newline."""
    if text.endswith("\n"):
        text = text[:-1] + " "  # what an ECMAScript ``$`` sees: a character before the end
    try:
        jsonschema.validate(text, OWNER_SCHEMA)
    except jsonschema.ValidationError:
        return False
    return True


@pytest.mark.parametrize(("text", "valid"), CASES.items())
def test_every_check_gives_the_same_answer(text: str, valid: bool) -> None:
    assert (_shared(text), _workspace(text), _cloud(text), _schema(text)) == (valid,) * 4


def test_this_computers_person_follows_the_same_rule(bees_home: Path) -> None:
    for text, valid in CASES.items():
        if valid:
            assert set_identity(person=text).person == text
        else:
            with pytest.raises(UserError, match="^not an email address: "):
                set_identity(person=text)


@settings(max_examples=examples(300), deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=20).map(lambda t: t + "@x")
       | st.text(max_size=30))
def test_the_checks_agree_on_any_text(text: str) -> None:
    answer = _shared(text)
    assert (_workspace(text), _cloud(text), _schema(text)) == (answer,) * 3
    if answer:
        assert wire.check_email(text) == text.lower()

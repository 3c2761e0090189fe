"""An add-on action's input is checked against its declared schema (``format: email`` by
the one shared email rule) before it is journaled, held or run."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bees_cli.errors import UserError
from bees_cli.usecases.action_input import check_input

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "weekly-report-model"
SCHEMA = yaml.safe_load((EXAMPLE / "addons" / "mail.yaml").read_text())["actions"]["send"]["input"]
MAIL = {"to": "team@example.com"}


def test_the_example_s_mail_takes_an_address() -> None:
    check_input("mail.send", SCHEMA, MAIL)


def test_a_recipient_that_is_no_address_is_refused_with_the_field_named() -> None:
    bad = {**MAIL, "to": "The team at [x][y] at [z]"}
    with pytest.raises(UserError) as caught:
        check_input("mail.send", SCHEMA, bad)
    assert caught.value.message == ("mail.send: input \"to\" is not an email address: "
                                    "'The team at [x][y] at [z]'")
    assert caught.value.exit_code == 2


def test_the_format_is_the_shared_email_rule() -> None:
    schema = {"type": "object", "properties": {"to": {"type": "string", "format": "email"}}}
    check_input("mail.send", schema, {"to": "Maya.O'Neil+x@Example.COM"})
    with pytest.raises(UserError, match="is not an email address: 'maya/x@example.com'"):
        check_input("mail.send", schema, {"to": "maya/x@example.com"})


def test_a_missing_field_is_refused_and_no_schema_takes_anything() -> None:
    with pytest.raises(UserError) as caught:
        check_input("mail.send", SCHEMA, {})
    assert caught.value.message == ("mail.send: input does not follow the action's schema: "
                                    "'to' is a required property")
    check_input("mail.send", None, {"anything": [1]})

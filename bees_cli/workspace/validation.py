"""Validate one document against its model; turn pydantic's errors into human problems."""

from __future__ import annotations

import re
import types
import typing
from typing import Any, Union

from pydantic import BaseModel, ValidationError

from bees_cli.suggest import did_you_mean
from bees_cli.workspace import models
from bees_cli.workspace.problems import Problem, field_path
from bees_cli.workspace.yamlio import Document, describe

PATTERN_MESSAGES: dict[str, str] = {
    models.NAME_PATTERN: "{value} is not a valid name: use letters, digits, '-' and '_', "
    "start with a letter or digit, at most 64 characters",
    models.TOOL_PATTERN: "expected an add-on action as ADDON.ACTION, got {value}",
    models.ENV_NAME_PATTERN: "expected the name of an environment variable (e.g. API_KEY), "
    "got {value}",
    models.URL_PATTERN: "expected an http:// or https:// URL, got {value}",
    models.EMAIL_PATTERN: "expected a person's email address, got {value}",
    models.TIME_PATTERN: "expected a time as H:MM (24-hour clock), got {value}",
}
"""Message for each pattern of the models (``{value}`` is the offending value)."""

_RUNNER_KEYS = ("command", "env", "model")
_QUOTED = re.compile(r"'([^']*)'")


def validate(model: type[models.Strict], document: Document, rel: str) -> tuple[Any, list[Problem]]:
    """Validate ``document.data`` as ``model``.

    Returns:
        ``(instance, [])`` when valid, else ``(None, problems)`` with one problem per
        pydantic error, positioned with the document's positions and written for people.
    """
    try:
        return model.model_validate(document.data), []
    except ValidationError as error:
        errors = _drop_implied_missing(model, error.errors(include_url=False))
        problems = [_problem(model, document, rel, item) for item in errors]
        return None, sorted(set(problems))


def _drop_implied_missing(model: type[BaseModel], errors: list[Any]) -> list[Any]:
    """Leave out "missing 'process'" when the same mapping has "unknown key 'procss'"."""
    meant: set[tuple[Any, ...]] = set()
    for error in errors:
        if error["type"] == "extra_forbidden":
            loc = tuple(error["loc"])
            allowed = _fields_at(model, _strip(loc[:-1]))
            guess = did_you_mean(str(loc[-1]), allowed)
            if guess:
                meant.add((*loc[:-1], guess.split("'")[1]))
    return [e for e in errors if not (e["type"] == "missing" and tuple(e["loc"]) in meant)]


def _strip(loc: tuple[Any, ...]) -> tuple[str | int, ...]:
    return tuple(part for part in loc
                 if part not in models.RUNNER_TAGS and part not in models.CHECK_TAGS)


def _problem(model: type[BaseModel], document: Document, rel: str, error: Any) -> Problem:
    kind: str = error["type"]
    loc = _strip(tuple(error["loc"]))
    on_key = bool(loc) and loc[-1] == "[key]"
    if on_key:
        loc = loc[:-1]
    path: tuple[str | int, ...] = tuple(loc)
    positions = document.positions
    if kind == "missing":
        line, column = positions.value(path[:-1])
    elif kind == "extra_forbidden" or on_key:
        line, column = positions.key(path)
    else:
        line, column = positions.value(path)
    if kind == "runner_kind" and isinstance(error.get("input"), dict):
        for key in error["input"]:
            guess = did_you_mean(str(key), _RUNNER_KEYS)
            if guess and key not in _RUNNER_KEYS:
                line, column = positions.key((*path, key))
                message = f"unknown key '{key}'{guess}"
                return Problem(rel, line, column, field_path((*path, key)), message)
    message = _message(model, kind, path, error, on_key)
    return Problem(rel, line, column, field_path(path), message)


def _message(
    model: type[BaseModel], kind: str, path: tuple[str | int, ...], error: Any, on_key: bool
) -> str:
    value = path[-1] if on_key else error.get("input")
    shown = describe(value)
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        key = str(path[-1])
        allowed = _fields_at(model, path[:-1])
        return f"unknown key '{key}'{did_you_mean(key, allowed)}"
    if kind == "missing":
        return f"missing required key '{path[-1]}'"
    if kind == "bool_type":
        return f"expected true or false, got {shown}"
    if kind == "string_type":
        quote = " (put it in quotes if you mean text)" if _is_scalar(value) else ""
        return f"expected text, got {shown}{quote}"
    if kind in ("int_type", "int_from_float"):
        return f"expected a whole number, got {shown}"
    if kind == "list_type":
        return f"expected a list, got {shown}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"expected a mapping of keys, got {shown}"
    if kind == "literal_error":
        choices = _QUOTED.findall(str(ctx.get("expected", "")))
        listed = ", ".join(choices)
        return f"expected one of {listed}, got {shown}{did_you_mean(str(value), choices)}"
    if kind == "string_pattern_mismatch":
        template = PATTERN_MESSAGES.get(str(ctx.get("pattern")), "{value} has the wrong form")
        return template.format(value=shown)
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "too_short":
        minimum = ctx.get("min_length", 1)
        noun = "item" if minimum == 1 else "items"
        return f"needs at least {minimum} {noun}"
    if kind in ("greater_than_equal", "greater_than"):
        bound = ctx.get("ge", ctx.get("gt"))
        return f"must be at least {bound}, got {shown}"
    if kind in ("value_error", "assertion_error"):
        return str(ctx.get("error", error["msg"]))
    return str(error["msg"])


def _is_scalar(value: Any) -> bool:
    return value is not None and not isinstance(value, dict | list)


def _fields_at(model: type[BaseModel], path: tuple[str | int, ...]) -> list[str]:
    """Field names of the model found at ``path`` inside ``model`` (empty if none)."""
    current: Any = model
    for part in path:
        current = _step(current, part)
        if current is None:
            return []
    names: list[str] = []
    for option in _options(current):
        if isinstance(option, type) and issubclass(option, BaseModel):
            names += [name for name in option.model_fields if name not in names]
    return names


def _options(annotation: Any) -> list[Any]:
    """Unwrap ``Annotated``/``Optional``/unions into the plain types they allow."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _options(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        found: list[Any] = []
        for arg in typing.get_args(annotation):
            found += _options(arg)
        return found
    return [annotation]


def _step(annotation: Any, part: str | int) -> Any:
    """The annotation one level down from ``annotation`` along ``part``."""
    for option in _options(annotation):
        if isinstance(option, type) and issubclass(option, BaseModel):
            if isinstance(part, str) and part in option.model_fields:
                return option.model_fields[part].annotation
            continue
        origin = typing.get_origin(option)
        args = typing.get_args(option)
        if origin is list and isinstance(part, int) and args:
            return args[0]
        if origin is dict and isinstance(part, str) and len(args) == 2:
            return args[1]
    return None

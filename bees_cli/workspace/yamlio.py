"""Read one workspace YAML file safely: YAML 1.2, positions kept, size and alias limits.

Why: ruamel's round-trip loader keeps the line and column of every key and value, and
reads YAML 1.2 (``no`` and ``on`` stay text, ``9:00`` is not a number). The result is
turned into plain ``dict``/``list``/``str`` data plus a table of positions, so pydantic
sees ordinary Python values and every error can point at a line.
"""

from __future__ import annotations

import datetime
import functools
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bees_cli.workspace.problems import Problem

MAX_FILE_BYTES = 1024 * 1024
"""Largest workspace file read (1 MiB); a bigger one is an error, not a slow load."""

MAX_NODES = 100_000
"""Most values a file may hold once aliases are expanded (stops "billion laughs")."""

MAX_DEPTH = 50
"""Deepest nesting of mappings and lists a file may have."""

Path_ = tuple[str | int, ...]
Pos = tuple[int, int]


@dataclass
class Positions:
    """1-based (line, column) of each key and value of a document, by path from the root."""

    keys: dict[Path_, Pos] = field(default_factory=dict)
    values: dict[Path_, Pos] = field(default_factory=dict)

    def value(self, path: Path_) -> Pos:
        """Position of the value at ``path``, or of its nearest ancestor that has one."""
        for end in range(len(path), -1, -1):
            if path[:end] in self.values:
                return self.values[path[:end]]
        return (1, 1)

    def key(self, path: Path_) -> Pos:
        """Position of the key at ``path`` (the item itself in a list), else :meth:`value`."""
        return self.keys.get(path) or self.value(path)


@dataclass
class Document:
    """A parsed file: plain data (``dict``/``list``/scalars) and where each part was written."""

    data: Any
    positions: Positions


KEY_NOT_PLAIN = "a key must be plain text, not a mapping or list"


class _Limit(Exception):
    """The document is too big or too deep once aliases are expanded."""

    def __init__(self, message: str, pos: Pos) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


_DIRECTIVE = re.compile(r"^%YAML[ \t]+(\S+)", re.MULTILINE)
_DUPLICATE = re.compile(r'found duplicate key "(.*)" with value')


def read_document(path: Path, rel: str) -> Document | Problem:
    """Read ``path`` (shown as ``rel`` in problems) into a :class:`Document`.

    Returns:
        The document, whose ``data`` is a ``dict`` (the top of every workspace file is a
        mapping), or the one :class:`Problem` that stops the file from being read: too
        big, not UTF-8, a ``%YAML`` directive other than 1.2, a YAML syntax error (tabs,
        duplicate keys…), empty, not a mapping, too many values after aliases, too deep.
    """
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return Problem(rel, 1, 1, "", f"file is too big: {size} bytes (the limit is 1 MiB)")
        raw = path.read_bytes()
    except OSError as error:
        return Problem(rel, 1, 1, "", f"cannot read the file: {error.strerror or error}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        return Problem(
            rel,
            line,
            column,
            "",
            f"not UTF-8: byte 0x{raw[error.start]:02x} cannot be read; save the file as UTF-8",
        )
    document = _document(text.removeprefix("\ufeff"), rel, (MAX_NODES, MAX_DEPTH))
    if isinstance(document, Problem):
        return document
    return Document(_copy(document.data),
                    Positions(dict(document.positions.keys), dict(document.positions.values)))


@functools.lru_cache(maxsize=64)
def _document(text: str, rel: str, limits: tuple[int, int]) -> Document | Problem:
    """The document (or the problem) of a file's ``text``, computed once per text, name and
    ``limits`` (the :data:`MAX_NODES` and :data:`MAX_DEPTH` it was read under).

    Why: parsing is most of a load's time, and a process reads the same files again:
    ``bees run`` reloads its workspace when one file changes (the others parse as before),
    ``bees doctor`` loads it twice, tests load many workspaces that share most files. The
    result depends on nothing but the arguments; each caller gets its own copy of the
    data (:func:`_copy`), so a caller that changes it changes no other's.
    """
    directive = _DIRECTIVE.search(text)
    if directive and directive.group(1) != "1.2":
        line = text.count("\n", 0, directive.start()) + 1
        return Problem(
            rel,
            line,
            1,
            "",
            f"only YAML 1.2 is read; remove the '%YAML {directive.group(1)}' line",
        )
    parsed = _parse(text, rel)
    if isinstance(parsed, Problem):
        return parsed
    if parsed is None:
        return Problem(rel, 1, 1, "", "file is empty; expected a mapping of keys")
    if not isinstance(parsed, dict):
        line, column = _node_pos(parsed)
        return Problem(
            rel,
            line,
            column,
            "",
            "expected a mapping of keys at the top of the file, "
            f"got {describe(_plain_scalar(parsed))}",
        )
    positions = Positions()
    positions.values[()] = _node_pos(parsed)
    try:
        data = _walk(parsed, (), positions, [0], set())
    except _Limit as limit:
        return Problem(rel, limit.pos[0], limit.pos[1], "", limit.message)
    return Document(data, positions)


def _copy(value: Any) -> Any:
    """A copy of plain data: new dicts and lists all the way down (scalars are shared)."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def _parse(text: str, rel: str) -> Any:
    """Parse with ruamel (round trip, YAML 1.2, duplicate keys refused)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import DuplicateKeyError
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    yaml = YAML(typ="rt", pure=True)
    yaml.allow_duplicate_keys = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return yaml.load(text)
    except DuplicateKeyError as error:
        line, column = _mark(error.problem_mark)
        found = _DUPLICATE.search(error.problem or "")
        key = found.group(1) if found else "?"
        return Problem(
            rel, line, column, "", f"duplicate key '{key}'; a key may appear once in a mapping"
        )
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line, column = _mark(mark)
        problem = error.problem or error.context or "invalid YAML"
        if "'\\t'" in problem:
            return Problem(
                rel, line, column, "", "tab character in indentation; indent with spaces"
            )
        if "another document" in problem:
            return Problem(
                rel, line, column, "", "more than one YAML document; a file holds one object"
            )
        if error.context and error.context_mark is not None and error.problem:
            problem += f" ({error.context} from line {error.context_mark.line + 1})"
        return Problem(rel, line, column, "", f"invalid YAML: {problem}")
    except YAMLError as error:
        return Problem(rel, 1, 1, "", f"invalid YAML: {error}")
    except TypeError:  # ruamel cannot hash a mapping or list used as a key (`? {a: 1}`)
        return Problem(rel, 1, 1, "", KEY_NOT_PLAIN)
    except RecursionError:
        return Problem(rel, 1, 1, "", f"nesting is too deep (the limit is {MAX_DEPTH} levels)")


def _mark(mark: Any) -> Pos:
    if mark is None:
        return (1, 1)
    return (mark.line + 1, mark.column + 1)


def _node_pos(node: Any) -> Pos:
    lc = getattr(node, "lc", None)
    if lc is None or lc.line is None:
        return (1, 1)
    return (lc.line + 1, lc.col + 1)


def _walk(node: Any, path: Path_, positions: Positions, count: list[int], active: set[int]) -> Any:
    """Copy ``node`` into plain Python values, recording positions; enforce the limits."""
    count[0] += 1
    if count[0] > MAX_NODES:
        raise _Limit(
            f"too many values (more than {MAX_NODES} once aliases are expanded); "
            "is an alias repeated too often?",
            (1, 1),
        )
    if len(path) > MAX_DEPTH:
        raise _Limit(
            f"nesting is too deep (the limit is {MAX_DEPTH} levels)", positions.value(path)
        )
    if isinstance(node, dict | list):
        if id(node) in active:
            raise _Limit("an alias refers to the value that contains it", positions.value(path))
        active.add(id(node))
        try:
            return _walk_container(node, path, positions, count, active)
        finally:
            active.discard(id(node))
    return _plain_scalar(node)


def _walk_container(
    node: Any, path: Path_, positions: Positions, count: list[int], active: set[int]
) -> Any:
    here = _node_pos(node)
    lc = getattr(node, "lc", None)
    if isinstance(node, dict):
        out: dict[Any, Any] = {}
        for raw_key, value in node.items():
            if isinstance(raw_key, tuple | list | Mapping):  # `? [a, b]`, `? {a: 1}`
                raise _Limit(KEY_NOT_PLAIN, _lc_pos(lc, "key", raw_key, here))
            key = _plain_key(raw_key)
            child = (*path, key)
            positions.keys[child] = _lc_pos(lc, "key", raw_key, here)
            positions.values[child] = _lc_pos(lc, "value", raw_key, here)
            out[key] = _walk(value, child, positions, count, active)
        return out
    items: list[Any] = []
    for index, value in enumerate(node):
        child = (*path, index)
        positions.values[child] = _lc_pos(lc, "item", index, here)
        items.append(_walk(value, child, positions, count, active))
    return items


def _lc_pos(lc: Any, which: str, key: Any, fallback: Pos) -> Pos:
    try:
        line, column = getattr(lc, which)(key)
    except (AttributeError, KeyError, IndexError, TypeError):
        return fallback
    return (line + 1, column + 1)


def _plain_key(key: Any) -> Any:
    if isinstance(key, bool) or key is None:
        return {True: "true", False: "false", None: "null"}[key]
    if isinstance(key, str | int | float):
        return _plain_scalar(key)
    return str(key)


def _plain_scalar(value: Any) -> Any:
    """ruamel's scalar subclasses → ``str``/``int``/``float``/``bool``; dates kept as dates."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, datetime.datetime):
        return datetime.datetime.fromisoformat(value.isoformat())
    return value


def describe(value: Any) -> str:
    """Show a YAML value in a message: ``'yes'``, ``12``, ``true``, ``a list``, ``an empty value``.

    Returns:
        A short phrase for "got …" messages.
    """
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return repr(shown) if "'" not in shown else '"' + shown + '"'
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, datetime.datetime):
        return f"a date and time ({value.isoformat()})"
    if isinstance(value, datetime.date):
        return f"a date ({value.isoformat()})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__

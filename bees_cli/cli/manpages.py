"""Man pages in roff, made from the click command tree: ``bees.1`` and one page per group.

``bees.1`` holds the root options and every top-level command; each command group (``bees
item``, ``bees cloud``…) has its page ``bees-GROUP.1`` with all its commands, nested groups
included (``bees cloud team add``). Text comes from the commands' help (their docstrings) and
their parameters' help records, so a page cannot say more or less than ``--help``.

Why written here rather than with click-man: that tool writes a page per leaf command and
stamps each with the day it ran, so a test comparing the shipped pages could not pass on
another day (STYLE.md, habit 6).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from typer.core import TyperArgument, TyperGroup

if TYPE_CHECKING:
    from typer import _click as click  # typer vendors click: its command tree is made of these

SECTION = "1"
MANUAL = "Bees Manual"

EXIT_STATUS = (
    ("0", "ok."),
    ("1", "failure (including not found and I/O errors)."),
    ("2", "bad usage or an invalid workspace."),
    ("3", "refused: not the owner, key taken, checkpoint invalid, wrong state."),
    ("130", "interrupted (Ctrl-C)."),
    ("141", "the reader of the output went away (bees item show ITEM | head -1): the "
            "command stopped there, quietly."),
)
"""The exit codes (DESIGN.md, Interfaces; :mod:`bees_cli.cli.errors`)."""

ENVIRONMENT = (
    ("BEES_HOME", "This computer's home: its state and data folders live under it "
                  "(default: the platform's folders). Two homes are two computers."),
    ("BEES_DEBUG", "Set to 1 to keep the Python tracebacks of the engine's warnings."),
)
"""The environment variables every command reads."""


@dataclass(frozen=True)
class Node:
    """A command of the tree with the context it was reached in."""

    command: click.Command
    ctx: click.Context

    @property
    def path(self) -> str:
        """The command as typed, e.g. ``bees item create``."""
        return self.ctx.command_path

    def children(self) -> list[Node]:
        """The visible subcommands of a group, in registration order (none for a leaf)."""
        if not isinstance(self.command, TyperGroup):
            return []
        nodes = []
        for name in self.command.list_commands(self.ctx):
            sub = self.command.get_command(self.ctx, name)
            if sub is None or sub.hidden:
                continue
            nodes.append(Node(sub, sub.context_class(sub, info_name=name, parent=self.ctx,
                                                     **sub.context_settings)))
        return nodes


def root_node(command: click.Command, prog: str) -> Node:
    """Return the tree's root, ``command`` named ``prog``."""
    return Node(command, command.context_class(command, info_name=prog,
                                               **command.context_settings))


def man_pages(command: click.Command, *, prog: str, version: str) -> dict[str, str]:
    """Return every page of the tree rooted at ``command``: file name -> roff text.

    Args:
        command: the root click command (``typer.main.get_command(app)``).
        prog: the program's name, ``bees``.
        version: the program's version, shown in each page's footer.

    Returns:
        ``{"bees.1": …, "bees-item.1": …, …}``, in the tree's order.
    """
    root = root_node(command, prog)
    groups = [n for n in root.children() if isinstance(n.command, TyperGroup)]
    pages = {f"{prog}.{SECTION}": _root_page(root, groups, version)}
    for group in groups:
        pages[f"{_page_name(group)}.{SECTION}"] = _group_page(root, group, version)
    return pages


def _page_name(node: Node) -> str:
    return node.path.replace(" ", "-")


def _header(name: str, version: str) -> list[str]:
    return [f'.TH {_quoted(name.upper())} {SECTION} "" {_quoted(version)} {_quoted(MANUAL)}',
            ".nh", ".ad l"]  # no hyphenation, ragged right: commands and paths stay whole


def _root_page(root: Node, groups: list[Node], version: str) -> str:
    prog = root.path
    lines = _header(prog, f"{prog} {version}")
    lines += [".SH NAME", f"{escape(prog)} \\- {escape(_first_line(root.command))}"]
    lines += [".SH SYNOPSIS", *_synopsis(root)]
    lines += [".SH DESCRIPTION", *_help(root.command.help)]
    lines += [".SH OPTIONS", *_params(root)]
    lines += [".SH COMMANDS"]
    for node in root.children():
        if not isinstance(node.command, TyperGroup):
            lines += _command(node)
    lines += [".SH \"COMMAND GROUPS\""]
    for group in groups:
        lines += [".TP", f"\\fB{escape(group.path)}\\fR",
                  f"{escape(_first_line(group.command))} "
                  f"See \\fB{escape(_page_name(group))}\\fR({SECTION})."]
    lines += [".SH \"EXIT STATUS\""]
    for code, meaning in EXIT_STATUS:
        lines += [".TP", f"\\fB{code}\\fR", escape(meaning)]
    lines += [".SH ENVIRONMENT"]
    for name, meaning in ENVIRONMENT:
        lines += [".TP", f"\\fB{escape(name)}\\fR", escape(meaning)]
    lines += [".SH \"SEE ALSO\"", _see_also(groups)]
    return "\n".join(lines) + "\n"


def _group_page(root: Node, group: Node, version: str) -> str:
    name = _page_name(group)
    lines = _header(name, f"{root.path} {version}")
    lines += [".SH NAME", f"{escape(name)} \\- {escape(_first_line(group.command))}"]
    lines += [".SH SYNOPSIS", *_synopsis(group)]
    lines += [".SH DESCRIPTION", *_help(group.command.help)]
    if getattr(group.command, "invoke_without_command", False):  # `bees approvals` lists
        lines += [".SH OPTIONS", *_params(group, with_help=False)]
    lines += [".SH COMMANDS"]
    pending = group.children()
    while pending:
        node = pending.pop(0)
        if isinstance(node.command, TyperGroup):
            pending = node.children() + pending
        else:
            lines += _command(node)
    others = [g for g in root.children()
              if isinstance(g.command, TyperGroup) and g.path != group.path]
    lines += [".SH \"SEE ALSO\"", f"\\fB{escape(root.path)}\\fR({SECTION}), "
              + _see_also(others)]
    return "\n".join(lines) + "\n"


def _see_also(groups: list[Node]) -> str:
    return ", ".join(f"\\fB{escape(_page_name(g))}\\fR({SECTION})" for g in groups)


def _first_line(command: click.Command) -> str:
    """The command's one-line summary: the first paragraph of its help, joined."""
    first = (command.help or "").split("\n\n")[0]
    return " ".join(first.split())


def _command(node: Node) -> list[str]:
    """A leaf command: its heading, synopsis, help and parameters."""
    lines = [f".SS {_quoted(node.path)}", *_synopsis(node)]
    lines += _help(node.command.help)
    lines += _params(node, with_help=False)
    return lines


def _synopsis(node: Node) -> list[str]:
    """``.B bees item create`` then ``[OPTIONS] PROCESS``, arguments in italics."""
    pieces = ["[\\fIOPTIONS\\fR]"]
    for param in node.command.get_params(node.ctx):
        if isinstance(param, TyperArgument):
            name = escape(_argument_name(param))
            piece = f"\\fI{name}\\fR" + ("..." if param.nargs == -1 else "")
            pieces.append(piece if param.required else f"[{piece}]")
    if isinstance(node.command, TyperGroup):
        command = "\\fICOMMAND\\fR [\\fIARGS\\fR]..."
        alone = getattr(node.command, "invoke_without_command", False)
        pieces.append(f"[{command}]" if alone else command)
    return [f".B {escape(node.path)}", " ".join(pieces)]


def _argument_name(param: TyperArgument) -> str:
    return param.metavar or (param.name or "").upper()


def _params(node: Node, *, with_help: bool = True) -> list[str]:
    """Each argument and option as a tagged paragraph: names in bold, value in italics
    (``-h, --help`` only when ``with_help``: the root page says it once)."""
    lines: list[str] = []
    for param in node.command.get_params(node.ctx):
        record = param.get_help_record(node.ctx)
        if record is None or (param.name == "help" and not with_help):
            continue
        if isinstance(param, TyperArgument):
            tag = f"\\fI{escape(_argument_name(param))}\\fR"
        else:
            tag = " ".join(f"\\fB{escape(word)}\\fR" if word.startswith("-")
                           else escape(word) if word in {",", "/"} else f"\\fI{escape(word)}\\fR"
                           for word in record[0].replace(",", " ,").split())
            tag = tag.replace(" ,", ",")
        lines += [".TP", tag, escape(" ".join(record[1].split()) or "-")]
    return lines


def _help(text: str | None) -> list[str]:
    """Help text as paragraphs: ``\\b`` ones kept line by line, ``Example:`` ones as a
    command block, the rest filled by roff."""
    lines: list[str] = []
    for paragraph in (text or "").strip().split("\n\n"):
        rows = paragraph.strip("\n").splitlines()
        if not rows:
            continue
        if rows[0].strip() == "\b":
            lines += [".PP", ".nf", *(escape(row) for row in rows[1:]), ".fi"]
        elif rows[0].startswith("Example:"):
            example = " ".join([rows[0][len("Example:"):], *rows[1:]]).strip()
            lines += [".PP", "Example:", ".RS 4", ".nf", escape(example), ".fi", ".RE"]
        else:
            lines += [".PP", *(escape(row.strip()) for row in rows)]
    return lines


def escape(text: str) -> str:
    """Return ``text`` safe as a roff text line: backslashes and hyphens escaped, other
    characters than ASCII as ``\\[uXXXX]``, a leading ``.`` or ``'`` guarded by ``\\&``."""
    out = []
    for char in text:
        if char == "\\":
            out.append("\\e")
        elif char == "-":
            out.append("\\-")
        elif ord(char) > 126:
            out.append(f"\\[u{ord(char):04X}]")
        else:
            out.append(char)
    escaped = "".join(out)
    return "\\&" + escaped if escaped[:1] in {".", "'"} else escaped


def _quoted(text: str) -> str:
    """A macro argument in double quotes (a quote inside as ``\\(dq``)."""
    return '"' + escape(text).replace('"', "\\(dq") + '"'

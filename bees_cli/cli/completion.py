"""``bees completion SHELL``: print the shell's completion script on stdout (as gh and kubectl)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from bees_cli.cli.commands import COMPLETE_VAR as COMPLETE_VAR

PROG = "bees"
"""The program name the scripts complete."""


class Shell(StrEnum):
    """The shells Bees prints a completion script for."""

    BASH = "bash"
    ZSH = "zsh"
    FISH = "fish"


ZSH_TAIL = "compdef _bees_completion bees"
ZSH_AUTOLOAD = """\
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  # autoloaded from a folder of $fpath as _bees: complete now
  _bees_completion "$@"
else
  compdef _bees_completion bees
fi"""


def completion_script(shell: Shell) -> str:
    """Return the completion script of ``shell``, ending with a newline.

    The scripts are typer's (the protocol its completion classes answer); the zsh one also
    works from a folder of ``$fpath`` (file ``_bees``), where zsh loads it on the first Tab.

    Args:
        shell: the shell to complete in.

    Returns:
        The script text: bash to ``source``, zsh for ``$fpath`` or ``source``, fish for
        ``~/.config/fish/completions/bees.fish``.
    """
    from typer.completion import get_completion_script

    script = get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell.value)
    if shell is Shell.ZSH and script.endswith(ZSH_TAIL):
        script = script[: -len(ZSH_TAIL)] + ZSH_AUTOLOAD
    return script + "\n"


def completion(
    shell: Annotated[Shell, typer.Argument(metavar="SHELL", help="bash, zsh or fish.",
                                           case_sensitive=False, show_default=False)],
) -> None:
    """Print the completion script of SHELL on stdout; nothing is installed or edited.

    \b
    bash: source <(bees completion bash)        (this shell only), or
          bees completion bash > ~/.local/share/bash-completion/completions/bees
    zsh:  bees completion zsh > ~/.zfunc/_bees  (with fpath=(~/.zfunc $fpath)
          before compinit in ~/.zshrc)
    fish: bees completion fish > ~/.config/fish/completions/bees.fish

    Example: source <(bees completion bash)
    """
    typer.echo(completion_script(shell), nl=False)


def register(app: typer.Typer) -> None:
    """Add ``completion`` to ``app`` and register typer's shell classes, which answer the
    scripts' requests (``_BEES_COMPLETE=complete_SHELL``) with plain values."""
    from typer.completion import completion_init

    completion_init()
    app.command("completion")(completion)

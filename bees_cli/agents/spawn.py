"""Start a stage's program so it dies with ``bees run``, without a ``preexec_fn`` (no fork).

A ``preexec_fn`` makes CPython fork the whole worker (~170 MB) instead of using vfork. On
Linux, with util-linux ``setpriv`` on ``PATH``, :func:`fast_launch` instead returns a
:class:`Launch`: an argv of small programs that set the same guarantees, which CPython
starts with vfork, and the environment to start it with::

    setpriv --pdeathsig KILL -- /bin/sh -c CHECK bees-agent PARENT ARGV...

1. ``setpriv`` sets ``PR_SET_PDEATHSIG`` to SIGKILL (as :func:`~bees_cli.agents.groups.
   die_with_parent` does between fork and exec); it is kept across the following exec;
2. ``sh`` (:data:`CHECK`) kills itself (SIGKILL) when its parent is no longer ``PARENT``:
   ``bees run`` died before the signal was set (the check :func:`die_with_parent` makes);
   it puts ``PWD`` back as the program's environment has it (``sh`` rewrites it to the
   working directory, or adds it) and execs ``ARGV``: the program keeps its ``argv[0]``,
   found on the program's ``PATH`` as CPython's ``subprocess`` finds it.

The environment travels as the process environment (``env=`` of ``subprocess``), never on
the command line: ``/proc/PID/cmdline`` is readable by every local user, ``/proc/PID/environ``
only by the owner, and the agent's environment may hold API keys. It holds the program's
environment plus :data:`PWD_CARRIER` (the program's ``PWD``, when it has one), which ``sh``
removes before the exec.

All of them are the same process (each execs the next), so the pid CPython returns is the
program's, the leader of its own session (``start_new_session``). The parent-death signal
fires when the thread that started the process exits, as with the ``preexec_fn``: the
caller's thread starts it in both cases.

``sh`` passes on what it imported from the environment except names it cannot hold, names it
owns (:data:`SHELL_OWNED`) and ``PWD``; an environment with such a name gets None here (the
caller starts the program the old way). This is checked once per process on the shell at
hand (:func:`_chain` runs the chain on a probe environment and compares byte for byte), so a
``/bin/sh`` that changes more (bash sets ``SHLVL`` and ``_``) turns the fast way off.

A program that would not start (not found, not executable, neither an ELF file of this
machine nor a ``#!`` script with such an interpreter) also gets None, so the caller starts it
the old way and reports the failure exactly as before (``cannot start …``): ``sh`` would
report it on stderr instead, and would run a file without ``#!`` as a shell script.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

SH = "/bin/sh"
"""The shell that makes the parent check (:data:`CHECK`)."""

PWD_CARRIER = "_BEES_SPAWN_PWD"
"""The variable that carries the program's ``PWD`` past ``sh``, which rewrites ``PWD``."""

CHECK = (
    '[ "$PPID" = "$1" ] || kill -KILL $$\n'
    f'if [ "${{{PWD_CARRIER}+set}}" ]; then PWD=${PWD_CARRIER}; export PWD; '
    f"unset {PWD_CARRIER}; else unset PWD; fi\n"
    'shift; exec "$@"'
)
"""The ``sh`` step: die like :func:`~bees_cli.agents.groups.die_with_parent` when the parent
died before ``setpriv`` set the signal, put ``PWD`` back, exec the rest of the arguments."""

SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
"""A name ``sh`` keeps in its environment (others are dropped on import)."""

SHELL_OWNED = frozenset({"IFS", "OPTIND", "PPID", PWD_CARRIER})
"""Names whose imported value ``sh`` (dash) replaces with its own, and the carrier itself."""

PROBE_ENV = {
    "PATH": "/usr/bin:/bin", "PWD": "/nonexistent/bees-probe", "OLDPWD": "/old",
    "HOME": "/home/probe", "SHLVL": "3", "_": "/usr/bin/probe", "LINENO": "7", "PS1": "p",
    "PS2": "q", "PS4": "r", "ENV": "/nonexistent/env", "MAIL": "m", "MAILPATH": "mp",
    "MAILCHECK": "0", "CDPATH": "/", "HISTSIZE": "5", "TERM": "dumb", "LANG": "C",
    "POSIXLY_CORRECT": "", "SPACES": " a  b ", "LINES": "two\nlines", "EMPTY": "",
}
"""An environment of names shells treat specially; the chain must pass it on unchanged."""

SHEBANG_MAX = 256
"""Bytes of a ``#!`` line the kernel reads (Linux ``BINPRM_BUF_SIZE`` since 5.1)."""

ELF_TYPES = (2, 3)
"""ELF ``e_type`` values the kernel executes: ``ET_EXEC`` and ``ET_DYN``."""

PROBE_TIMEOUT = 10.0
"""Seconds the one-time check of the chain may take before the fast way is given up."""


@dataclass(frozen=True)
class Launch:
    """How to start a program through the chain (see the module docstring).

    Attributes:
        argv: the chain's argv; holds the program's argv and this process's pid, never a
            value of the environment.
        env: the environment to start ``argv`` with (``subprocess``'s ``env=``).
    """

    argv: list[str]
    env: dict[str, str]


def _chain_argv(setpriv: str, parent: int, argv: list[str]) -> list[str]:
    """Return the chain's argv for the program ``argv`` and the parent pid ``parent``."""
    return [setpriv, "--pdeathsig", "KILL", "--", SH, "-c", CHECK, "bees-agent", str(parent),
            *argv]


def _carried(env: Mapping[str, str]) -> dict[str, str]:
    """Return ``env`` plus :data:`PWD_CARRIER` when it has a ``PWD``."""
    out = dict(env)
    if "PWD" in env:
        out[PWD_CARRIER] = env["PWD"]
    return out


PROBE_ARGV = ["cat", "/proc/self/cmdline", "/proc/self/environ"]
"""The probe's program: prints its own argv, then its environment (both NUL-separated)."""


def _probe_answer(out: bytes, env: dict[str, str]) -> bool:
    """Return True when ``out`` (what :data:`PROBE_ARGV` printed) shows exactly that argv
    and exactly the environment ``env``."""
    head = b"".join(os.fsencode(arg) + b"\0" for arg in PROBE_ARGV)
    if not out.startswith(head):
        return False
    seen = [entry.partition(b"=") for entry in out[len(head):].split(b"\0") if entry]
    return {os.fsdecode(k): os.fsdecode(v) for k, _, v in seen} == env and len(seen) == len(env)


def _probe(setpriv: str, envs: list[dict[str, str]]) -> bool:
    """Run :data:`PROBE_ARGV` through the chain once with each of ``envs``, at the same
    time; return True when each run exits 0 with exactly that argv and environment."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        for env in envs:
            started.append(subprocess.Popen(
                _chain_argv(setpriv, os.getpid(), PROBE_ARGV), env=_carried(env), cwd="/",
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL))
        answers = [proc.communicate(timeout=PROBE_TIMEOUT)[0] for proc in started]
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return all(proc.returncode == 0 and _probe_answer(out, env)
               for proc, out, env in zip(started, answers, envs, strict=True))


@functools.cache
def _chain() -> str | None:
    """Return the absolute path of ``setpriv`` when the chain works here, else None.

    None when not on Linux, when ``setpriv`` (util-linux 2.33 or later, for
    ``--pdeathsig``), :data:`SH` or ``cat`` is missing, or when the chain does not hand
    :data:`PROBE_ENV`, and an environment without ``PWD``, to the program unchanged. Runs
    the chain twice at once, once per process (a few milliseconds, tens on a loaded machine).
    """
    if not sys.platform.startswith("linux") or not os.access(SH, os.X_OK):
        return None
    found = shutil.which("setpriv")
    if found is None or shutil.which("cat", path=PROBE_ENV["PATH"]) is None:
        return None
    setpriv = os.path.abspath(found)
    works = _probe(setpriv, [dict(PROBE_ENV), {"PATH": PROBE_ENV["PATH"]}])
    return setpriv if works else None


@functools.cache
def _own_elf() -> bytes | None:
    """Return this machine's ELF class, byte order and machine (bytes 4–5 and 18–19 of the
    running interpreter's header), or None when they cannot be read."""
    try:
        with open("/proc/self/exe", "rb") as exe:
            head = exe.read(20)
    except OSError:
        return None
    return head[4:6] + head[18:20] if len(head) == 20 and head[:4] == b"\x7fELF" else None


def _runnable_file(path: str) -> bool:
    """Return True when ``path`` is a regular file this process may execute."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) and os.access(path, os.X_OK)


def _elf_of_this_machine(head: bytes) -> bool:
    """Return True when ``head`` (a file's first bytes) is an executable ELF header of this
    machine (class, byte order, machine and ``e_type`` ``ET_EXEC``/``ET_DYN``)."""
    own = _own_elf()
    if own is None or len(head) < 20 or head[:4] != b"\x7fELF":
        return False
    kind = int.from_bytes(head[16:18], "little" if head[5] == 1 else "big")
    return head[4:6] + head[18:20] == own and kind in ELF_TYPES


def _starts(path: str) -> bool:
    """Return True when the kernel will execute ``path`` (a runnable file): an ELF file of
    this machine, or a ``#!`` script whose interpreter (an absolute path) is one."""
    try:
        with open(path, "rb") as file:
            head = file.read(SHEBANG_MAX)
    except OSError:
        return False
    if _elf_of_this_machine(head):
        return True
    if not head.startswith(b"#!"):
        return False
    line = head[2:].split(b"\n", 1)[0].split()
    if not line or b"\n" not in head or not line[0].startswith(b"/"):
        return False
    interpreter = os.fsdecode(line[0])
    if not _runnable_file(interpreter):
        return False
    try:
        with open(interpreter, "rb") as file:
            return _elf_of_this_machine(file.read(20))
    except OSError:
        return False


def _resolve(program: str, cwd: Path, env: Mapping[str, str]) -> str | None:
    """Return the file CPython's ``subprocess`` (and ``sh``'s ``exec``) would execute for
    ``program`` (a path with a ``/`` as is, relative to ``cwd``; a bare name searched on the
    program's ``PATH``), or None when there is no runnable file."""
    if os.path.dirname(program):
        candidates = [program]
    else:
        candidates = [os.path.join(folder, program) for folder in os.get_exec_path(dict(env))]
    for candidate in candidates:
        path = os.path.join(cwd, candidate)
        if _runnable_file(path):
            return path
    return None


def fast_launch(argv: list[str], cwd: Path, env: Mapping[str, str]) -> Launch | None:
    """Return how to start ``argv`` with the parent-death signal set and no ``preexec_fn``
    (see the module docstring), or None where the caller must start it with
    :func:`~bees_cli.agents.groups.die_with_parent` instead.

    Args:
        argv: the program and its arguments (``argv[0]`` non-empty).
        cwd: the program's working directory (relative paths are resolved from it).
        env: the program's whole environment.

    Returns:
        The :class:`Launch`, to start with ``start_new_session=True`` and ``cwd``; None
        when the chain does not work here (:func:`_chain`), the program would not start
        (so the caller reports it as before), or a name of ``env`` would not pass ``sh``
        unchanged (:data:`SHELL_NAME`, :data:`SHELL_OWNED`).
    """
    if any(name in SHELL_OWNED or not SHELL_NAME.match(name) for name in env):
        return None
    setpriv = _chain()
    if setpriv is None:
        return None
    resolved = _resolve(argv[0], cwd, env)
    if resolved is None or not _starts(resolved):
        return None
    return Launch(argv=_chain_argv(setpriv, os.getpid(), argv), env=_carried(env))


__all__ = ["CHECK", "PWD_CARRIER", "Launch", "fast_launch"]

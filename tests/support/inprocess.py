"""``python -m bees_cli ARGS`` run in this process, answering as the subprocess would: the same
exit code, stdout and stderr text, for a fraction of its CPU (a new interpreter imports typer,
pydantic and the command's modules again each time, about 0.3 s of CPU on these cores).

What a real process shows and this cannot (a closed pipe, a signal, ``os._exit``'s skipped
teardown, the installed script, the time a process takes to start) stays with the tests that
run one (the ``bees_process`` fixture of ``tests/conftest.py``, and their own ``subprocess``).

How it stands in for the process:

- ``sys.argv``, ``sys.modules["__main__"]`` (click names the program from them: ``python -m
  bees_cli``), the environment and the current folder are set for the call and put back after;
- stdin, stdout and stderr are temporary files (so a program the command starts with
  ``stderr=sys.stderr`` writes into the captured text, as it would into the pipe), encoded as
  this interpreter encodes its own (UTF-8; stdout ``surrogateescape``, stderr
  ``backslashreplace``) and read back as ``subprocess.run(text=True)`` reads a pipe;
- ``SystemExit`` gives the exit code as the interpreter does (``None`` 0, a number itself,
  anything else printed to stderr and 1); another exception is printed with its traceback and
  ends with 1; :func:`bees_cli.cli.output.exit_hard` (``os._exit``) raises ``SystemExit``.
"""

from __future__ import annotations

import asyncio
import importlib
import io
import logging
import os
import subprocess
import sys
import tempfile
import threading
import traceback
import types
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, NoReturn

import bees_cli

BEES_MAIN = str(Path(bees_cli.__file__).resolve().parent / "__main__.py")
"""``sys.argv[0]`` of ``python -m bees_cli``."""

EXIT_HARD_USERS = ("output", "control", "engine", "handover", "delegate")
"""The :mod:`bees_cli.cli` modules that hold their own name for ``exit_hard``."""

Streams = tuple[io.TextIOWrapper, io.TextIOWrapper, io.TextIOWrapper]
"""A process's stdin, stdout and stderr."""


def run_entry(args: list[str], *, env: Mapping[str, str] | None = None,
              cwd: Path | str | None = None, input: str | None = None,  # noqa: A002
              typer_only: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``python -m bees_cli ARGS`` here (or, with ``typer_only``, ``bees ARGS`` through the
    typer app alone, as ``python -c "...main.run()"`` with ``sys.argv[0] == "bees"`` does).

    ``env`` replaces the whole environment for the call (as ``subprocess.run(env=...)``);
    None keeps this one. Returns the completed "process": ``args``, ``returncode``,
    ``stdout``, ``stderr`` (text). Run on a fresh thread when this thread has a running event
    loop (a command's ``asyncio.run`` could not start under it).
    """
    if _loop_running():
        answer: list[subprocess.CompletedProcess[str]] = []
        failed: list[BaseException] = []

        def call() -> None:
            try:
                answer.append(run_entry(args, env=env, cwd=cwd, input=input,
                                        typer_only=typer_only))
            except BaseException as raised:  # noqa: BLE001 - handed back to the caller
                failed.append(raised)

        thread = threading.Thread(target=call)
        thread.start()
        thread.join()
        if failed:
            raise failed[0]
        return answer[0]
    if typer_only:
        from bees_cli.cli.main import run as entry
        argv0, package = "bees", None
    else:
        from bees_cli.cli.entry import run as entry
        argv0, package = BEES_MAIN, "bees_cli"
    with _streams(input) as (stdin, stdout, stderr), _process(argv0, args, package, env, cwd):
        try:
            code = _exit_code(entry, stderr, (stdin, stdout, stderr))
        finally:
            _drop_handlers_of((stdout, stderr))
        stdout.flush()
        stderr.flush()
        return subprocess.CompletedProcess([sys.executable, "-m", "bees_cli", *args], code,
                                           _read(stdout), _read(stderr))


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _exit_code(entry: Callable[[], None], stderr: IO[str],
               streams: tuple[IO[str], IO[str], IO[str]]) -> int:
    """Call ``entry`` with ``sys.stdin/stdout/stderr`` set to ``streams``; its exit code."""
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = streams
    try:
        entry()
        code: object = 0
    except SystemExit as leaving:
        code = leaving.code
    except BaseException:  # noqa: BLE001 - what the interpreter prints and exits 1 with
        traceback.print_exc(file=stderr)
        code = 1
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=stderr)
    return 1


@contextmanager
def _streams(input: str | None) -> Iterator[Streams]:  # noqa: A002
    """Three temporary files as a process's stdin (``input``, else empty), stdout, stderr."""
    with (tempfile.TemporaryFile(buffering=0) as raw_in,
          tempfile.TemporaryFile(buffering=0) as raw_out,
          tempfile.TemporaryFile(buffering=0) as raw_err):
        raw_in.write((input or "").encode("utf-8"))
        raw_in.seek(0)
        stdin = io.TextIOWrapper(raw_in, encoding="utf-8", errors="surrogateescape")
        stdout = io.TextIOWrapper(raw_out, encoding="utf-8",
                                  errors="surrogateescape", write_through=True)
        stderr = io.TextIOWrapper(raw_err, encoding="utf-8",
                                  errors="backslashreplace", write_through=True,
                                  line_buffering=True)
        try:
            yield stdin, stdout, stderr
        finally:
            for stream in (stdin, stdout, stderr):
                stream.detach()


def _read(stream: io.TextIOWrapper) -> str:
    """What ``subprocess.run(text=True)`` reads from the stream's file: UTF-8, strict, with
    universal newlines."""
    raw = stream.fileno()
    os.lseek(raw, 0, os.SEEK_SET)
    with os.fdopen(os.dup(raw), "rb") as written:
        return io.TextIOWrapper(io.BytesIO(written.read()), encoding="utf-8").read()


@contextmanager
def _process(argv0: str, args: list[str], package: str | None, env: Mapping[str, str] | None,
             cwd: Path | str | None) -> Iterator[None]:
    """Set what a new process would have (argv, ``__main__``, environment, folder) and
    ``exit_hard`` without ``os._exit``, and put it all back after."""
    saved_argv, saved_main = sys.argv, sys.modules.get("__main__")
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    main = types.ModuleType("__main__")
    main.__package__ = package
    sys.argv = [argv0, *args]
    sys.modules["__main__"] = main
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    restore_exits = _soft_exits()
    try:
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        restore_exits()
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv = saved_argv
        if saved_main is not None:
            sys.modules["__main__"] = saved_main


def _drop_handlers_of(streams: tuple[IO[str], ...]) -> None:
    """Remove every logging handler that writes to one of ``streams`` (a command may point a
    logger at its stderr; the process it stands for would have ended with it)."""
    loggers = [logging.getLogger(), *(logger for logger in logging.root.manager.loggerDict.values()
                                      if isinstance(logger, logging.Logger))]
    for logger in loggers:
        for handler in list(logger.handlers):
            if isinstance(handler, logging.StreamHandler) and any(
                    handler.stream is stream for stream in streams):
                logger.removeHandler(handler)


def _soft_exits() -> Callable[[], None]:
    """Make each ``exit_hard`` raise ``SystemExit`` (its code, streams flushed) instead of
    ``os._exit``; return what puts them back."""

    def exit_soft(code: int) -> NoReturn:
        sys.stdout.flush()
        sys.stderr.flush()
        raise SystemExit(code)

    saved = []
    for name in EXIT_HARD_USERS:
        module = importlib.import_module(f"bees_cli.cli.{name}")
        saved.append((module, module.exit_hard))
        module.exit_hard = exit_soft  # type: ignore[attr-defined]

    def restore() -> None:
        for module, original in saved:
            module.exit_hard = original  # type: ignore[attr-defined]

    return restore

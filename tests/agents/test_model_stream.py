"""A model call is streamed where the server streams (issue 26, point 2): the reply is
assembled from its chunks exactly as a whole reply, its progress is told as it comes, and a
server that does not stream still answers."""

from __future__ import annotations

import threading

import pytest

from bees_cli.agents.chat_wire import ChatResponse, Message
from bees_cli.agents.model_client import ModelClient
from bees_cli.agents.model_http import RetryPolicy
from bees_cli.errors import ModelAnswerInvalid, ModelUnavailable
from bees_cli.workspace.models import ModelSpec
from tests.agents.model_server import Answer, ScriptedServer

HI = [Message(role="user", content="hi")]
SPLIT = (
    Answer.delta("Hel"),
    Answer.delta("lo"),
    Answer.delta(calls=[{"index": 0, "id": "c1", "type": "function",
                         "function": {"name": "write_file", "arguments": '{"path": '}}]),
    Answer.delta(calls=[{"index": 0, "function": {"arguments": '"a.md"}'}}]),
    Answer.delta(finish_reason="tool_calls"),
    Answer.usage_chunk(12, 4),
)
"""A reply of content and one tool call, each split across chunks, then the usage."""


def streaming(server: ScriptedServer, **settings: object) -> ModelClient:
    spec = ModelSpec(base_url=server.base_url, name="scripted-model", **settings)
    return ModelClient(spec, retry=RetryPolicy(attempts=1), stream=True)


async def test_a_streamed_reply_is_assembled_exactly_and_told_as_it_comes(
        model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.streamed(*SPLIT))
    told: list[tuple[str, int]] = []

    async def progress(text: str, tokens: int) -> None:
        told.append((text, tokens))

    async with streaming(model_server) as client:
        done = await client.complete(HI, progress=progress)
    assert done.response == ChatResponse.model_validate({
        "id": "chatcmpl-scripted", "model": "scripted",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Hello", "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "write_file", "arguments": '{"path": "a.md"}'}}]}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}})
    assert told == [("Hel", 1), ("lo", 2), ("", 3), ("", 4)]
    body = model_server.model.received[0].body
    assert (body["stream"], body["stream_options"]) == (True, {"include_usage": True})
    assert client.streams is True


async def test_a_server_answering_plain_json_to_a_stream_request_still_answers(
        model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.reply("whole"))
    async with streaming(model_server) as client:
        done = await client.complete(HI)
    assert done.message.content == "whole"
    assert client.streams is False
    assert len(model_server.model.received) == 1


async def test_a_server_refusing_stream_is_asked_again_without_it(
        model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.error(400, "stream is not supported"),
                            Answer.reply("whole"))
    async with streaming(model_server) as client:
        done = await client.complete(HI)
    assert done.message.content == "whole"
    assert client.streams is False
    bodies = [r.body for r in model_server.model.received]
    assert [b.get("stream") for b in bodies] == [True, False]
    assert "stream_options" not in bodies[1]


async def test_a_streamed_reply_over_the_size_limit_is_cut_off(
        model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.streamed(*[Answer.delta("x" * 1000)] * 2000))
    async with streaming(model_server, max_reply_bytes=1_000_000) as client:
        with pytest.raises(ModelAnswerInvalid) as caught:
            await client.complete(HI)
    assert str(caught.value) == ("the reply was larger than 1 MB and was cut off there "
                                 f"({model_server.base_url}/chat/completions)")


async def test_progress_is_told_before_the_stream_ends(model_server: ScriptedServer) -> None:
    gate = threading.Event()
    model_server.model.push(Answer.streamed(Answer.delta("a"), Answer.delta("b"),
                                            pause=(1, gate)))

    async def progress(text: str, tokens: int) -> None:
        gate.set()  # the rest comes once the first chunk is read

    async with streaming(model_server) as client:
        done = await client.complete(HI, progress=progress)
    assert done.message.content == "ab"


async def test_the_read_timeout_restarts_with_each_chunk_and_the_deadline_still_holds(
        model_server: ScriptedServer) -> None:
    slow = [Answer.delta(letter) for letter in "abcdef"]
    model_server.model.push(Answer.streamed(*slow, every=0.3),
                            Answer.streamed(*slow, every=0.3))
    async with streaming(model_server, timeout_seconds=1) as client:
        done = await client.complete(HI)  # 1.5 s in all, never 1 s without a chunk
    assert done.message.content == "abcdef"
    async with streaming(model_server, timeout_seconds=1, deadline_seconds=1) as client:
        with pytest.raises(ModelUnavailable) as caught:
            await client.complete(HI)
    assert str(caught.value) == (f"{model_server.base_url}/chat/completions did not finish "
                                 "its reply within its deadline of 1 s")

"""The chat-completions client against a scripted HTTP server: answers, retries, typed errors."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Literal

import httpx
import pytest
from pydantic import BaseModel

from bees_cli.agents.chat_wire import FunctionDef, Message, ResponseFormat, ToolDef
from bees_cli.agents.model_client import Completion, ModelClient, server_name
from bees_cli.agents.model_http import RetryPolicy
from bees_cli.errors import (
    ModelAnswerInvalid,
    ModelContextExceeded,
    ModelError,
    ModelRateLimited,
    ModelRejected,
    ModelToolCallInvalid,
    ModelUnauthorized,
    ModelUnavailable,
)
from bees_cli.workspace.models import ModelSpec
from tests.agents.model_server import EXHAUSTED, Answer, ScriptedServer

KEY = "sk-test-0123456789abcdef"
ENV = {"TEST_MODEL_KEY": KEY}
HI = [Message(role="user", content="hi")]


class Sleeps:
    """An injected sleep: records each wait and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def ticks(*values: float) -> Any:
    """A monotonic clock returning ``values`` in turn."""
    it: Iterator[float] = iter(values)
    return lambda: next(it)


def spec(url: str, *, key: str | None = "TEST_MODEL_KEY") -> ModelSpec:
    return ModelSpec(base_url=url, name="scripted-model", api_key_env=key)


def client(server: ScriptedServer, sleeps: Sleeps | None = None, *, key: str | None =
           "TEST_MODEL_KEY", **kwargs: Any) -> ModelClient:
    return ModelClient(spec(server.base_url, key=key), environ=ENV, sleep=sleeps or Sleeps(),
                       **kwargs)


def chat_url(server: ScriptedServer) -> str:
    return f"{server.base_url}/chat/completions"


async def test_text_reply_and_the_request_sent(model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.reply("Hello there.", prompt_tokens=12, completion_tokens=3))
    async with client(model_server, clock=ticks(100.0, 102.5)) as c:
        done = await c.complete(HI, max_tokens=64, temperature=0.0)
    assert done.message == Message(role="assistant", content="Hello there.")
    assert (done.response.usage.prompt_tokens, done.response.usage.completion_tokens,
            done.response.usage.total_tokens) == (12, 3, 15)
    assert (done.attempts, done.seconds) == (1, 2.5)
    assert done.response.choices[0].finish_reason == "stop"
    [got] = model_server.model.received
    assert got.path == "/v1/chat/completions"
    assert got.body == {"model": "scripted-model",
                        "messages": [{"role": "user", "content": "hi"}],
                        "max_tokens": 64, "temperature": 0.0, "stream": False}
    assert got.headers["authorization"] == f"Bearer {KEY}"
    assert got.headers["content-type"] == "application/json"


async def test_no_key_variable_sends_no_authorization(model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.reply("ok"))
    async with client(model_server, key=None) as c:
        await c.complete(HI)
    assert "authorization" not in model_server.model.received[0].headers


async def test_tool_call_offered_and_answered(model_server: ScriptedServer) -> None:
    model_server.model.push(
        Answer.tool_calls(("call_1", "files.write", '{"path": "report.md", "text": "# R"}'))
    )
    tool = ToolDef(function=FunctionDef(
        name="files.write", description="Write a file in the stage's folder.",
        parameters={"type": "object", "properties": {"path": {"type": "string"},
                                                     "text": {"type": "string"}},
                    "required": ["path", "text"]}))
    history = [Message(role="system", content="You write reports."), *HI,
               Message(role="tool", tool_call_id="call_0", content="done")]
    async with client(model_server) as c:
        done = await c.complete(history, tools=[tool], tool_choice="auto")
    [call] = done.message.tool_calls or []
    assert (call.id, call.function.name) == ("call_1", "files.write")
    assert call.parsed_arguments() == {"path": "report.md", "text": "# R"}
    assert done.message.content is None
    assert done.response.choices[0].finish_reason == "tool_calls"
    body = model_server.model.received[0].body
    assert body["tools"] == [{"type": "function", "function": {
        "name": "files.write", "description": "Write a file in the stage's folder.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"},
                                                        "text": {"type": "string"}},
                       "required": ["path", "text"]}}}]
    assert body["tool_choice"] == "auto"
    assert body["messages"] == [{"role": "system", "content": "You write reports."},
                                {"role": "user", "content": "hi"},
                                {"role": "tool", "content": "done", "tool_call_id": "call_0"}]


async def test_assistant_tool_calls_are_sent_back_as_received(
    model_server: ScriptedServer,
) -> None:
    model_server.model.push(Answer.tool_calls(("c1", "mail.send", '{"to": "a@b"}')),
                            Answer.reply("sent"))
    async with client(model_server) as c:
        first = await c.complete(HI)
        result = Message(role="tool", tool_call_id="c1", content='{"ok": true}')
        await c.complete([*HI, first.message, result])
    assert model_server.model.received[1].body["messages"][1:] == [
        {"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "mail.send", "arguments": '{"to": "a@b"}'}}]},
        {"role": "tool", "content": '{"ok": true}', "tool_call_id": "c1"},
    ]


@pytest.mark.parametrize(("arguments", "message"), [
    ('{"path": "a.md",', "the arguments of tool call 'files.write' are not valid JSON: "
                         "Expecting property name enclosed in double quotes at line 1 column 17"),
    ("[1, 2]", "the arguments of tool call 'files.write' are a JSON list, not an object"),
])
async def test_malformed_tool_arguments(model_server: ScriptedServer, arguments: str,
                                        message: str) -> None:
    model_server.model.push(Answer.tool_calls(("call_9", "files.write", arguments)))
    async with client(model_server) as c:
        done = await c.complete(HI)
    [call] = done.message.tool_calls or []
    with pytest.raises(ModelToolCallInvalid) as caught:
        call.parsed_arguments()
    assert (caught.value.message, caught.value.tool_call_id, caught.value.tool) == (
        message, "call_9", "files.write")
    assert caught.value.retryable is False


class Verdict(BaseModel):
    verdict: Literal["approve", "changes_requested"]
    comments: list[str] = []


VERDICT_SCHEMA = {"type": "object", "properties": {
    "verdict": {"enum": ["approve", "changes_requested"]},
    "comments": {"type": "array", "items": {"type": "string"}}},
    "required": ["verdict"], "additionalProperties": False}


async def test_response_format_json_schema(model_server: ScriptedServer) -> None:
    model_server.model.push(
        Answer.reply('{"verdict": "changes_requested", "comments": ["add totals"]}'))
    async with client(model_server) as c:
        done = await c.complete(HI, response_format=ResponseFormat.for_schema("verdict",
                                                                              VERDICT_SCHEMA))
    assert done.response.parsed_content(Verdict) == Verdict(verdict="changes_requested",
                                                            comments=["add totals"])
    assert model_server.model.received[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": VERDICT_SCHEMA, "strict": True}}


@pytest.mark.parametrize(("content", "message"), [
    ("Looks good to me!", "the model's answer is not JSON: Expecting value at line 1 column 1"),
    ('{"verdict": "maybe"}', "the model's answer is not a valid Verdict: verdict: "
                             "Input should be 'approve' or 'changes_requested'"),
    ("", "the model answered no content where JSON was asked"),
])
async def test_response_format_answer_that_is_not_the_schema(
    model_server: ScriptedServer, content: str, message: str,
) -> None:
    model_server.model.push(Answer.reply(content))
    async with client(model_server) as c:
        done = await c.complete(HI)
    with pytest.raises(ModelAnswerInvalid) as caught:
        done.response.parsed_content(Verdict)
    assert caught.value.message == message


async def test_429_waits_retry_after_then_retries(model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.error(429, "Rate limit reached", headers={"Retry-After": "3"}),
                            Answer.reply("ok"))
    sleeps = Sleeps()
    async with client(model_server, sleeps) as c:
        done = await c.complete(HI)
    assert (done.message.content, done.attempts, sleeps.waits) == ("ok", 2, [3.0])
    assert len(model_server.model.received) == 2


async def test_429_retry_after_as_an_http_date(model_server: ScriptedServer) -> None:
    model_server.model.push(
        Answer.error(429, "slow down", headers={"Retry-After": "Wed, 21 Oct 2015 07:28:07 GMT"}),
        Answer.reply("ok"))
    sleeps = Sleeps()
    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)
    async with client(model_server, sleeps, now=lambda: now) as c:
        await c.complete(HI)
    assert sleeps.waits == [7.0]


async def test_429_without_retry_after_backs_off(model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.error(429, "busy"), Answer.error(429, "busy"),
                            Answer.reply("ok"))
    sleeps = Sleeps()
    async with client(model_server, sleeps) as c:
        done = await c.complete(HI)
    assert (done.attempts, sleeps.waits) == (3, [0.5, 1.0])


async def test_429_retry_after_too_long_is_raised_at_once(model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.error(429, "quota", headers={"Retry-After": "120"}))
    sleeps = Sleeps()
    async with client(model_server, sleeps) as c:
        with pytest.raises(ModelRateLimited) as caught:
            await c.complete(HI)
    assert caught.value.message == (f"{chat_url(model_server)} asked to slow down "
                                    "(HTTP 429, Retry-After 120 s): quota")
    assert (caught.value.retryable, caught.value.retry_after) == (True, 120.0)
    assert (sleeps.waits, len(model_server.model.received)) == ([], 1)


async def test_429_until_the_tries_run_out(model_server: ScriptedServer) -> None:
    model_server.model.push(*[Answer.error(429, "busy", headers={"Retry-After": "2"})] * 2)
    sleeps = Sleeps()
    async with client(model_server, sleeps, retry=RetryPolicy(attempts=2)) as c:
        with pytest.raises(ModelRateLimited) as caught:
            await c.complete(HI)
    assert (caught.value.retry_after, sleeps.waits) == (2.0, [2.0])
    assert model_server.model.script == type(model_server.model.script)()


async def test_500_then_success(model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.error(500, "boom"), Answer.error(502, "bad gateway"),
                            Answer.reply("fine"))
    sleeps = Sleeps()
    async with client(model_server, sleeps) as c:
        done = await c.complete(HI)
    assert (done.message.content, done.attempts, sleeps.waits) == ("fine", 3, [0.5, 1.0])


async def test_5xx_until_the_tries_run_out(model_server: ScriptedServer) -> None:
    model_server.model.push(*[Answer.error(503, "loading model")] * 4)
    sleeps = Sleeps()
    async with client(model_server, sleeps) as c:
        with pytest.raises(ModelUnavailable) as caught:
            await c.complete(HI)
    assert caught.value.message == f"{chat_url(model_server)} failed (HTTP 503): loading model"
    assert (caught.value.retryable, sleeps.waits) == (True, [0.5, 1.0, 2.0])
    assert len(model_server.model.received) == 4


async def test_backoff_is_capped() -> None:
    policy = RetryPolicy(attempts=8, first_backoff=1.0, max_backoff=5.0)
    assert [policy.backoff(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]


async def test_401_fails_at_once_naming_the_variable(model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.error(
        401, f"Incorrect API key provided: {KEY}. You can find your key at example.com.",
        code="invalid_api_key"))
    sleeps = Sleeps()
    async with client(model_server, sleeps) as c:
        with pytest.raises(ModelUnauthorized) as caught:
            await c.complete(HI)
    assert caught.value.message == (
        f"the API key in TEST_MODEL_KEY was refused by {chat_url(model_server)} (HTTP 401): "
        "invalid_api_key: Incorrect API key provided: [hidden]. You can find your key at "
        "example.com.")
    assert caught.value.hint == ("check the key in TEST_MODEL_KEY, and that it may use model "
                                 "'scripted-model'")
    assert (caught.value.retryable, sleeps.waits, len(model_server.model.received)) == (
        False, [], 1)


async def test_403_without_a_key(model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.error(403, "forbidden"))
    async with client(model_server, key=None) as c:
        with pytest.raises(ModelUnauthorized) as caught:
            await c.complete(HI)
    assert caught.value.message == (f"{chat_url(model_server)} refused a request without an "
                                    "API key (HTTP 403): forbidden")


def test_unset_key_variable_is_refused_before_any_call() -> None:
    with pytest.raises(ModelUnauthorized) as caught:
        ModelClient(spec("http://127.0.0.1:9/v1"), environ={"TEST_MODEL_KEY": " "})
    assert caught.value.message == ("the environment variable TEST_MODEL_KEY is not set; the "
                                    "model at http://127.0.0.1:9/v1/chat/completions needs its "
                                    "API key")
    assert caught.value.code == "model_unauthorized"


async def test_context_window_exceeded(model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.error(
        400, "the request exceeds the available context size, try increasing it",
        code="exceed_context_size_error"))
    async with client(model_server) as c:
        with pytest.raises(ModelContextExceeded) as caught:
            await c.complete(HI)
    assert caught.value.message == (
        f"the conversation no longer fits the context window of scripted-model at "
        f"{chat_url(model_server)} (HTTP 400): exceed_context_size_error: the request exceeds "
        "the available context size, try increasing it")
    assert caught.value.retryable is False


async def test_other_4xx_is_rejected(model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.error(404, "model 'scripted-model' not found"))
    async with client(model_server) as c:
        with pytest.raises(ModelRejected) as caught:
            await c.complete(HI)
    assert type(caught.value) is ModelRejected
    assert caught.value.message == (f"{chat_url(model_server)} refused the request (HTTP 404): "
                                    "model 'scripted-model' not found")


@pytest.mark.parametrize(("answer", "message"), [
    (Answer.raw("<html>oops</html>"), "answered HTTP 200 with something that is not JSON: "
                                      "'<html>oops</html>'"),
    (Answer(body={"choices": []}), "answered JSON that is not a chat completion: choices: "
                                   "List should have at least 1 item after validation, not 0"),
    (Answer(body={"choices": [{"message": {"role": "robot"}}]}),
     "answered JSON that is not a chat completion: choices.0.message.role: Input should be "
     "'system', 'user', 'assistant' or 'tool'"),
])
async def test_malformed_answer(model_server: ScriptedServer, answer: Answer,
                                message: str) -> None:
    model_server.model.push(answer)
    async with client(model_server) as c:
        with pytest.raises(ModelAnswerInvalid) as caught:
            await c.complete(HI)
    assert caught.value.message == f"{chat_url(model_server)} {message}"
    assert caught.value.__context__ is None  # a decoding error would carry the whole body
    assert len(model_server.model.received) == 1


async def test_exhausted_script_is_a_500(model_server: ScriptedServer) -> None:
    async with client(model_server, retry=RetryPolicy(attempts=1)) as c:
        with pytest.raises(ModelUnavailable) as caught:
            await c.complete(HI)
    assert caught.value.message.endswith(f"(HTTP 500): {EXHAUSTED}")


async def test_unreachable_server_is_retried_then_unavailable() -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleeps = Sleeps()
    c = ModelClient(spec(f"http://127.0.0.1:{port}/v1"), environ=ENV, sleep=sleeps,
                    retry=RetryPolicy(attempts=3))
    async with c:
        with pytest.raises(ModelUnavailable) as caught:
            await c.complete(HI)
    assert caught.value.message == (f"cannot reach http://127.0.0.1:{port}/v1/chat/completions:"
                                    " ConnectError")
    assert sleeps.waits == [0.5, 1.0]


async def test_timeout_is_retried_then_unavailable() -> None:
    calls: list[httpx.Request] = []

    def slow(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ReadTimeout("read timed out", request=request)

    sleeps = Sleeps()
    c = ModelClient(ModelSpec(base_url="http://model.test/v1", name="m", timeout_seconds=30),
                    transport=httpx.MockTransport(slow), sleep=sleeps,
                    retry=RetryPolicy(attempts=2))
    async with c:
        with pytest.raises(ModelUnavailable) as caught:
            await c.complete(HI)
    assert caught.value.message == ("http://model.test/v1/chat/completions did not answer "
                                    "within 30 s")
    assert (len(calls), sleeps.waits) == (2, [0.5])


async def test_url_shown_without_user_or_query() -> None:
    c = ModelClient(ModelSpec(base_url="https://user:pw@api.example.com/v1?key=abc", name="m"))
    assert c.url == "https://user:pw@api.example.com/v1/chat/completions?key=abc"
    assert c.shown_url == "https://api.example.com/v1/chat/completions"
    assert ModelClient(ModelSpec(base_url="http://[::1]:11434/v1", name="m")).shown_url == (
        "http://[::1]:11434/v1/chat/completions")
    assert repr(c) == ("ModelClient('https://api.example.com/v1/chat/completions', model='m', "
                       "no key)")
    await c.aclose()


def _texts(value: Any) -> list[str]:
    """Every text ``value`` shows, through its whole chain of causes and contexts."""
    texts = [str(value), repr(value)]
    if isinstance(value, BaseException):
        texts += [repr(value.args), *traceback.format_exception(value)]
        if isinstance(value, ModelError):
            texts += [value.message, str(value.hint), str(value.to_json())]
        for linked in (value.__cause__, value.__context__):
            if linked is not None:
                texts += _texts(linked)
    return texts


async def test_the_key_never_appears(model_server: ScriptedServer,
                                     caplog: pytest.LogCaptureFixture) -> None:
    """Every error, repr and answer of a session whose server echoes the key back."""
    echo = f"key {KEY} is bad"
    model_server.model.push(
        Answer.reply("hi"),
        Answer.error(401, echo), Answer.error(403, echo), Answer.error(404, echo),
        Answer.error(400, f"context length exceeded for {KEY}"),
        Answer.error(429, echo, headers={"Retry-After": "999"}),
        Answer.error(500, echo), Answer.raw(f"not json {KEY}"),
        Answer(body={"choices": [], "echo": KEY}),
    )
    seen: list[Any] = []
    caplog.set_level(logging.DEBUG)  # httpx and httpcore log every request at DEBUG
    async with client(model_server, retry=RetryPolicy(attempts=1)) as c:
        seen += [c, c.request(HI)]
        done = await c.complete(HI)
        seen += [done, done.response]
        for _ in range(8):
            with pytest.raises(ModelError) as caught:
                await c.complete(HI)
            seen.append(caught.value)
    assert [type(e).__name__ for e in seen[4:]] == [
        "ModelUnauthorized", "ModelUnauthorized", "ModelRejected", "ModelContextExceeded",
        "ModelRateLimited", "ModelUnavailable", "ModelAnswerInvalid", "ModelAnswerInvalid"]
    assert all(KEY not in text for value in seen for text in _texts(value))
    assert "chat/completions" in caplog.text
    assert KEY not in caplog.text
    assert isinstance(seen[2], Completion)
    # the key did travel, in the one place it belongs
    assert {r.headers["authorization"] for r in model_server.model.received} == {f"Bearer {KEY}"}



@pytest.mark.parametrize(("base_url", "name"), [
    ("http://127.0.0.1:8080/v1", "127.0.0.1:8080"),
    ("https://api.openai.com/v1", "api.openai.com"),
    ("http://[::1]:11434/v1?x=1", "[::1]:11434"),
    ("http://user:secret@models.example:9000/v1", "models.example:9000"),
])
def test_a_waiting_item_names_the_models_server_by_host_and_port(base_url: str,
                                                                   name: str) -> None:
    assert server_name(base_url) == name

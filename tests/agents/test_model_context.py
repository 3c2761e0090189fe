"""Fitting a conversation into the model's context (issue 26, point 7): pure, no engine."""

from __future__ import annotations

import httpx

from bees_cli.agents.chat_wire import Message
from bees_cli.agents.model_context import (
    DEFAULT_CONTEXT_TOKENS,
    estimate_tokens,
    fit_context,
    props_url,
    server_context,
    shortened_note,
)


def m(role: str, content: str | None, **extra: object) -> Message:
    return Message.model_validate({"role": role, "content": content, **extra})


def calls(*pairs: tuple[str, str]) -> Message:
    return m("assistant", None, tool_calls=[
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}
        for call_id, name in pairs])


OPENING = [m("system", "be brief"), m("user", "the task " + "t" * 400)]


def test_tokens_are_json_characters_over_four_rounded_up() -> None:
    # [{"content":"abc","role":"user"}]: 33 characters
    assert estimate_tokens([m("user", "abc")]) == 9
    assert estimate_tokens([m("user", "abcd")]) == 9  # 34 characters
    assert estimate_tokens([m("user", "abcde")], [{"a": 1}]) == 11  # 35 + 9 (the tools)


def test_oldest_tool_results_are_shortened_first_never_the_opening_or_the_last_turn() -> None:
    conversation = OPENING + [
        calls(("c1", "mail__search")), m("tool", "a" * 12_345, tool_call_id="c1"),
        calls(("c2", "read_file")), m("tool", "b" * 5_000, tool_call_id="c2"),
        calls(("c3", "mail__search")), m("tool", "c" * 9_000, tool_call_id="c3")]
    whole = estimate_tokens(conversation)
    fitted, count = fit_context(conversation, keep_first=2, budget=whole - 3_000)
    assert count == 1
    assert fitted[:2] == OPENING
    assert fitted[3] == m("tool", "[shortened: 12,345 characters of mail.search's result]",
                          tool_call_id="c1")
    assert fitted[4:] == conversation[4:]
    fitted, count = fit_context(conversation, keep_first=2, budget=whole - 4_000)
    assert count == 2
    assert fitted[5].content == "[shortened: 5,000 characters of read_file's result]"
    assert fitted[6:] == conversation[6:]  # the last turn whole
    # never the last turn, even when nothing else is left to shorten
    fitted, count = fit_context(conversation, keep_first=2, budget=10)
    assert count == 2 and fitted[-1] == conversation[-1]


def test_a_conversation_that_fits_is_sent_as_it_is() -> None:
    conversation = OPENING + [calls(("c1", "read_file")), m("tool", "x" * 100, tool_call_id="c1"),
                              m("assistant", "done")]
    assert fit_context(conversation, keep_first=2,
                       budget=estimate_tokens(conversation)) == (conversation, 0)


def test_json_mode_results_keep_their_prefix() -> None:
    conversation = OPENING + [
        m("assistant", '{"tool": "mail__search", "arguments": {}}'),
        m("user", "Result of mail.search: " + "r" * 2_000),
        m("user", "Result of mail.search is not what this is"),
        m("assistant", '{"tool": "read_file", "arguments": {}}'),
        m("user", "Result of read_file: short")]
    fitted, count = fit_context(conversation, keep_first=2, budget=100)
    assert count == 1
    assert fitted[3].content == (
        "Result of mail.search: [shortened: 2,000 characters of mail.search's result]")
    assert fitted[4:] == conversation[4:]


def test_the_note() -> None:
    assert shortened_note(12_345, "mail.search") == (
        "[shortened: 12,345 characters of mail.search's result]")


def props_server(answers: list[httpx.Response], asked: list[str]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        return answers.pop(0)
    return httpx.MockTransport(handle)


async def test_the_context_is_llama_cpps_n_ctx_kept_five_minutes() -> None:
    asked: list[str] = []
    answers = [httpx.Response(200, json={"default_generation_settings": {"n_ctx": 2048}}),
               httpx.Response(200, json={"default_generation_settings": {"n_ctx": 8192}})]
    transport = props_server(answers, asked)
    base = "http://127.0.0.1:18080/v1"
    assert await server_context(base, now=1000.0, transport=transport) == 2048
    assert await server_context(base, now=1299.0, transport=transport) == 2048
    assert await server_context(base, now=1300.0, transport=transport) == 8192
    assert asked == ["http://127.0.0.1:18080/props"] * 2


async def test_a_server_that_does_not_say_gives_the_default() -> None:
    for number, answer in enumerate([httpx.Response(404, text="not found"),
                                     httpx.Response(200, json={"model": "llama3"}),
                                     httpx.Response(200, text="<html>")]):
        transport = props_server([answer], [])
        assert await server_context(f"http://127.0.0.1:{18100 + number}/v1", now=0.0,
                                    transport=transport) == DEFAULT_CONTEXT_TOKENS == 4096


def test_props_sits_beside_the_api() -> None:
    assert props_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/props"
    assert props_url("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080/props"
    assert props_url("https://h/llm/v1?x=1") == "https://h/llm/props"

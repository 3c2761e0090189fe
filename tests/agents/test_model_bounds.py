"""One model call is bounded as a whole (issue 26, point 1): a dripping server is cut at the
call's deadline, a huge reply at the size limit, without reading the rest."""

from __future__ import annotations

from typing import Any

import pytest

from bees_cli.agents.chat_wire import Message
from bees_cli.agents.model_client import ModelClient
from bees_cli.agents.model_http import RetryPolicy
from bees_cli.errors import ModelAnswerInvalid, ModelUnavailable
from bees_cli.workspace.models import ModelSpec
from tests.agents.model_server import Answer, ScriptedServer

HI = [Message(role="user", content="hi")]
DRIPS = 40
"""Spaces a dripping server sends before its reply, one every 0.1 s: 4 s in all."""
HUGE = 50_000_000
"""Bytes of content in a huge reply."""


def bounded(server: ScriptedServer, **settings: Any) -> ModelClient:
    """A client of ``server`` trying once, with the given ``runner.model`` settings."""
    spec = ModelSpec(base_url=server.base_url, name="scripted-model", **settings)
    return ModelClient(spec, retry=RetryPolicy(attempts=1))


async def test_a_dripping_reply_is_cut_at_the_whole_call_deadline(
        model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.reply("late").dripped(DRIPS, 0.1))
    async with bounded(model_server, timeout_seconds=5, deadline_seconds=1.5) as c:
        with pytest.raises(ModelUnavailable) as caught:
            await c.complete(HI)
    assert str(caught.value) == (f"{model_server.base_url}/chat/completions did not finish "
                                 "its reply within its deadline of 1.5 s")
    assert caught.value.hint == ("a slow local model may need a larger "
                                 "runner.model.deadline_seconds")
    assert caught.value.retryable is True
    # cut by the deadline, not the 5 s per read: the server never got all its drips out
    assert model_server.model.sent[0] < DRIPS


async def test_a_huge_reply_is_cut_off_at_the_size_limit_without_reading_the_rest(
        model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.huge(HUGE))
    async with bounded(model_server, max_reply_bytes=1_000_000) as c:
        with pytest.raises(ModelAnswerInvalid) as caught:
            await c.complete(HI)
    assert str(caught.value) == ("the reply was larger than 1 MB and was cut off there "
                                 f"({model_server.base_url}/chat/completions)")
    assert caught.value.retryable is False
    # the client stopped reading at the limit: what the server got written is the limit
    # and the sockets' buffers, not the 50 MB
    assert model_server.model.sent[0] < 10_000_000


async def test_a_reply_within_the_limits_is_read_whole(model_server: ScriptedServer) -> None:
    model_server.model.push(Answer.huge(900_000), Answer.reply("on time").dripped(5, 0.05))
    async with bounded(model_server, max_reply_bytes=1_000_000, deadline_seconds=5) as c:
        big = await c.complete(HI)
        slow = await c.complete(HI)
    assert big.message.content == "x" * 900_000
    assert slow.message.content == "on time"

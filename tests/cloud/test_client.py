"""The client's retries and error mapping (MockTransport), and time over real HTTP."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from bees_cli.cloud import wire
from bees_cli.cloud.client import AsyncCloudClient, CloudClient, check_url
from bees_cli.errors import CloudError, CloudRefused, CloudUnauthorized, CloudUnreachable, UserError

from .conftest import ThreadServer

ME = {"person": "maya@example.com", "team": "acme", "server_time": "2025-01-06T09:00:00Z"}


def _error(status: int, code: str, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message, "hint": "h"}})


class Script:
    """A MockTransport handler answering from a list, recording requests."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def _client(script: Script, sleeps: list[float], retries: int = 3) -> CloudClient:
    return CloudClient(
        "http://cloud.test/",
        "bees.tok",
        transport=httpx.MockTransport(script),
        retries=retries,
        backoff=0.5,
        sleep=sleeps.append,
    )


def test_connection_errors_and_5xx_are_retried_with_backoff() -> None:
    script = Script(
        httpx.ConnectError("refused"),
        httpx.Response(503, json={}),
        httpx.ReadTimeout("slow"),
        httpx.Response(200, json=ME),
    )
    sleeps: list[float] = []
    me = _client(script, sleeps).me()
    assert me.person == "maya@example.com"
    assert sleeps == [0.5, 1.0, 2.0]
    assert [str(r.url) for r in script.requests] == ["http://cloud.test/v1/me"] * 4
    assert script.requests[0].headers["authorization"] == "Bearer bees.tok"


def test_unreachable_after_all_retries() -> None:
    script = Script(*[httpx.ConnectError("refused")] * 3)
    sleeps: list[float] = []
    with pytest.raises(CloudUnreachable) as error:
        _client(script, sleeps, retries=2).me()
    assert "http://cloud.test" in error.value.message
    assert sleeps == [0.5, 1.0]
    assert len(script.requests) == 3


def test_5xx_after_all_retries_is_a_cloud_error() -> None:
    script = Script(*[_error(500, "internal", "boom")] * 2)
    with pytest.raises(CloudError) as error:
        _client(script, [], retries=1).me()
    assert type(error.value) is CloudError
    assert "500" in error.value.message


@pytest.mark.parametrize(
    ("status", "kind"),
    [(401, CloudUnauthorized), (403, CloudRefused), (409, CloudRefused), (422, CloudError)],
)
def test_4xx_is_mapped_and_never_retried(status: int, kind: type[Exception]) -> None:
    script = Script(_error(status, "x", "the server's message"))
    sleeps: list[float] = []
    with pytest.raises(kind) as error:
        _client(script, sleeps).claim_owner(
            wire.OwnerClaim(item_id="i", machine_id="m", computer_name="c")
        )
    assert type(error.value) is kind
    assert error.value.message.endswith("the server's message")  # type: ignore[attr-defined]
    assert sleeps == [] and len(script.requests) == 1


def test_request_body_is_the_wire_model() -> None:
    answer = {
        "status": "owner",
        "owner": {
            "item_id": "i",
            "epoch": 1,
            "machine_id": "m",
            "computer_name": "c",
            "person": "p",
            "since": "2025-01-06T09:00:00Z",
            "release": None,
        },
    }
    script = Script(httpx.Response(200, json=answer))
    got = _client(script, []).claim_owner(
        wire.OwnerClaim(item_id="i", machine_id="m", computer_name="c")
    )
    assert got.granted and got.owner.since == datetime(2025, 1, 6, 9, tzinfo=UTC)
    request = script.requests[0]
    assert (request.method, request.url.path) == ("POST", "/v1/owners/claim")
    assert json.loads(request.content) == {"item_id": "i", "machine_id": "m", "computer_name": "c"}


def test_unexpected_answer_is_a_cloud_error() -> None:
    script = Script(httpx.Response(200, json={"person": 1}))
    with pytest.raises(CloudError):
        _client(script, []).me()


def test_bad_item_id_is_refused_before_sending() -> None:
    script = Script()
    with pytest.raises(UserError):
        _client(script, []).get_owner("../etc")
    assert script.requests == []


def test_async_client_retries_the_same_way() -> None:
    script = Script(httpx.ConnectError("refused"), httpx.Response(200, json=ME))
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async def run() -> wire.Me:
        async with AsyncCloudClient(
            "http://cloud.test",
            "bees.tok",
            transport=httpx.MockTransport(script),
            backoff=0.25,
            sleep=sleep,
        ) as api:
            return await api.me()

    assert asyncio.run(run()).team == "acme"
    assert sleeps == [0.25]


def test_server_clock_and_skew_over_http(clocked_server: ThreadServer) -> None:
    """The server's clock is injected: times in answers are exact, skew is exact."""
    storage, clock = clocked_server.storage, clocked_server.clock
    storage.add_team("acme")
    token = storage.add_person("maya@example.com", "acme")
    local = iter(
        [clock.now - timedelta(seconds=12), clock.now - timedelta(seconds=10)]
    )  # we are 11 s behind, round trip 2 s
    with CloudClient(clocked_server.url, token, clock=lambda: next(local)) as api:
        assert api.server_time() == datetime(2025, 1, 6, 8, 59, 30, tzinfo=UTC)
        skew = api.skew()
        assert (skew.skew_seconds, skew.round_trip_seconds) == (11.0, 2.0)
        clock.advance(30)
        granted = api.claim_key(
            wire.KeyClaim(
                schedule_id="s",
                scheduled_time="2025-01-06T09:00:00Z",
                machine_id="m",
                computer_name="c",
            )
        )
        assert granted.granted_at == datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
        owned = api.claim_owner(wire.OwnerClaim(item_id="i", machine_id="m", computer_name="c"))
        clock.advance(90)
        released = api.release_owner(
            "i", wire.OwnerRelease(machine_id="m", checkpoint_sha256="0" * 64)
        )
    assert owned.owner.since == datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
    assert released.release is not None
    assert released.release.released_at == datetime(2025, 1, 6, 9, 1, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://[::1", "invalid IPv6 URL"),
        ("http://127.0.0.1:abc", "the port must be a number from 1 to 65535"),
        ("http://127.0.0.1:99999", "the port must be a number from 1 to 65535"),
        ("http://127.0.0.1:0", "the port must be a number from 1 to 65535"),
        ("ftp://cloud.example.com", "the scheme must be http or https"),
        ("cloud.example.com", "the scheme must be http or https"),
        ("http://:8765", "no host"),
    ],
)
def test_a_bad_base_url_fails_each_call_not_the_constructor(url: str, problem: str) -> None:
    script = Script()
    with CloudClient(url, "t", transport=httpx.MockTransport(script)) as api:
        with pytest.raises(CloudUnreachable) as caught:
            api.me()
    assert caught.value.message == (
        f"cannot reach Bees Cloud: the stored URL is not valid: {url} ({problem})"
    )
    assert caught.value.hint is not None and "bees logout" in caught.value.hint
    assert script.requests == []

    async def call() -> None:
        async with AsyncCloudClient(url, "t", transport=httpx.MockTransport(script)) as api:
            await api.me()

    with pytest.raises(CloudUnreachable):
        asyncio.run(call())


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8765", "https://cloud.example.com/", "http://[::1]:80", "http://h"]
)
def test_good_urls_pass_the_check(url: str) -> None:
    assert check_url(f" {url} ") == url.rstrip("/")


def test_unreachable_hint_does_not_point_at_status_itself() -> None:
    script = Script(httpx.ConnectError("refused"))
    with pytest.raises(CloudUnreachable) as caught:
        _client(script, [], retries=0).me()
    assert caught.value.hint == "is the server up? check the URL with `bees login URL --with-token`"


def test_both_clients_offer_the_same_calls_with_the_same_parameters() -> None:
    import inspect

    def calls(cls: type) -> dict[str, list[str]]:
        return {
            name: list(inspect.signature(member).parameters)
            for name, member in vars(cls).items()
            if inspect.isfunction(member) and not name.startswith("_") and "close" not in name
        }

    sync, async_ = calls(CloudClient), calls(AsyncCloudClient)
    assert sync == async_
    assert sorted(sync) == [
        "call", "claim_key", "claim_owner", "get_owner", "held_keys", "key_disagreements",
        "leave_offer", "list_owners", "make_offer", "me", "offers", "owner_history", "pull",
        "pull_all", "push", "release_owner", "repair_owner", "report_key_item", "runner_heard",
        "runners", "server_time", "skew",
    ]  # fmt: skip
    assert all(inspect.iscoroutinefunction(getattr(AsyncCloudClient, name)) for name in async_)

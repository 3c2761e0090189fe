"""A model stage that waits says so (issue 23, point 7): rate limited by the model's server
until HH:MM, or retrying a failed model call (try N of M), in ``bees status``, ``bees item
show`` (text and ``--json``) and the app's item page; cleared once the call succeeds. The
hour a ``Retry-After: 3600`` asks for passes on the time-skipping server."""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from bees_cli.agents.action_call import ActionCallInput
from bees_cli.app.security import Guard
from bees_cli.app.server import create_app
from bees_cli.engine.client import EngineGateway
from bees_cli.engine.model_loop import MODEL_CALL_RETRY
from bees_cli.engine.model_shown import backoff, next_try, tries_of
from bees_cli.engine.models import task_queue
from bees_cli.engine.worker import make_worker
from bees_cli.errors import ModelError, ModelRateLimited, ModelUnauthorized, ModelUnavailable
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.machine.paths import data_dir
from bees_cli.record.local import LocalRecord
from bees_cli.record.pieces import Piece, PieceStatus
from bees_cli.record.views import clock_words
from bees_cli.usecases.bees import Bees
from bees_cli.usecases.delegate import delegate_tool_call
from bees_cli.usecases.item_details import ItemDetails
from bees_cli.usecases.liveness import note_worker
from bees_cli.utc import display_utc, parse_utc, utc_now
from tests.agents.model_server import Answer, ScriptedServer, serve
from tests.app.conftest import HOST, ORIGIN, PORT, TestClient
from tests.conftest import BeesRunner
from tests.engine.conftest import Space, until
from tests.engine.test_model_loop import model_agent
from tests.engine.test_pieces import DRAFT
from tests.engine.test_rules import SEND, start
from tests.support import wait


@pytest.fixture
def model_server() -> Iterator[ScriptedServer]:
    with serve() as server:
        yield server


def waiting_addon(space: Space, started: Path, go: Path) -> None:
    """Declare add-on ``probe`` whose read action ``wait`` says it started (``started``),
    then waits until ``go`` exists (at most 120 s)."""
    code = (f"import pathlib, time; pathlib.Path({str(started)!r}).write_text('x'); "
            f"[time.sleep(0.05) for _ in range(2400) if not pathlib.Path({str(go)!r}).exists()]")
    space.write("addons/probe.yaml", "actions:\n  wait:\n    kind: read\n"
                f"    command: {json.dumps([sys.executable, '-c', code])}\n")


async def details(item_id: str) -> dict[str, Any]:
    shown = await Bees(Computer.load()).item_details(item_id)
    assert isinstance(shown, ItemDetails)
    return shown.item.model_dump(mode="json")


def app_status(space: Space, item_id: str) -> tuple[str, str | None]:
    """Return the status word and its detail on the app's item page."""
    guard = Guard(port=PORT, host=HOST)
    app = create_app(Bees(Computer.load()), guard, workspace=space.root)
    with TestClient(app, base_url=ORIGIN, follow_redirects=False) as client:
        assert client.get(f"/?secret={guard.secret}").status_code == 303
        html = client.get(f"/items/{item_id}").text
    word = re.search(r'<span data-testid="item-status"[^>]*>([^<]*)</span>', html)
    said = re.search(r'<span data-testid="item-status-detail"[^>]*> — ([^<]*)</span>', html)
    assert word is not None, html
    return word.group(1), None if said is None else said.group(1)


async def test_a_rate_limited_then_failing_model_call_shows_its_wait_until_it_succeeds(
        skip_env: WorkflowEnvironment, space: Space, record: LocalRecord, bees: BeesRunner,
        model_server: ScriptedServer, tmp_path: Path) -> None:
    started, go = tmp_path / "started", tmp_path / "go"
    waiting_addon(space, started, go)
    model_agent(space, "sender", model_server, tools=["probe.wait"])
    space.write("processes/p.yaml", SEND.format(approval="none"))
    hold = threading.Event()
    model_server.model.push(
        Answer.error(429, "slow down", headers={"Retry-After": "3600"}),
        Answer.error(500, "boom"),
        Answer.tool_calls(("c1", "probe__wait", "{}")).held(hold),
        Answer.reply("all done"))
    port = model_server.base_url.split(":")[2].split("/")[0]
    server = f"127.0.0.1:{port}"
    chat = f"http://{server}/v1/chat/completions"
    set_identity(person="maya@example.com")
    queue = task_queue(load_identity().machine_id)
    note_worker(data_dir(), skip_env.client.service_client.config.target_host, queue)
    computer = Computer.load()
    here = Bees(computer, engine=EngineGateway(skip_env.client))

    async def act(call: ActionCallInput) -> Any:
        return await here.call_action(call)

    async with make_worker(skip_env.client, queue, record, computer=computer,
                           heartbeat_every=0.5, act=act):
        before = utc_now()
        item_id = await start(skip_env, record, space, "p")
        # 1. HTTP 429 with Retry-After 3600: the stage waits an hour, and says so
        row = await until(record, item_id, lambda r: r.status == "waiting")
        after = utc_now()
        shown = await details(item_id)
        wait_until = parse_utc(shown["model_retry"]["until"])
        assert before + timedelta(seconds=3599) <= wait_until <= after + timedelta(seconds=3601)
        # HH:MM in this computer's time zone (with the date when that is not today's)
        words = f"rate limited by {server} until {clock_words(wait_until, after)}"
        assert (row.status_text, row.wait) == (f"waiting: {words}", "model")
        listed = bees("status", "--mine", "--wide")
        assert listed.returncode == 0, listed.stderr
        (line,) = [ln for ln in listed.stdout.splitlines() if ln.startswith(item_id)]
        assert f"  waiting: {words}  " in line
        text = bees("item", "show", item_id).stdout.splitlines()
        assert f"status      waiting: {words}" in text
        as_json = json.loads(bees("item", "show", item_id, "--json").stdout)["item"]
        limited = {"why": "rate_limited", "server": server, "try_number": 2, "tries": 5,
                   "until": display_utc(wait_until),
                   "error": f"{chat} asked to slow down (HTTP 429, Retry-After 3600 s): "
                            "slow down"}
        assert (as_json["status"], as_json["wait"], as_json["reason"]) == (
            "waiting", "model", words)
        assert as_json["model_retry"] == limited
        (mine,) = [i for i in json.loads(bees("status", "--mine", "--json").stdout)["items"]
                   if i["item_id"] == item_id]
        assert mine["model_retry"] == limited
        assert app_status(space, item_id) == ("waiting", words)
        assert len(model_server.model.received) == 1  # honoured: no burst

        # 2. an hour later, try 2 answers HTTP 500; try 3 (held) says it is a retry
        await skip_env.sleep(timedelta(hours=1))
        retrying = "retrying model call, try 3 of 5"
        row = await until(record, item_id, lambda r: r.status_text == f"running: {retrying}",
                          timeout=60)
        # the status says try 3 runs before its request reaches the server
        await wait.until(lambda: len(model_server.model.received) >= 3,
                         lambda: f"{len(model_server.model.received)} requests")
        assert len(model_server.model.received) == 3
        shown = await details(item_id)
        assert shown["model_retry"] == {
            "why": "unavailable", "server": server, "try_number": 3, "tries": 5,
            "until": None, "error": f"{chat} failed (HTTP 500): boom"}
        text = bees("item", "show", item_id).stdout.splitlines()
        assert f"status      running: {retrying}" in text
        assert app_status(space, item_id) == ("running", retrying)

        # 3. try 3 succeeds: the wait is gone while the tool it asked for runs
        hold.set()
        await wait.until(started.exists, "the tool never started")
        row = record.item(item_id)
        assert (row.status_text, row.wait) == ("running", None)
        assert (await details(item_id))["model_retry"] is None
        assert app_status(space, item_id) == ("running", None)
        go.write_text("go")
        assert await skip_env.client.get_workflow_handle(item_id).result() == "done"
    assert len(model_server.model.received) == 4


NOW = datetime(2026, 12, 1, 13, 0, 0, tzinfo=UTC)
URL = "http://127.0.0.1:8080/v1/chat/completions"


@pytest.mark.parametrize(("error", "attempt", "expected"), [
    (ModelRateLimited(f"{URL} asked to slow down", retryable=True, retry_after=3600.0), 1,
     {"why": "rate_limited", "try_number": 2, "until": "2026-12-01T14:00:00Z"}),
    (ModelRateLimited(f"{URL} asked to slow down", retryable=True), 3,
     {"why": "rate_limited", "try_number": 4, "until": "2026-12-01T13:00:04Z"}),
    (ModelUnavailable(f"{URL} failed (HTTP 500)", retryable=True), 1,
     {"why": "unavailable", "try_number": 2, "until": "2026-12-01T13:00:01Z"}),
    (ModelUnavailable(f"{URL} did not answer within 60 s", retryable=True), 2,
     {"why": "unavailable", "try_number": 3, "until": "2026-12-01T13:00:02Z"}),
    (ModelUnavailable(f"{URL} failed (HTTP 500)", retryable=True), 5, None),
    (ModelUnauthorized(f"{URL} refused the key"), 1, None),
])
def test_the_next_try_of_a_failed_model_call_is_when_temporal_retries_it(
        error: ModelError, attempt: int, expected: dict[str, Any] | None) -> None:
    found = next_try(error, attempt=attempt, policy=MODEL_CALL_RETRY, server="127.0.0.1:8080",
                     now=NOW)
    if expected is None:
        assert found is None
        return
    assert found is not None
    assert found.model_dump(mode="json") == {
        **expected, "server": "127.0.0.1:8080", "tries": 5, "error": str(error)}


def test_the_backoff_between_tries_is_the_retry_policys() -> None:
    assert [backoff(MODEL_CALL_RETRY, n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    assert backoff(None, 1) == 1.0 and backoff(None, 12) == 100.0  # Temporal's defaults
    assert tries_of(MODEL_CALL_RETRY) == 5 and tries_of(None) is None
    assert next_try(ModelUnavailable("x", retryable=True), attempt=40, policy=None, server="s",
                    now=NOW) is not None  # no limit: tried again


async def test_a_pieces_model_call_that_waits_says_so_on_the_pieces_row(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        model_server: ScriptedServer) -> None:
    model_agent(space, "writer", model_server)
    model_agent(space, "alpha", model_server)
    space.write("processes/p.yaml", DRAFT.format(approval="none"))
    hold = threading.Event()
    model_server.model.push(
        Answer.tool_calls(("c1", "delegate", json.dumps({"agent": "alpha", "task": "figures"}))),
        Answer.error(429, "slow down", headers={"Retry-After": "4"}),
        Answer.reply("42").held(hold),
        Answer.reply("draft: 42"))
    server = "127.0.0.1:" + model_server.base_url.split(":")[2].split("/")[0]
    set_identity(person="maya@example.com")
    queue = task_queue(load_identity().machine_id)
    note_worker(data_dir(), dev_env.client.service_client.config.target_host, queue)
    here = Bees(Computer.load(), engine=EngineGateway(dev_env.client))

    async def delegate(arguments: dict[str, Any], env: dict[str, str]) -> str:
        return await delegate_tool_call(here, arguments, env)

    def piece() -> Piece | None:
        found = record.pieces(item_id)
        return found[0] if found else None

    async with make_worker(dev_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5, delegate=delegate):
        item_id = await start(dev_env, record, space, "p")
        seen: list[tuple[str, str | None]] = []
        def retrying() -> bool:  # the piece's first try is refused for 4 s; its second is held
            found = piece()
            if found is not None and (found.status, found.reason) not in seen:
                seen.append((found.status, found.reason))
            return bool(found is not None and found.reason
                        and found.reason.startswith("retrying"))

        await wait.until(retrying, lambda: f"the piece never retried: {seen}")
        waiting = [reason for status, reason in seen if status == PieceStatus.WAITING
                   and reason is not None]  # (a new piece waits for its pick, no reason)
        assert len(waiting) == 1
        assert re.fullmatch(rf"rate limited by {re.escape(server)} until "
                            r"(\d{4}-\d\d-\d\d )?\d\d:\d\d", waiting[0])
        assert seen[-1] == (PieceStatus.RUNNING, "retrying model call, try 2 of 5")
        assert record.item(item_id).status_text == "running"  # the stage waits on its piece
        hold.set()
        assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    found = piece()
    assert found is not None and (found.status, found.reason) == (PieceStatus.FINISHED, None)

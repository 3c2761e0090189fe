"""The one error boundary (issue 10, point 7): errors mapped once, JSON mode from the parsed
option, RPC errors by status, connection retries only for connection failures, background
loops that keep tracebacks and go on."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
import typer
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from bees_cli.cli.errors import error_boundary
from bees_cli.engine import client as engine_client
from bees_cli.engine.background import supervise
from bees_cli.engine.client import connect, rpc_error
from bees_cli.errors import EngineError, NotFound, Refused
from tests.conftest import BeesRunner


def test_json_mode_comes_from_the_parsed_option(capsys: pytest.CaptureFixture[str]) -> None:
    @error_boundary
    def command(item: str, as_json: bool = False) -> None:
        raise Refused(f"item {item} is owned by maya-desktop", hint="ask there")

    with pytest.raises(typer.Exit) as exit_json:
        command("01J", as_json=True)
    out, err = capsys.readouterr()
    assert exit_json.value.exit_code == 3
    assert json.loads(out) == {"version": 1, "error": {
        "code": "refused", "hint": "ask there", "message": "item 01J is owned by maya-desktop"}}
    assert err == ""

    with pytest.raises(typer.Exit) as exit_text:
        command("01J", as_json=False)
    out, err = capsys.readouterr()
    assert exit_text.value.exit_code == 3
    assert out == ""
    assert err == "error: item 01J is owned by maya-desktop\nhint: ask there\n"


def test_not_found_exits_1_and_a_bug_keeps_its_traceback_only_under_debug(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    @error_boundary
    def missing(as_json: bool = False) -> None:
        raise NotFound("no work item 'X' on this computer")

    @error_boundary
    def buggy(as_json: bool = False) -> None:
        raise KeyError("status")

    with pytest.raises(typer.Exit) as exit_info:
        missing()
    assert exit_info.value.exit_code == 1
    monkeypatch.delenv("BEES_DEBUG", raising=False)
    with pytest.raises(typer.Exit) as bug_exit:
        buggy(as_json=True)
    assert bug_exit.value.exit_code == 1
    assert json.loads(capsys.readouterr().out) == {"version": 1, "error": {
        "code": "bug", "message": "unexpected KeyError: 'status'",
        "hint": "run it again with bees --debug to see the traceback, and report it"}}
    monkeypatch.setenv("BEES_DEBUG", "1")
    with pytest.raises(KeyError):
        buggy()


@pytest.mark.parametrize(("status", "kind", "message"), [
    (RPCStatusCode.NOT_FOUND, Refused,
     "item 01J: its run is over or unknown to the engine (workflow not found)"),
    (RPCStatusCode.UNAVAILABLE, EngineError,
     "the engine answered UNAVAILABLE about item 01J: workflow not found"),
    (RPCStatusCode.RESOURCE_EXHAUSTED, EngineError,
     "the engine answered RESOURCE_EXHAUSTED about item 01J: workflow not found"),
])
def test_rpc_errors_are_mapped_by_status(status: RPCStatusCode, kind: type, message: str) -> None:
    error = rpc_error(RPCError("workflow not found", status, b""), "01J")
    assert type(error) is kind
    assert error.message == message
    assert error.exit_code == (3 if kind is Refused else 1)


async def test_connect_retries_connection_failures_and_surfaces_a_bug_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    async def refused(address: str, **_: object) -> Client:
        calls.append(address)
        raise RuntimeError("Failed client connect: Server connection error: refused")

    monkeypatch.setattr(engine_client.Client, "connect", refused)
    with pytest.raises(EngineError) as unreachable:
        await connect("127.0.0.1:1", timeout=0.25)
    assert unreachable.value.message == ("cannot reach the Temporal engine at 127.0.0.1:1: "
                                         "Failed client connect: Server connection error: "
                                         "refused")
    assert len(calls) >= 2

    async def bug(address: str, **_: object) -> Client:
        calls.append("bug")
        raise TypeError("unexpected keyword argument 'runtime'")

    calls.clear()
    monkeypatch.setattr(engine_client.Client, "connect", bug)
    with pytest.raises(TypeError):
        await connect("127.0.0.1:1", timeout=5)
    assert calls == ["bug"]


async def test_a_background_loop_logs_the_traceback_of_a_bug_and_runs_again(
        caplog: pytest.LogCaptureFixture) -> None:
    runs: list[int] = []
    said: list[str] = []

    async def loop() -> None:
        runs.append(len(runs) + 1)
        if len(runs) == 1:
            raise ZeroDivisionError("division by zero")

    with caplog.at_level(logging.ERROR, logger="bees_cli.engine.background"):
        await asyncio.wait_for(supervise("shared record", loop, asyncio.Event(), said.append,
                                         restart_after=0), timeout=5)
    assert runs == [1, 2]
    assert said == ["shared record: unexpected error (see the log), running again in 0 s: "
                    "ZeroDivisionError('division by zero')"]
    [logged] = caplog.records
    assert logged.getMessage() == "shared record: the loop stopped on an unexpected error"
    assert logged.exc_info is not None and logged.exc_info[0] is ZeroDivisionError


def test_the_cli_reads_json_mode_from_the_parsed_options(bees: BeesRunner,
                                                         tmp_path: Path) -> None:
    missing = bees("item", "show", "01ZZZZ", "--json")
    assert missing.returncode == 1, missing.stderr
    assert json.loads(missing.stdout) == {"version": 1, "error": {
        "code": "not_found", "message": "no work item '01ZZZZ' on this computer",
        "hint": "`bees status` lists this computer's items"}}
    # "--json" here is the title, not the option: the error is text on stderr
    titled = bees("item", "create", "p", "--title", "--json", "-w", str(tmp_path / "none"))
    assert titled.returncode == 2
    assert titled.stdout == ""
    assert titled.stderr.startswith("error: ")

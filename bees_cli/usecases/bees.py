"""The application object: one computer's record, cloud clients and engine, and every use case.

Why (STYLE habit 17): built once from an explicit :class:`Computer` at the CLI edge (or
by a test, or the worker), it holds everything a use case needs, so two computers can
live side by side in one process and the worker's event loop or a web handler can call
the same use cases. Use cases are ``async``, take and return typed models and raise only
the :mod:`bees_cli.errors` tree.
"""

from __future__ import annotations

import getpass
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.errors import EngineError
from bees_cli.machine.computer import Computer
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.local import LocalRecord

if TYPE_CHECKING:
    from bees_cli.agents.action_call import ActionCallInput
    from bees_cli.agents.mcp_sessions import McpSessions
    from bees_cli.cloud import wire
    from bees_cli.cloud.client import AsyncCloudClient
    from bees_cli.engine.client import EngineGateway
    from bees_cli.handover.checkpoint import Progress
    from bees_cli.handover.continue_ import Continued
    from bees_cli.handover.relinquish import Relinquished
    from bees_cli.handover.repair import Repaired
    from bees_cli.usecases.delegate import DelegateOutcome
    from bees_cli.usecases.demo import Ask, DemoOutcome
    from bees_cli.usecases.item_details import ItemDetails
    from bees_cli.usecases.models import (
        ActionOutcome,
        ApprovalRow,
        CancelDone,
        CreatedItem,
        DecideDone,
        DoctorReport,
        PersonDone,
        ScheduleRow,
        StatusView,
        TeamItemDetails,
    )
    from bees_cli.usecases.watch import Seen

Say = Callable[[str], None]

ENGINE_CONNECT_TIMEOUT = 5.0
"""Seconds a use case keeps trying to reach an engine its computer says is up."""


def _quiet(_: str) -> None:
    return None


class Bees:
    """One computer's application: its local record, a cloud-client factory, an engine gateway.

    Args:
        computer: this computer (paths, identity, sign-in).
        say: where use cases say one-line news (the CLI: stderr).
        engine: an already-connected engine gateway (``bees run``, tests), else one is
            connected lazily, once, to the engine this computer runs.
    """

    def __init__(self, computer: Computer, *, say: Say = _quiet,
                 engine: EngineGateway | None = None) -> None:
        self.computer = computer
        self.record = LocalRecord(computer.record_path)
        """The local record, synchronous: for code that runs in a thread, and for tests."""
        self.async_record = AsyncRecord(self.record)
        """The same record for the use cases: each call awaited, run in a thread, so the
        event loop never waits for SQLite (:mod:`bees_cli.record.aio`)."""
        self.say = say
        self._engine = engine
        self.mcp_sessions: McpSessions | None = None
        """The local MCP servers ``bees run`` holds for its stages (None elsewhere: a server
        per call)."""

    # -- dependencies -----------------------------------------------------------------

    def cloud(self, *, retries: int = 0, timeout: float = 5.0) -> AsyncCloudClient | None:
        """Return a new async cloud client for this computer's sign-in, or None without one."""
        from bees_cli.cloud.client import cloud_for  # httpx: off the path of bees status

        return cloud_for(self.computer, retries=retries, timeout=timeout)

    def who(self) -> str:
        """Return who acts here: the person signed in on this computer, else the OS user."""
        return self.computer.person or getpass.getuser()

    def worker_address(self) -> str | None:
        """Return the engine address of this computer's live ``bees run``, or None; waits up
        to :data:`~bees_cli.usecases.liveness.STARTING_WAIT` s for one that is starting."""
        from bees_cli.usecases.liveness import STARTING_WAIT, running_worker

        return running_worker(self.computer.data_dir, wait=STARTING_WAIT)

    def bees_run_running(self) -> bool:
        """Return whether this computer's ``bees run`` is alive now (no wait)."""
        from bees_cli.usecases.liveness import bees_run_state

        return bees_run_state(self.computer.data_dir).running

    def engine_address(self) -> str | None:
        """Return the address of the engine this computer runs now (``bees run``'s, else the
        embedded server's), or None."""
        from bees_cli.engine.server import running_engine

        address = self.worker_address()
        if address is not None:
            return address
        engine = running_engine(self.computer.data_dir)
        return None if engine is None else engine.address

    @property
    def has_engine(self) -> bool:
        """True once an engine gateway is connected (or was given)."""
        return self._engine is not None

    def use_engine(self, engine: EngineGateway) -> None:
        """Use ``engine`` from now on (``bees run`` connects it itself)."""
        self._engine = engine

    async def engine(self, address: str | None = None) -> EngineGateway:
        """Return the engine gateway, connecting once (lazily) to ``address`` or the engine
        this computer runs.

        Raises:
            EngineError: no engine runs here, or it does not answer.
        """
        if self._engine is None:
            from bees_cli.engine.client import EngineGateway, connect

            address = address or self.engine_address()
            if address is None:
                from bees_cli.usecases.control import NOT_UP

                raise EngineError(NOT_UP, hint="start it with `bees run`")
            self._engine = EngineGateway(await connect(address,
                                                       timeout=ENGINE_CONNECT_TIMEOUT))
        return self._engine

    # -- use cases ----------------------------------------------------------------------

    async def run(self, *, workspace_path: Path | None, address: str | None,
                  exit_when_idle: bool, heartbeat_every: float = 2.0,
                  runner_pool: str | None = None, runner_every: float | None = None,
                  runner_slots: int = 1) -> int:
        """``bees run`` (``--runner POOL``: a runner of the pool, :mod:`.runners`): see
        :func:`bees_cli.usecases.run._run_bees`."""
        from bees_cli.usecases.run import _run_bees

        return await _run_bees(self, workspace_path=workspace_path, address=address,
                                exit_when_idle=exit_when_idle,
                                heartbeat_every=heartbeat_every, runner_pool=runner_pool,
                                runner_every=runner_every, runner_slots=runner_slots)

    async def create_item(self, workspace_path: Path | None, process: str, *,
                          title: str | None = None, agents: list[str] | None = None,
                          folders: list[str] | None = None,
                          made: Callable[[str], None] | None = None) -> CreatedItem:
        """``bees item create``: see :func:`bees_cli.usecases.items._create`."""
        from bees_cli.usecases.items import _create

        return await _create(self, workspace_path, process, title=title, agents=agents or [],
                            folders=folders or [], made=made)

    async def wait_for_item(self, item_id: str, *, timeout: float | None = None,
                            poll: float = 0.2) -> int:
        """``bees item create --wait``: see :func:`bees_cli.usecases.watch._wait_for_item`."""
        from bees_cli.usecases.watch import _wait_for_item

        return await _wait_for_item(self, item_id, timeout=timeout, poll=poll)

    def watch_item(self, item_id: str, *, until_waiting: bool = False,
                   poll: float = 0.5) -> AsyncIterator[Seen]:
        """``bees item watch``: see :func:`bees_cli.usecases.watch._watch_item`."""
        from bees_cli.usecases.watch import _watch_item

        return _watch_item(self.async_record, item_id, until_waiting=until_waiting, poll=poll)

    async def status(self, *, mine: bool = False, limit: int | None = None,
                     statuses: Sequence[str] | None = None,
                     exact: bool = True) -> StatusView:
        """``bees status``: see :func:`bees_cli.usecases.items._status`."""
        from bees_cli.usecases.items import _status

        return await _status(self, mine=mine, limit=limit, statuses=statuses, exact=exact)

    async def item_details(self, item_id: str) -> ItemDetails | TeamItemDetails:
        """``bees item show``: see :func:`bees_cli.usecases.items._item_details`."""
        from bees_cli.usecases.items import _item_details

        return await _item_details(self, item_id)

    def item_details_now(self, item_id: str) -> ItemDetails | TeamItemDetails:
        """``bees item show`` without an event loop (the CLI: no asyncio on its path, issue
        29 point 3): see :func:`bees_cli.usecases.items._item_details_now`."""
        from bees_cli.usecases.items import _item_details_now

        return _item_details_now(self, item_id)

    async def retry(self, item_id: str) -> PersonDone:
        """``bees retry``: see :func:`bees_cli.usecases.control._person_request`."""
        from bees_cli.usecases.control import _person_request

        return await _person_request(self, item_id, "retry")

    async def accept(self, item_id: str) -> PersonDone:
        """``bees item accept``: see :func:`bees_cli.usecases.control._person_request`."""
        from bees_cli.usecases.control import _person_request

        return await _person_request(self, item_id, "accept")

    async def cancel(self, item_id: str) -> CancelDone:
        """``bees item cancel``: see :func:`bees_cli.usecases.control._cancel_item`."""
        from bees_cli.usecases.control import _cancel_item

        return await _cancel_item(self, item_id)

    async def approvals(self) -> list[ApprovalRow]:
        """``bees approvals``: see :func:`bees_cli.usecases.approvals._waiting_approvals`."""
        from bees_cli.usecases.approvals import _waiting_approvals

        return await _waiting_approvals(self)

    async def approvals_of(self, item_id: str, *,
                           request_id: int | None = None) -> list[ApprovalRow]:
        """``bees approvals show``: see :func:`bees_cli.usecases.approvals._item_approvals`."""
        from bees_cli.usecases.approvals import _item_approvals

        return await _item_approvals(self, item_id, request_id=request_id)

    async def decide(self, item_id: str, *, approve: bool, request_id: int | None = None,
                     reason: str | None = None, answer: str | None = None,
                     input_text: str | None = None) -> DecideDone:
        """``bees approve`` / ``bees deny``: see :func:`bees_cli.usecases.approvals._decide`."""
        from bees_cli.usecases.approvals import _decide

        return await _decide(self, item_id, approve=approve, request_id=request_id,
                            reason=reason, answer=answer, input_text=input_text)

    async def action(self, name: str, input_text: str | None, *,
                     env: dict[str, str]) -> ActionOutcome:
        """``bees action``: see :func:`bees_cli.usecases.actions._run_action`."""
        from bees_cli.usecases.actions import _run_action

        return await _run_action(self, name, input_text, env=env)

    async def call_action(self, call: ActionCallInput) -> ActionOutcome:
        """A model agent's add-on tool call, typed, through the same gate as ``bees action``
        (a held one waits on the run): see :func:`bees_cli.usecases.actions._call_action`."""
        from bees_cli.usecases.actions import _call_action

        return await _call_action(self, call)

    async def delegate(self, agent: str, task: str, data: Any, *,
                       env: dict[str, str]) -> DelegateOutcome:
        """``bees delegate``: see :func:`bees_cli.usecases.delegate._run_delegate`."""
        from bees_cli.usecases.delegate import _run_delegate

        return await _run_delegate(self, agent, task, data, env=env)

    async def relinquish(self, item_id: str, *, timeout: float | None = None) -> Relinquished:
        """``bees relinquish``: see :func:`bees_cli.usecases.handover._relinquish`."""
        from bees_cli.usecases.handover import _relinquish

        return await _relinquish(self, item_id, timeout=timeout)

    def offer_to_pool(self, done: Relinquished, pool: str) -> wire.Offer:
        """``bees relinquish --to POOL``: see :func:`bees_cli.usecases.runners.offer_to_pool`."""
        from bees_cli.usecases.runners import offer_to_pool

        return offer_to_pool(self, done, pool)

    async def create_offered(self, workspace_path: Path | None, process: str, pool: str, *,
                             title: str | None = None, agents: list[str] | None = None,
                             folders: list[str] | None = None,
                             made: Callable[[str], None] | None = None,
                             ) -> tuple[CreatedItem, Relinquished, wire.Offer]:
        """``bees item create --on POOL``: see
        :func:`bees_cli.usecases.offered._create_offered`."""
        from bees_cli.usecases.offered import _create_offered

        return await _create_offered(self, workspace_path, process, pool, title=title,
                                    agents=agents or [], folders=folders or [], made=made)

    async def runners(self) -> wire.RunnerList:
        """``bees runners``: see :func:`bees_cli.usecases.runners._list_runners`."""
        import asyncio

        from bees_cli.usecases.runners import _list_runners

        return await asyncio.to_thread(_list_runners, self)

    async def offers(self, pool: str | None, *, only_open: bool) -> list[wire.Offer]:
        """``bees offers``: see :func:`bees_cli.usecases.runners._list_offers`."""
        import asyncio

        from bees_cli.usecases.runners import _list_offers

        return await asyncio.to_thread(_list_offers, self, pool, only_open=only_open)

    async def repair_release(self, item_id: str) -> Repaired:
        """``bees relinquish --repair``: see :func:`bees_cli.usecases.handover._repair_release`."""
        from bees_cli.usecases.handover import _repair_release

        return await _repair_release(self, item_id)

    async def continue_item(self, item_id: str, *, from_dir: Path | None = None,
                            digest: str | None = None, workspace_path: Path | None = None,
                            progress: Progress | None = None) -> Continued:
        """``bees continue``: see :func:`bees_cli.usecases.handover._continue_item`."""
        from bees_cli.usecases.handover import _continue_item

        return await _continue_item(self, item_id, from_dir=from_dir, digest=digest,
                                   workspace_path=workspace_path, progress=progress)

    async def doctor(self, workspace_path: Path | None) -> DoctorReport:
        """``bees doctor``: see :func:`bees_cli.usecases.doctor._doctor_report`."""
        from bees_cli.usecases.doctor import _doctor_report

        return await _doctor_report(self, workspace_path)

    async def demo(self, *, ask: Ask, folder: Path | None = None,
                   model_url: str | None = None, threads: int | None = None) -> DemoOutcome:
        """``bees demo``: see :func:`bees_cli.usecases.demo._demo`."""
        from bees_cli.usecases.demo import _demo

        return await _demo(self, ask=ask, folder=folder, model_url=model_url, threads=threads)

    async def schedules(self, workspace_path: Path | None) -> list[ScheduleRow]:
        """``bees schedules``: see :func:`bees_cli.usecases.doctor._schedules_report`."""
        from bees_cli.usecases.doctor import _schedules_report

        return await _schedules_report(self, workspace_path)

"""The engine gateway: connect to Temporal (pydantic converter), start runs, map RPC errors."""

from __future__ import annotations

import asyncio
import functools
from datetime import timedelta

from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.service import RPCError, RPCStatusCode

from bees_cli.engine.models import STATE_QUERY, WORKFLOW_NAME, ItemInput, RunView
from bees_cli.errors import BeesError, EngineError, Refused

CONNECT_TIMEOUT = 15.0
"""Seconds to keep trying to reach a Temporal server that is starting."""

QUERY_TIMEOUT = timedelta(seconds=30)
"""How long a run may take to answer a query (a closed run is replayed by the worker first)."""


@functools.cache
def quiet_runtime() -> Runtime:
    """Return this process's Temporal runtime, its core logging only errors (made once).

    Why: the SDK core warns on stderr about routine events after a restart (a workflow
    task that timed out while no worker ran), which reads like a failure to a user.
    """
    logging = LoggingConfig(filter=TelemetryFilter(core_level="ERROR", other_level="ERROR"))
    return Runtime(telemetry=TelemetryConfig(logging=logging))


async def connect(address: str, *, timeout: float = CONNECT_TIMEOUT) -> Client:
    """Connect to the Temporal server at ``address`` (``host:port``), namespace ``default``.

    Retries connection failures only (:func:`is_connection_failure`) for up to ``timeout``
    seconds (a dev server answers 0.1–0.2 s after it starts); any other error is a bug or
    a real answer and surfaces at once.

    Raises:
        EngineError: the server did not answer in time.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            return await Client.connect(
                address, data_converter=pydantic_data_converter, runtime=quiet_runtime()
            )
        except Exception as error:
            if not is_connection_failure(error):
                raise
            if loop.time() > deadline:
                raise EngineError(f"cannot reach the Temporal engine at {address}: {error}",
                                  hint="is `bees run` up? see temporal.log in the data dir"
                                  ) from error
            await asyncio.sleep(0.1)


CONNECT_FAILED = "Failed client connect"
"""How the SDK's ``RuntimeError`` begins when the server cannot be reached (temporalio 1.x)."""


def is_connection_failure(error: BaseException) -> bool:
    """Return True when ``error`` means the server could not be reached (worth retrying):
    the SDK's ``Failed client connect`` runtime error, an ``OSError``, or an RPC error with
    status ``UNAVAILABLE``."""
    if isinstance(error, RPCError):
        return error.status == RPCStatusCode.UNAVAILABLE
    if isinstance(error, OSError):
        return True
    return isinstance(error, RuntimeError) and str(error).startswith(CONNECT_FAILED)


def rpc_error(error: RPCError, item_id: str) -> BeesError:
    """Map a Temporal RPC error about the run of ``item_id`` to the error tree, by status.

    Returns:
        :class:`~bees_cli.errors.Refused` (exit 3) for ``NOT_FOUND`` (the run is over or
        unknown to the engine); an :class:`~bees_cli.errors.EngineError` naming the status
        for any other (``UNAVAILABLE``, ``RESOURCE_EXHAUSTED``…).
    """
    if error.status == RPCStatusCode.NOT_FOUND:
        return Refused(f"item {item_id}: its run is over or unknown to the engine "
                       f"({error.message})")
    return EngineError(f"the engine answered {error.status.name} about item {item_id}: "
                       f"{error.message}", hint="see `bees doctor` and the engine log")


async def start_item(client: Client, item: ItemInput, task_queue: str) -> bool:
    """Start the run of ``item`` as workflow ``item.item_id`` on ``task_queue``.

    An id already used (started by another process, or finished) is never started again,
    except by a continued run (``item.run`` > 1, after a handover): the workflow id stays the
    item's id and the relinquished run, which has ended, is followed by a new one
    (``ALLOW_DUPLICATE``; a run still open with that id is never started twice).

    Eager start: when this process's worker polls ``task_queue`` with the same client
    (``bees run``), the run's first workflow task comes back with the start.

    Returns:
        True when this call started it, False when it was already started.
    """
    try:
        handle: WorkflowHandle[object, object] = await client.start_workflow(
            WORKFLOW_NAME, item, id=item.item_id, task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE if item.run > 1
            else WorkflowIDReusePolicy.REJECT_DUPLICATE,
            # a worker of this client on the queue gets the first workflow task in the start
            # answer, not after the server's matching (~5-40 ms); else started as usual
            request_eager_start=True,
        )
    except WorkflowAlreadyStartedError:
        return False
    del handle
    return True


class EngineGateway:
    """The use cases' one door to Temporal: an already-connected client and the calls they make.

    Every Temporal error is mapped here (:func:`rpc_error`, a validator's refusal), so the
    application layer sees only the :mod:`bees_cli.errors` tree.

    Args:
        client: a client made by :func:`connect`.
    """

    def __init__(self, client: Client) -> None:
        self.client = client

    @property
    def address(self) -> str:
        """The server's ``host:port``."""
        return self.client.service_client.config.target_host

    async def start(self, item: ItemInput, task_queue: str) -> bool:
        """Start the run of ``item`` (see :func:`start_item`); True when this call did.

        Raises:
            EngineError: the engine refused the start (the RPC status named).
        """
        try:
            return await start_item(self.client, item, task_queue)
        except RPCError as error:
            raise rpc_error(error, item.item_id) from None

    async def update(self, item_id: str, name: str, arg: object, result_type: object = None,
                     *, timeout: float | None = None) -> object:
        """Send update ``name`` to the run of ``item_id``; return its result.

        Args:
            timeout: seconds to wait for the answer, or None to wait as long as it takes.

        Raises:
            Refused: the run's validator refused (its reason), or the run is over or
                unknown (``NOT_FOUND``).
            EngineError: another RPC status (named), or no answer in ``timeout`` s.
        """
        from temporalio.client import (
            WorkflowUpdateFailedError,
            WorkflowUpdateRPCTimeoutOrCancelledError,
        )
        from temporalio.exceptions import ApplicationError

        handle = self.client.get_workflow_handle(item_id)
        try:
            return await asyncio.wait_for(
                handle.execute_update(name, arg, result_type=result_type),  # type: ignore[call-overload]
                timeout)
        except WorkflowUpdateFailedError as error:
            cause = error.cause
            message = cause.message if isinstance(cause, ApplicationError) else str(cause)
            raise Refused(f"item {item_id}: {message}") from None
        except RPCError as error:
            raise rpc_error(error, item_id) from None
        except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
            # wait_for's cancel surfaces as the SDK's own error, not as TimeoutError
            raise EngineError(f"bees run did not answer about item {item_id} in "
                              f"{timeout or 0:.0f} s",
                              hint="see `bees status` and the engine log") from None

    async def cancel(self, item_id: str) -> None:
        """Ask the run of ``item_id`` to cancel.

        Raises:
            Refused: the run is over or unknown (``NOT_FOUND``).
            EngineError: another RPC status (named).
        """
        try:
            await self.client.get_workflow_handle(item_id).cancel()
        except RPCError as error:
            raise rpc_error(error, item_id) from None

    async def item_runs(self, task_queue: str) -> list[str]:
        """Return the item ids whose runs (workflow ``bees.item``) the engine has on
        ``task_queue``, open or closed, each once (a handed-over item may have several runs).

        Raises:
            EngineError: the engine refused the listing (the RPC status named).
        """
        query = f"WorkflowType = '{WORKFLOW_NAME}' AND TaskQueue = '{task_queue}'"
        ids: list[str] = []
        try:
            async for execution in self.client.list_workflows(query):
                if execution.id not in ids:
                    ids.append(execution.id)
        except RPCError as error:
            raise EngineError(f"the engine answered {error.status.name} to a listing of "
                              f"{task_queue}: {error.message}",
                              hint="see `bees doctor` and the engine log") from None
        return sorted(ids)

    async def open_runs(self, task_queue: str) -> set[str]:
        """Return the item ids whose runs (workflow ``bees.item``) are still open on
        ``task_queue``. The engine's listing may lag a closing run by a moment: a run shown
        open may have just closed, never the other way round.

        Raises:
            EngineError: the engine refused the listing (the RPC status named).
        """
        query = (f"WorkflowType = '{WORKFLOW_NAME}' AND TaskQueue = '{task_queue}' "
                 "AND ExecutionStatus = 'Running'")
        try:
            return {execution.id async for execution in self.client.list_workflows(query)}
        except RPCError as error:
            raise EngineError(f"the engine answered {error.status.name} to a listing of "
                              f"{task_queue}: {error.message}",
                              hint="see `bees doctor` and the engine log") from None

    async def run_view(self, item_id: str) -> RunView:
        """Ask the latest run of ``item_id`` where its item is (the ``bees.state`` query).

        Raises:
            Refused: the engine has no run of ``item_id`` (``NOT_FOUND``).
            EngineError: the run could not answer (its query failed, another RPC status).
        """
        from temporalio.client import WorkflowQueryFailedError

        handle = self.client.get_workflow_handle(item_id)
        try:
            view = await handle.query(STATE_QUERY, result_type=RunView,
                                      rpc_timeout=QUERY_TIMEOUT)
        except WorkflowQueryFailedError as error:
            raise EngineError(f"the run of item {item_id} did not answer: {error.message}",
                              hint="see the engine log") from None
        except RPCError as error:
            raise rpc_error(error, item_id) from None
        assert isinstance(view, RunView)
        return view

    async def has_run(self, item_id: str) -> bool:
        """Return whether the engine has a run of ``item_id`` (open or closed).

        Raises:
            EngineError: another RPC status than ``NOT_FOUND`` (named).
        """
        try:
            await self.client.get_workflow_handle(item_id).describe()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return False
            raise rpc_error(error, item_id) from None
        return True

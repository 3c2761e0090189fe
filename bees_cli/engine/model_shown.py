"""What the local record shows of a model call and its retries (issue 23, point 7).

A call that will be tried again says so before it raises (``waiting: rate limited by SERVER
until 14:05``, ``waiting: retrying model call, try 2 of 5``), its next try while it runs
(``running: retrying model call, try 2 of 5``), and an answer clears it. The retry itself is
Temporal's (:func:`as_application_error`); these only show it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from temporalio import activity
from temporalio.common import RetryPolicy as TemporalRetry
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from bees_cli.engine.model_models import TurnContext
from bees_cli.errors import ModelError, ModelRateLimited, NotFound
from bees_cli.record.events import StageStarted
from bees_cli.record.pieces import PieceStatus
from bees_cli.record.states import Status, WaitKind
from bees_cli.utc import format_utc, utc_now

if TYPE_CHECKING:
    from bees_cli.record.local import LocalRecord
    from bees_cli.record.views import ModelRetry


def as_application_error(error: ModelError) -> ApplicationError:
    """Return ``error`` as Temporal's retry reads it (retryable or not, Retry-After); a
    rate limit is benign (an expected wait, not logged as a failure)."""
    delay = None if error.retry_after is None else timedelta(seconds=error.retry_after)
    benign = isinstance(error, ModelRateLimited) and error.retryable
    return ApplicationError(str(error), type=type(error).__name__,
                            non_retryable=not error.retryable, next_retry_delay=delay,
                            category=ApplicationErrorCategory.BENIGN if benign
                            else ApplicationErrorCategory.UNSPECIFIED)


def retry_line(stage: str, item_id: str, piece: str | None, error: ModelError, *,
               attempt: int, wait: ModelRetry | None) -> str:
    """Return what ``bees run`` says of a model call whose try ``attempt`` failed:
    ``Draft of ITEM: cannot reach URL: ConnectError (try 4 of 5); trying again at TIME``,
    or ``…; no try left`` when ``wait`` is None (the stage fails with the error).

    Why: the engine SDK's own line for it is a dict of activity details and a traceback;
    that goes to the run's log file (``bees_cli.cli.logs``), this to the terminal.
    """
    who = f"{stage} of {item_id}" + (f" (piece {piece})" if piece else "")
    first = (str(error).splitlines() or [""])[0]
    if wait is None:
        return f"{who}: {first} (try {attempt}); no try left"
    of = f" of {wait.tries}" if wait.tries is not None else ""
    return f"{who}: {first} (try {attempt}{of}); trying again at {wait.until}"


def tries_of(policy: TemporalRetry | None) -> int | None:
    """Return the tries in all a retry policy allows (None: no limit)."""
    return policy.maximum_attempts if policy is not None and policy.maximum_attempts > 0 \
        else None


def backoff(policy: TemporalRetry | None, attempt: int) -> float:
    """Return the seconds Temporal waits after failed try ``attempt`` (1 first) when the
    error names no delay: ``initial × coefficient^(attempt-1)``, at most the maximum
    interval (Temporal's default: 100 × initial)."""
    policy = policy or TemporalRetry()
    initial = policy.initial_interval.total_seconds()
    most = (policy.maximum_interval.total_seconds() if policy.maximum_interval is not None
            else 100 * initial)
    return float(min(initial * policy.backoff_coefficient ** (attempt - 1), most))


def next_try(error: ModelError, *, attempt: int, policy: TemporalRetry | None, server: str,
             now: datetime) -> ModelRetry | None:
    """Return the wait of a model call whose try ``attempt`` failed with ``error``: the
    next try, when it starts and why; None when no try follows (the error is not
    retryable, or that was the last try).

    Args:
        error: the try's error (``retry_after``: the server's Retry-After, seconds).
        attempt: the try that failed (Temporal's activity attempt, 1 first).
        policy: the activity's retry policy (tries in all, backoff).
        server: the model's server (:func:`~bees_cli.agents.model_client.server_name`).
        now: this computer's clock (aware).
    """
    from bees_cli.record.views import ModelRetry

    tries = tries_of(policy)
    if not error.retryable or (tries is not None and attempt >= tries):
        return None
    delay = error.retry_after if error.retry_after is not None else backoff(policy, attempt)
    return ModelRetry(why="rate_limited" if isinstance(error, ModelRateLimited)
                      else "unavailable", server=server, try_number=attempt + 1, tries=tries,
                      until=format_utc(now + timedelta(seconds=delay)), error=str(error))


class CallShown:
    """Writes what the local record shows of a model call's tries (the item's row, or a
    piece's, and the ``stage_started`` fact).

    Args:
        record: the local record.
    """

    def __init__(self, record: LocalRecord) -> None:
        self.record = record

    def start_try(self, context: TurnContext, attempt: int, policy: TemporalRetry | None,
                   server: str) -> None:
        """Say that try ``attempt`` of the model call runs (a retry: which one)."""
        self._started(context, self._retrying(context, attempt=attempt, policy=policy,
                                              server=server))

    def _retrying(self, context: TurnContext, *, attempt: int, policy: TemporalRetry | None,
                  server: str) -> ModelRetry | None:
        """Return the retry a try ``attempt`` over 1 is (None for a first try): the wait the
        failed try wrote, now running, or ``interrupted`` when none was written (its worker
        stopped mid-call)."""
        from bees_cli.record.views import ModelRetry

        if attempt <= 1:
            return None
        if context.piece is None:
            try:
                stored = self.record.item(context.item_id, with_input=False).model_retry
            except NotFound:  # the record was replaced meanwhile: set_state ignores it too
                stored = None
            if stored is not None and stored.get("try_number") == attempt:
                return ModelRetry.model_validate({**stored, "until": None})
        return ModelRetry(why="interrupted", server=server, try_number=attempt,
                          tries=tries_of(policy))

    def show(self, write: Callable[..., None], context: TurnContext,
               *args: Any) -> None:
        """Run ``write`` (what the record shows of a model call's retry); a record that cannot
        be written is logged, never raised: the retry and its delay must reach Temporal."""
        try:
            write(context, *args)
        except Exception:  # noqa: BLE001 - what is shown must not cost the server's wait
            activity.logger.warning("could not show a model call's retry in the record",
                                    exc_info=True)

    def waits(self, context: TurnContext, wait: ModelRetry) -> None:
        """Say that the model call waits for its next try: the item ``waiting`` (wait kind
        ``model``, the retry beside the reason) while it still runs this stage; for a
        piece, its row ``waiting`` with the reason."""
        words = wait.words(utc_now())
        if context.piece is not None:
            self._piece_shows(context, PieceStatus.WAITING, words)
            return
        self.record.set_state(context.item_id, status=Status.WAITING, stage=context.stage,
                              reason=words, agent=context.agent, wait=WaitKind.MODEL,
                              model_retry=wait.model_dump(mode="json"),
                              only_if=frozenset({Status.RUNNING}))

    def answered(self, context: TurnContext, *_: Any) -> None:
        """Clear a retry once the model answered: the item (or piece) plainly ``running``."""
        if context.piece is not None:
            self._piece_shows(context, PieceStatus.RUNNING, None)
            return
        row = self.record.item(context.item_id, with_input=False)
        if row.model_retry is not None:
            self.record.set_state(context.item_id, status=Status.RUNNING, stage=context.stage,
                                  agent=context.agent, only_if=frozenset({Status.RUNNING}))

    def _piece_shows(self, context: TurnContext, status: PieceStatus, reason: str | None) -> None:
        """Show a piece's model call waiting or retried on its row, while the piece lives."""
        assert context.piece is not None
        row = self.record.piece(context.item_id, context.stage, context.piece)
        if row is None or not row.live or (row.status, row.reason) == (status, reason):
            return
        self.record.update_piece(context.item_id, context.stage, context.piece, status=status,
                                 reason=reason)

    def _started(self, context: TurnContext, retry: ModelRetry | None = None) -> None:
        if context.piece is not None:  # a piece's row says it runs (piece_activities.py)
            if retry is not None:
                self.show(self._piece_shows, context, PieceStatus.RUNNING,
                            retry.words(utc_now()))
            return
        self.record.set_state(
            context.item_id, status="running", stage=context.stage, agent=context.agent,
            reason=None if retry is None else retry.words(utc_now()),
            model_retry=None if retry is None else retry.model_dump(mode="json"))
        self.record.add_fact(context.item_id, StageStarted(
            stage=context.stage, round=context.round, agent=context.agent,
            attempt=context.attempt, comments=list(context.comments)),
            key=f"{context.stage}:{context.round}:started:{context.attempt}")

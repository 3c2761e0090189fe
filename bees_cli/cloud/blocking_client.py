"""The blocking client of the Bees Cloud API v1 (the CLI, threads): plans run with sleeps.

Import it as :class:`bees_cli.cloud.client.CloudClient`; httpx is imported when a client is
made, not with this module."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from bees_cli.cloud import wire
from bees_cli.cloud.calls import (
    Call,
    M,
    key_claim,
    key_disagreements,
    key_item,
    offer_leave,
    offer_list,
    offer_make,
    owner_claim,
    owner_get,
    owner_release,
    owner_repair,
    record_pull,
)
from bees_cli.cloud.client_base import (
    DEFAULT_BACKOFF,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    BaseCloudClient,
    Pause,
    R,
    Skew,
)
from bees_cli.utc import utc_now

if TYPE_CHECKING:
    import httpx

    from bees_cli.cloud.client_base import Outcome, Plan


class CloudClient(BaseCloudClient):
    """Blocking client of one Bees Cloud (for the CLI and for threads).

    Args:
        base_url: e.g. ``https://cloud.example.com`` (the API lives under ``/v1``).
        token: the person's bearer token.
        transport: an httpx transport (tests pass ``httpx.MockTransport`` or a WSGI one).
        timeout: seconds for connect, read and write.
        retries: extra attempts after a connection error or a 5xx.
        backoff: seconds before the first retry, doubled each time (at most 4 s).
        sleep: how to wait between retries (tests pass a recorder).
        clock: local clock (UTC) for skew measurement.
    """

    _http: httpx.Client

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        import httpx

        super().__init__(base_url, retries=retries, backoff=backoff, clock=clock)
        self._sleep = sleep
        self._http = httpx.Client(**self._http_options(token, timeout), transport=transport)

    def __enter__(self) -> CloudClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def _run(self, plan: Plan[R]) -> R:
        """Run ``plan``: send its requests and sleep its pauses, blocking; return its result."""
        import httpx  # loaded already: __init__ made the client

        outcome: Outcome = None
        while True:
            try:
                step = plan.send(outcome)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            if isinstance(step, Pause):
                self._sleep(step.seconds)
                outcome = None
                continue
            try:
                outcome = self._http.send(step)
            except httpx.TransportError as error:
                outcome = error

    def call(self, call: Call[M]) -> M | None:
        """Send ``call`` with retries and return its answer (see :func:`read_answer`).

        Raises:
            CloudUnreachable: every attempt failed to connect or timed out, or the
                base URL is not valid (no request is sent).
            CloudError, CloudUnauthorized, CloudRefused: see :func:`read_answer`.
        """
        return self._run(self._exchange(call))

    def me(self) -> wire.Me:
        """Return who the token is, the team and the server clock."""
        return self._run(self._must(Call("GET", "/v1/me", wire.Me)))

    def skew(self) -> Skew:
        """Measure the server clock against the local one (see :class:`Skew`)."""
        return self._run(self._skew())

    def server_time(self) -> datetime:
        """Return the server's clock (UTC)."""
        return self._run(self._server_time())

    def claim_key(self, claim: wire.KeyClaim) -> wire.KeyAnswer:
        """Claim a schedule key; ``answer.granted`` tells whether this machine holds it."""
        return self._run(self._must(key_claim(claim)))

    def report_key_item(self, report: wire.KeyItem) -> wire.KeyAnswer:
        """Report the item a held key produced; safe to repeat with the same item.

        Raises:
            CloudRefused: another machine holds the key, the machine id is another
                person's, or the key already produced another item.
            CloudError: no such key (404).
        """
        return self._run(self._must(key_item(report)))

    def held_keys(self, machine_id: str, *, without_item: bool = False) -> list[wire.KeyAnswer]:
        """Return this person's keys held by ``machine_id``, oldest scheduled time first.

        With ``without_item`` only the keys whose item was never reported (to make
        on start after a crash).
        """
        return self._run(self._held_keys(machine_id, without_item))

    def key_disagreements(self, machine_id: str) -> list[wire.KeyAnswer]:
        """Return this person's keys whose wall-clock time two computers placed at two
        instants (newest first, with both sides); ``machine_id`` is the asking machine."""
        return self._run(self._must(key_disagreements(machine_id))).keys

    def claim_owner(self, claim: wire.OwnerClaim) -> wire.OwnerAnswer:
        """Claim an item; ``answer.granted`` tells whether this machine owns it."""
        return self._run(self._must(owner_claim(claim)))

    def get_owner(self, item_id: str) -> wire.Owner | None:
        """Return the latest owner row of ``item_id``, or None when it was never claimed."""
        return self._run(self._exchange(owner_get(item_id)))

    def owner_history(self, item_id: str) -> list[wire.Owner]:
        """Return every owner row of ``item_id``, oldest first."""
        return self._run(self._owner_history(item_id))

    def list_owners(self) -> list[wire.Owner]:
        """Return the team's held items (current owners), by item id."""
        return self._run(self._list_owners())

    def release_owner(self, item_id: str, release: wire.OwnerRelease) -> wire.Owner:
        """Release ``item_id`` (owning machine only).

        Raises:
            CloudRefused: another machine owns it (the message names it).
        """
        return self._run(self._must(owner_release(item_id, release)))

    def repair_owner(self, item_id: str, release: wire.OwnerRelease) -> wire.Owner:
        """Re-send the release of free item ``item_id`` with a new checkpoint digest (the
        machine that released it last only).

        Raises:
            CloudRefused: another machine released it last or holds it (403), or it is held
                (409).
        """
        return self._run(self._must(owner_repair(item_id, release)))

    def make_offer(self, item_id: str, body: wire.OfferMake) -> wire.Offer:
        """Hand released item ``item_id`` to a pool (the machine that released it only).

        Raises:
            CloudRefused: another machine released it last or holds it (403), or it is
                held (409).
        """
        return self._run(self._must(offer_make(item_id, body)))

    def offers(self, pool: str | None = None, *, only_open: bool = True) -> list[wire.Offer]:
        """Return the team's offers, oldest first (a runner's token: its pool's)."""
        return self._run(self._must(offer_list(pool, only_open=only_open))).offers

    def leave_offer(self, item_id: str, body: wire.OfferLeave) -> wire.Offer:
        """Leave the open offer of ``item_id`` with why (a runner's token only)."""
        return self._run(self._must(offer_leave(item_id, body)))

    def runners(self) -> wire.RunnerList:
        """Return the team's runners: pool, last heard, what each holds (DESIGN.md,
        Runners)."""
        return self._run(self._must(Call("GET", "/v1/runners", wire.RunnerList)))

    def runner_heard(self, machine_id: str) -> wire.RunnerView:
        """Vouch for this runner (its token) running as ``machine_id``.

        Raises:
            CloudUnauthorized: ``runner_retired`` once an admin retired it.
            CloudRefused: ``not_a_runner``, ``machine_retired``.
        """
        return self._run(self._must(Call("POST", "/v1/runners/heard", wire.RunnerView,
                                         wire.RunnerHeard(machine_id=machine_id))))

    def push(self, changes: list[wire.RecordChange]) -> wire.PushAnswer:
        """Push record changes in batches of :data:`wire.MAX_BATCH`; return the totals.

        Changes the server refused (another machine's item, a clock too far ahead,
        fields too large, another person's machine) come back in ``answer.refused``
        with their code and reason; the caller keeps them.
        """
        return self._run(self._push(changes))

    def pull(self, since: int = 0, limit: int = wire.MAX_PULL) -> wire.PullAnswer:
        """Return one page of the team's record changes after cursor ``since``."""
        return self._run(self._must(record_pull(since, limit)))

    def pull_all(self, since: int = 0) -> wire.PullAnswer:
        """Return every change after ``since``, following pages until ``more`` is False."""
        return self._run(self._pull_all(since))

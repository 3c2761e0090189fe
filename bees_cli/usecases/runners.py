"""Runners (DESIGN.md, Runners; issue 27): a person hands a released item to a pool
(``bees relinquish ITEM --to POOL``); a runner (``bees run --runner POOL``) asks Bees Cloud
for its pool's offers, checks itself against each exactly as ``bees continue`` does, and
claims the one it can run; exactly one claim wins. A runner that cannot run an offer leaves
it with why, for the whole team to see (``runner-2: folder reports: not linked …``).

Secrets travel by name only: an offer names the environment variables its work needs
(:func:`~bees_cli.agents.secrets.secret_names`); a runner lacking one leaves the offer naming
it and never claims.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from bees_cli.errors import BeesError, CloudError, Refused, UserError, is_retired

if TYPE_CHECKING:
    from bees_cli.cloud import wire
    from bees_cli.handover.relinquish import Relinquished
    from bees_cli.usecases.bees import Bees

RUNNER_POLL_EVERY = 15.0
"""Seconds between a runner's looks at its pool's offers (the shared record's cadence)."""

@dataclass(frozen=True)
class RunnerMode:
    """``bees run --runner POOL``: the pool, this runner's name (Bees Cloud's), the seconds
    between its looks at the pool's offers, and its slots."""

    pool: str
    name: str
    every: float
    slots: int = 1
    """The most items under way here at once (:func:`bees_cli.rules.runner_room`)."""


Outcome = Literal["claimed", "left", "taken", "unreachable"]


@dataclass(frozen=True)
class OfferOutcome:
    """What a runner did with one offer: ``claimed`` (it runs here now), ``left`` (it
    cannot run it: ``reason`` says why, and the team sees it), ``taken`` (another claim
    won), ``unreachable`` (Bees Cloud did not answer: asked again on the next pass)."""

    item: str
    outcome: Outcome
    reason: str | None = None


def offer_secrets(done: Relinquished) -> list[str]:
    """Return the secret names the restart stage of a relinquished item needs, read from the
    snapshot in its run folder (:func:`~bees_cli.agents.secrets.secret_names`)."""
    from bees_cli.agents.secrets import secret_names
    from bees_cli.agents.snapshot import ItemSnapshot
    from bees_cli.handover.store import snapshot_path

    folder = Path(done.checkpoint).parent
    snapshot = ItemSnapshot.model_validate_json(snapshot_path(folder).read_bytes())
    return secret_names(snapshot, done.restart)


def offer_to_pool(bees: Bees, done: Relinquished, pool: str) -> wire.Offer:
    """Hand the item ``done`` released to ``pool``: an offer naming the secrets its work
    needs (never their values).

    Raises:
        UserError: no Bees Cloud is configured here (a pool lives in Bees Cloud).
        CloudRefused, CloudError: the cloud refused or failed (the item stays free).
    """
    from bees_cli.cloud import wire
    from bees_cli.cloud.client import sync_cloud_for

    api = sync_cloud_for(bees.computer, retries=2)
    if api is None:
        raise UserError(f"item {done.item} is free, but not offered to pool {pool}: no Bees "
                        "Cloud is configured here", hint="bees login URL, then bees continue it")
    with api:
        return api.make_offer(done.item, wire.OfferMake(
            machine_id=bees.computer.machine_id, pool=pool, secrets=offer_secrets(done)))


def _list_offers(bees: Bees, pool: str | None, *, only_open: bool) -> list[wire.Offer]:
    """Return the team's offers (to ``pool``, else every pool; open ones only unless
    ``only_open`` is False), oldest first, each with why runners left it.

    Raises:
        UserError: no Bees Cloud is configured here.
        CloudError: the cloud cannot be reached or refused.
    """
    from bees_cli.cloud.client import sync_cloud_for

    api = sync_cloud_for(bees.computer, retries=2)
    if api is None:
        raise UserError("offers live in Bees Cloud, and none is configured here",
                        hint="bees login URL --with-token")
    with api:
        return api.offers(pool, only_open=only_open)


def _list_runners(bees: Bees) -> wire.RunnerList:
    """Return the team's runners with Bees Cloud's clock (``bees runners``).

    Raises:
        UserError: no Bees Cloud is configured here.
        CloudError: the cloud cannot be reached or refused.
    """
    from bees_cli.cloud.client import sync_cloud_for

    api = sync_cloud_for(bees.computer, retries=2)
    if api is None:
        raise UserError("runners live in Bees Cloud, and none is configured here",
                        hint="bees login URL --with-token")
    with api:
        return api.runners()


def check_runner(bees: Bees, pool: str) -> str:
    """Return this computer's runner name once Bees Cloud confirms its token is a runner's
    of ``pool``.

    Raises:
        UserError: no Bees Cloud configured, or the token is a person's or another pool's.
        CloudError: the cloud cannot be reached or refused the token.
    """
    from bees_cli.cloud.client import sync_cloud_for

    api = sync_cloud_for(bees.computer, retries=2)
    if api is None:
        raise UserError("bees run --runner needs Bees Cloud",
                        hint="set BEES_CLOUD_URL and BEES_TOKEN (the runner's token)")
    with api:
        me = api.me()
    if me.runner is None or me.pool != pool:
        what = "a person's" if me.runner is None else f"runner {me.runner}'s, of pool {me.pool}"
        raise UserError(f"this computer's token is {what}, not a runner's of pool {pool}",
                        hint="an admin makes one: bees cloud admin runner add NAME --pool "
                             f"{pool}; give it as BEES_TOKEN")
    return me.runner


async def runner_pass(bees: Bees, runner: str, *, workspace_path: Path | None,
                      said: dict[str, str], slots: int = 1) -> list[OfferOutcome]:
    """Look once at the pool's open offers and take what this runner can run, as many as it
    has room for (:func:`bees_cli.rules.runner_room`: ``slots`` less the items under way
    here); with no room it does not look.

    For each offer, oldest first: a secret it names that is unset here leaves it (naming
    the variable; nothing is claimed); else ``bees continue``'s own steps
    (:meth:`~bees_cli.usecases.bees.Bees.continue_item`: checkpoint and files verified,
    eligibility, then the owner claim) take it, and what refuses it before the claim leaves
    it with that reason. ``said`` keeps the last reason sent per item, so an unchanged one
    is not sent again.
    """
    from bees_cli.agents.secrets import missing_secrets
    from bees_cli.cloud.client import sync_cloud_for
    from bees_cli.handover.continue_ import ClaimTaken
    from bees_cli.rules import runner_room

    room = runner_room(slots, await bees.async_record.run(
        lambda record: [row.status for row in record.items()]))
    if room == 0:
        return []
    api = sync_cloud_for(bees.computer, retries=1)
    assert api is not None  # check_runner saw a cloud
    outcomes: list[OfferOutcome] = []
    try:
        offers = await asyncio.to_thread(api.offers)
    except CloudError as error:
        api.close()
        if is_retired(error):  # fenced: the runner stops (runner_loop)
            raise
        return [OfferOutcome("-", "unreachable", error.message)]
    try:
        for offer in offers:
            if room == 0:
                break
            missing = missing_secrets(offer.secrets)
            if missing:
                reason = (f"secret {', '.join(missing)} not set on this runner: it refuses "
                          "rather than run with another key")
            else:
                try:
                    await bees.continue_item(offer.item_id, workspace_path=workspace_path)
                    outcomes.append(OfferOutcome(offer.item_id, "claimed"))
                    room -= 1
                    continue
                except ClaimTaken:
                    outcomes.append(OfferOutcome(offer.item_id, "taken"))
                    continue
                except Refused as error:
                    reason = leave_reason(error)
                except CloudError as error:
                    if is_retired(error):
                        raise
                    outcomes.append(OfferOutcome(offer.item_id, "unreachable", error.message))
                    continue
                except BeesError as error:  # no workspace here, a bad run folder…
                    reason = error.message
            if said.get(offer.item_id) == reason:
                outcomes.append(OfferOutcome(offer.item_id, "left", reason))
                continue
            if not await asyncio.to_thread(_leave, api, bees, offer.item_id, reason):
                outcomes.append(OfferOutcome(offer.item_id, "taken"))  # no longer offered
                continue
            outcomes.append(OfferOutcome(offer.item_id, "left", reason))
            said[offer.item_id] = reason
            bees.say(f"{runner}: left {offer.item_id}: {reason}")
    finally:
        api.close()
    return outcomes


LEAVE_DETAIL_CHARS = 240
"""Most characters of the problems a leave reason names (the first one is always named,
cut with ``…`` when longer); the rest are counted."""


def leave_reason(error: Refused) -> str:
    """Return why this runner leaves an offer, as the team sees it in ``bees offers``.

    A refusal's message, and for an invalid checkpoint the first problems too (each
    ``FILE: what is wrong``, at most :data:`LEAVE_DETAIL_CHARS` of them), the others counted:
    ``checkpoint invalid: 3 problems: Draft/notes.txt: content changed (…); and 2 more
    (bees checkpoint verify RUN_FOLDER lists them)`` (docs/runners.md: the reason names the
    files). Returns the message alone for any other refusal.
    """
    from bees_cli.handover.problems import CheckpointInvalid

    if not isinstance(error, CheckpointInvalid) or not error.problems:
        return error.message
    named: list[str] = []
    used = 0
    for problem in error.problems:
        text = problem.format()
        if not named and len(text) > LEAVE_DETAIL_CHARS:
            text = text[:LEAVE_DETAIL_CHARS] + "…"
        elif named and used + len(text) > LEAVE_DETAIL_CHARS:
            break
        named.append(text)
        used += len(text)
    rest = len(error.problems) - len(named)
    more = f"; and {rest} more (bees checkpoint verify RUN_FOLDER lists them)" if rest else ""
    return f"{error.message}: {'; '.join(named)}{more}"


def _leave(api: object, bees: Bees, item_id: str, reason: str) -> bool:
    """Tell Bees Cloud why this runner leaves the offer of ``item_id``; return False when the
    item is no longer offered (another claim took it meanwhile)."""
    from bees_cli.cloud import wire
    from bees_cli.cloud.client import CloudClient

    assert isinstance(api, CloudClient)
    try:
        api.leave_offer(item_id, wire.OfferLeave(machine_id=bees.computer.machine_id,
                                                 reason=reason[:wire_max()]))
    except CloudError as error:
        if error.status == 404:
            return False
        bees.say(f"could not tell Bees Cloud why {item_id} was left: {error.message}")
    except BeesError as error:  # the cloud is away: said again on the next pass
        bees.say(f"could not tell Bees Cloud why {item_id} was left: {error.message}")
    return True


def wire_max() -> int:
    """The most characters of a reason Bees Cloud keeps."""
    from bees_cli.cloud.wire_offers import MAX_REASON

    return MAX_REASON


async def runner_loop(bees: Bees, pool: str, runner: str, *, workspace_path: Path | None,
                      stop: asyncio.Event, every: float = RUNNER_POLL_EVERY,
                      slots: int = 1,
                      on_retired: Callable[[CloudError], None] | None = None) -> None:
    """Until ``stop`` is set: a :func:`runner_pass` every ``every`` seconds. A pass refused
    because this runner was retired (``runner_retired``) is handed to ``on_retired`` and
    ends the loop (``bees run --runner`` stops: DESIGN.md, Runners, fenced)."""
    said: dict[str, str] = {}
    bees.say(f"runner {runner} of pool {pool}: asking Bees Cloud for offers every {every:g} s")
    while not stop.is_set():
        try:
            outcomes = await runner_pass(bees, runner, workspace_path=workspace_path,
                                         said=said, slots=slots)
        except CloudError as error:
            if is_retired(error) and on_retired is not None:
                on_retired(error)
                return
            outcomes = []
            bees.say(f"{runner}: could not look at the offers: {error.message}")
        except BeesError as error:
            outcomes = []
            bees.say(f"{runner}: could not look at the offers: {error.message}")
        for outcome in outcomes:
            if outcome.outcome == "claimed":
                bees.say(f"{runner}: claimed {outcome.item}")
        try:
            await asyncio.wait_for(stop.wait(), every)
        except TimeoutError:
            pass

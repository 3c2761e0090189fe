"""The item workflow's patch names (``workflow.patched``) and its activities' retry policies
and timeouts: deterministic constants, imported by :mod:`bees_cli.engine.workflows`."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from bees_cli.rules import RECHECK_EVERY

SHORT = timedelta(seconds=60)
"""Timeout of the short activities (record, journal look-up, slots)."""

ACTION_AT_ONCE = "action-returns-at-once"
"""Patch: a held action's ``bees.action`` returns at once (``held``) and an interrupted one
(intent without a result) is held for a person; the caller waits on the local record."""

DENIAL_ANSWERS_RETRY = "denial-answers-a-retried-ask"
"""Patch: an ask that a person already denied (same stage round, action and input) is
answered with that denial and its reason, not held again as a new request (issue 23, point 1:
a denial given while ``bees run`` was down reaches the stage's retried attempt)."""

DENIAL_ENDS_AT_RETRY = "denial-ends-at-a-person-s-retry"
"""Patch: a denial answers a retried ask only until a person retries the stage round; the
attempt that retry starts holds the same action for a person afresh (a person's retry is the
way out of a denial: docs/rules.md, approvals). Before it, a stored denial refused every
later attempt of the round."""

WAITS_BY_RETRY = "waits-by-retry"
"""Patch: eligibility and busy-agent waits are retried activities (no timer, no check per
pass in history), and activities get the snapshot digest, not the snapshot."""

CONTINUES_AS_NEW = "continues-as-new"
"""Patch: before a stage, the run continues as new when Temporal suggests it."""

RELINQUISH_KEEPS_STATE = "relinquish-keeps-state"
"""Patch: a handover refused after its stage stopped keeps the plan's memory (earlier stages'
outputs, rounds, attempts): the failed stage is the one that was running, and a retry starts
it again as its next attempt (issue 12, tester finding)."""

HANDOVER_WAITS_FOR_CLOUD = "handover-waits-for-cloud"
"""Patch: the handover step is tried without an attempt limit (:data:`HANDOVER_RETRY`), so a
Bees Cloud that is down for a while delays the relinquish instead of failing the run (its
activity answers other failures as a refusal after three tries)."""

RELINQUISH_BETWEEN_STEPS = "relinquish-between-steps"
"""Patch: a plan whose cancel was swallowed (its stage, eligibility or tool call finished as
the relinquish arrived) stops at its next step boundary instead of going on to the next
stage; marked only when a relinquish is pending, so other histories carry no marker (tester
finding: a relinquish in a stage's last seconds hung until the item reached Done)."""

PIECES = "pieces"
"""Patch: the run answers ``bees.delegate`` by starting a ``bees.piece`` child workflow (work
an agent hands to another agent, issue 14); marked only when an agent delegates."""

RELINQUISH_STOPS_PIECES = "relinquish-stops-pieces"
"""Patch: a relinquish cancels the run's live pieces (its ``bees.piece`` children) and waits
until each has stopped before the checkpoint is written (issue 14, point 3); marked only
when a relinquish finds live pieces, so other histories carry no marker."""

RELINQUISH_STOPS_TOP_DOWN = "relinquish-stops-top-down"
"""Patch: a relinquish stops the live pieces one depth at a time, callers first, so no piece
sees a piece it handed out stop and ends its own work on that answer before it is stopped
itself; marked only when a relinquish finds live pieces."""

STAGE_END_STOPS_PIECES = "stage-end-stops-pieces"
"""Patch: when a stage's agent ends (finished or failed) with pieces of that stage still live
(a caller that did not wait for its answer), the run gives them a few seconds to end, then
stops them, callers first, before the item moves on: an item is never ``done`` while a
piece runs (issue 23, point 3); marked only when a stage ends with live pieces."""

STAGE_END_GRACE = timedelta(seconds=5)
"""How long a stage's live pieces get to end by themselves once its agent ended (a piece
whose answer was read but whose workflow has not closed yet) before they are stopped."""

ELIGIBLE_LOCALLY = "eligible-locally"
"""Patch: a stage's first eligibility check is a local activity in the workflow task that
schedules the stage (one activity and one workflow task a stage instead of two); a failed
check waits in the retried ``bees.await_eligible`` as before (issue 16, point 2)."""

HANDOVER_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                             maximum_interval=RECHECK_EVERY, maximum_attempts=0)
"""The handover step's retries under that patch: 1 s, doubled, at most 15 s, no limit."""

RECHECK = RetryPolicy(initial_interval=RECHECK_EVERY, backoff_coefficient=1.0,
                      maximum_interval=RECHECK_EVERY, maximum_attempts=0)
"""Retry policy of the waits: every :data:`RECHECK_EVERY`, no backoff, no attempt limit
(samples-python ``polling/infrequent``); the busy wait ends itself after :data:`BUSY_LIMIT`."""

STAGE_HEARTBEAT_TIMEOUT = timedelta(seconds=10)
"""A stage whose worker stops heartbeating this long is started again from the top."""

STAGE_TIMEOUT = timedelta(hours=24)
"""Longest run of one stage attempt."""

STAGE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10), maximum_attempts=0,
)
"""Retries cover a lost worker (heartbeat timeout): a failed agent is a result, not an error."""

REVIEW_CHECKS = "review-checks"
"""Patch: a review stage with ``checks:`` runs them (``bees.review_checks``) before its
reviewer; a failed check sends the work back without running the reviewer (issue 26,
point 5). Asked only on a stage that has checks, so other histories get no marker."""

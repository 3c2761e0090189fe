"""Replay saved ``ItemWorkflow`` histories: a change that would break running items fails here.

The histories in ``histories/`` are real runs recorded by ``record_histories.py``: on a dev
server before the waits became retried activities (plain run, review send-back, failed stage
then retry, approval held then approved), and on the time-skipping server after (eligibility
wait then eligible, busy agent timeout then retry, review limit then retry and accept, cancel
while waiting, relinquish, a retried send answered from the journal). The ``before_patch_*``
histories are the eligibility wait, busy timeout and cancel scenarios recorded with the code
before the patches (timer loops), so the paths ``workflow.patched`` keeps for them replay too.
``continued_as_new_*`` are the first run (ending continued as new) and the last run (started
from the carried state) of a review loop on a server suggesting continue-as-new early.
``action_held_at_once_then_approved`` and ``interrupted_send_held_then_ran`` are on the
``action-returns-at-once`` patch: a held action's update returns at once, and a send cut
before its result was written is held until a person answers that it ran.
``relinquish_refused_then_retry`` is on the ``relinquish-keeps-state`` patch: a handover
refused after its stage stopped keeps the plan's memory, and a retry runs the next attempt.
``continued_with_review_count`` is a continued run (run 2) started with the rounds and review
count a handover carried: its first request for changes is the third, which stops it.
``model_stages_tool_then_verdict`` is on the ``model-loop`` patch: model agents against a
scripted model, a tool call and an answer, then a review's verdict (issue 13).
``relinquish_waits_for_cloud`` is on the ``handover-waits-for-cloud`` patch: the handover
step is tried without an attempt limit (backing off to 15 s) while Bees Cloud is down.
``relinquish_as_stage_finishes`` is on the ``relinquish-between-steps`` patch: Work finished
as the relinquish cancelled it (the cancel swallowed); the plan stops before Review.
``pieces_writer_delegates_two`` is on the ``pieces`` patch: Draft's writer hands two pieces
to other agents (``bees.delegate``, two ``bees.piece`` children) and uses both answers;
``piece_command_agent_finished`` is the first of those pieces' own ``bees.piece`` history.
``relinquish_stops_pieces`` is on the ``relinquish-stops-pieces`` patch: Draft's writer has
one piece finished and one running when the item is relinquished; the run cancels the running
piece and waits for it before the checkpoint; ``piece_stopped_with_relinquish`` is that
piece's own history (stopped, its slot given back, ``stopped`` recorded).
``denial_answers_a_retried_ask`` is on the ``denial-answers-a-retried-ask`` patch: a held
send is denied, the attempt fails, and the retried attempt's same send is answered with the
denial (no second request); the stage's finish is then approved. The history was made
before the ``denial-ends-at-a-person-s-retry`` patch, so it replays that way.
``denial_ends_at_a_person_s_retry`` is on that patch: the denied send, asked again in the same
attempt, is refused again; after a person's retry the next attempt's send is held afresh
(request 2) and approved → Done.
``stage_end_stops_pieces`` is on the ``stage-end-stops-pieces`` patch: Draft's writer ends
without waiting for its piece; after the grace the run stops the piece, then goes to Done.
``model_tool_waits_on_run``: a model agent's gated tool call is held; its activity waits on
the run's ``bees.await_decision`` update (no command of its own, so no patch: older runs never
receive it) until a person approves; the send runs, then Done (issue 24, point 1).
``required_tool_told_then_called`` is on the ``required-tools-told`` patch: a native-mode
model agent's final answer came before its required ``mail.send`` ran; told back once, it
calls the tool, then answers → Done (issue 26, point 3).
``model_reads_run_together`` is on the ``concurrent-reads`` patch: one reply asks for two
read-kind calls, which run at once, and a send, run after them → Done (issue 26, point 7).

Replay needs no server and runs no activity. If this fails after a change to
the workflow, the change is not safe for items already running: guard it with
``workflow.patched`` instead of regenerating the histories.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from bees_cli.engine.pieces import PieceWorkflow
from bees_cli.engine.workflows import ItemWorkflow

HISTORIES = sorted((Path(__file__).resolve().parent / "histories").glob("*.json"))
EXPECTED = {"plain_work_review_done", "review_send_back", "failed_then_retry",
            "approval_held_then_approved", "eligibility_wait_then_eligible",
            "busy_wait_timeout_then_retry", "review_limit_retry_then_accept",
            "cancel_while_waiting", "relinquish_failed_stage", "journal_answers_a_retried_send",
            "before_patch_eligibility_wait_then_eligible",
            "before_patch_busy_wait_timeout_then_retry", "before_patch_cancel_while_waiting",
            "continued_as_new_first_run", "continued_as_new_last_run",
            "action_held_at_once_then_approved", "interrupted_send_held_then_ran",
            "relinquish_refused_then_retry", "continued_with_review_count",
            "model_stages_tool_then_verdict", "relinquish_waits_for_cloud",
            "relinquish_as_stage_finishes", "pieces_writer_delegates_two",
            "piece_command_agent_finished", "relinquish_stops_pieces",
            "piece_stopped_with_relinquish", "eligible_locally_work_review_done",
            "eligible_locally_wait_then_eligible", "relinquish_stops_pieces_top_down",
            "denial_answers_a_retried_ask", "denial_ends_at_a_person_s_retry",
            "stage_end_stops_pieces",
            "model_tool_waits_on_run", "required_tool_told_then_called",
            "model_reads_run_together", "review_checks_send_back", "output_told_then_written"}


def test_every_saved_history_is_there() -> None:
    assert len(HISTORIES) == 37
    assert {path.stem for path in HISTORIES} == EXPECTED


@pytest.mark.parametrize("path", HISTORIES, ids=[path.stem for path in HISTORIES])
async def test_saved_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text(encoding="utf-8"))
    replayer = Replayer(workflows=[ItemWorkflow, PieceWorkflow],
                        data_converter=pydantic_data_converter)
    await replayer.replay_workflow(history)

"""What a handover carries of the plan (no server): the unfinished round is not counted, a
stopped review's count starts again, the comments go along."""

from __future__ import annotations

from bees_cli.engine.models import ItemState, ReviewRounds
from bees_cli.engine.workflow_state import FAILED, RUNNING, STOPPED
from bees_cli.engine.workflows import ItemWorkflow
from bees_cli.moves import Phase

ASKED = {"Review": [["fix round 1"], ["fix round 2"]]}


def handed(stage: str, round_: int, state: str, memo: ItemState,
           round_of: str | None = None) -> ReviewRounds:
    run = ItemWorkflow()
    run.live.stage, run.live.round, run.live.phase = stage, round_, Phase(state)
    run.live.round_of = stage if round_of is None else round_of
    return run._handed_reviews(memo)


def test_the_round_in_progress_runs_again_under_its_number() -> None:
    memo = ItemState(stage="Draft", rounds={"Draft": 3, "Review": 2}, change_requests=ASKED,
                     comments=["fix round 2"])
    for state in (RUNNING, FAILED):
        assert handed("Draft", 3, state, memo) == ReviewRounds(
            rounds={"Draft": 2, "Review": 2}, change_requests=ASKED, comments=["fix round 2"])
    # relinquished in Review round 2: Draft ran twice, Review's second round did not finish
    memo = ItemState(stage="Review", rounds={"Draft": 2, "Review": 2},
                     change_requests={"Review": [["fix round 1"]]})
    assert handed("Review", 2, RUNNING, memo) == ReviewRounds(
        rounds={"Draft": 2, "Review": 1}, change_requests={"Review": [["fix round 1"]]})


def test_a_stage_not_yet_counted_keeps_its_rounds() -> None:
    # the plan moved to Review but stopped before counting its round (Review's last was 1)
    memo = ItemState(stage="Review", rounds={"Draft": 2, "Review": 1})
    assert handed("Review", 2, RUNNING, memo, round_of="Draft").rounds == {
        "Draft": 2, "Review": 1}
    # a retried round starts again under its number (again): not counted either
    memo = ItemState(stage="Draft", again=True, rounds={"Draft": 2})
    assert handed("Draft", 1, RUNNING, memo, round_of="Review").rounds == {"Draft": 1}


def test_an_item_stopped_at_the_review_limit_goes_as_after_a_retry() -> None:
    memo = ItemState(stage="Review", rounds={"Draft": 3, "Review": 3},
                     change_requests={"Review": [*ASKED["Review"], ["fix round 3"]]},
                     comments=["fix round 3"])
    assert handed("Review", 3, STOPPED, memo) == ReviewRounds(
        rounds={"Draft": 3, "Review": 3}, change_requests={"Review": []},
        comments=["fix round 3"])

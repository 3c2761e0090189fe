"""The memory of an item's run: fresh at a start, restored after continue-as-new, carried on.

Part of :class:`~bees_cli.engine.workflows.ItemWorkflow` (its base class), deterministic like
it: no workflow commands, only the engine's models (passed through).
"""

from __future__ import annotations

from temporalio import workflow

from bees_cli.engine.workflow_state import RunParts

with workflow.unsafe.imports_passed_through():
    from bees_cli.engine.models import (
        ItemInput,
        ItemState,
        ReviewRounds,
        StageOutput,
    )
    from bees_cli.engine.snapshot import StageView
    from bees_cli.moves import (
        ChangesRequested,
        Event,
        Failed,
        Finished,
        Phase,
        RunState,
        Stage,
        StageKind,
    )
    from bees_cli.record.reasons import Reason, read_reason


class RunMemory(RunParts):
    """The plan's memory (:class:`ItemState`): a run's start (the rounds and review counts a
    handover carries), what a handover carries on, and what a continue-as-new carries
    (DESIGN.md, Rules: handover; reviews)."""

    def _fresh(self, item: ItemInput, start: str | None) -> ItemState:
        """Return the plan's memory at the start of a run at ``start`` (None: the first),
        with the rounds and review count the input carries from the earlier runs (a
        handover; none for a first run)."""
        carried = item.reviews or ReviewRounds()
        return ItemState(stage=start or item.snapshot.process.stages[0].name,
                         attempts=dict(item.attempts), outputs=dict(item.previous),
                         rounds=dict(carried.rounds), comments=list(carried.comments),
                         change_requests={stage: [list(c) for c in asked] for stage, asked
                                          in carried.change_requests.items()})

    def _handed_reviews(self, memo: ItemState) -> ReviewRounds:
        """Return the rounds and review count a handover carries to the next run.

        The current stage's round did not finish: it is not counted, so the next run starts
        it again under the same number. An item stopped at the review limit (its review round
        finished) is handed over as after a person's retry: that review's count starts again
        and the next run redoes the work under review with the last comments.
        """
        rounds = dict(memo.rounds)
        stage = self.live.stage
        if stage is not None and stage in rounds and self.live.phase is not Phase.STOPPED:
            if self.live.round_of == stage:
                rounds[stage] = self.live.round - 1
            elif memo.again:  # its round will start again: not counted either
                rounds[stage] -= 1
        asked = {name: [list(c) for c in each] for name, each in memo.change_requests.items()}
        if self.live.phase is Phase.STOPPED and stage in asked:
            asked[stage] = []
        return ReviewRounds(rounds=rounds, change_requests=asked, comments=list(memo.comments))

    def _restore(self, item: ItemInput) -> ItemState:
        """Return the plan's memory: the state a run continued as new carries, else fresh."""
        if item.state is None:
            self.live.journal = list(item.journal)
            return self._fresh(item, item.start_stage)
        state = item.state
        self.live.journal = list(state.journal)
        self.live.requests = list(state.requests)
        self.live.approved = {(stage, round_) for stage, round_ in state.approved}
        self.live.facts = state.facts
        self.live.retried_denials = frozenset(state.retried_denials)
        return state

    def _carry(self, item: ItemInput, memo: ItemState) -> ItemInput:
        """Return the input of the next run: this one's, with the plan's memory."""
        state = memo.model_copy(update={
            "requests": list(self.live.requests), "approved": sorted(self.live.approved),
            "journal": list(self.live.journal), "facts": self.live.facts,
            "retried_denials": sorted(self.live.retried_denials)})
        return item.model_copy(update={"state": state})

    def _run_state(self, stages: list[StageView], memo: ItemState, stage: str, round_: int,
                   phase: Phase, approved: bool = False) -> RunState:
        """Return the state :func:`bees_cli.moves.next_move` decides from: the process, the
        plan's memory, and whether a person approved the finish of ``stage``'s ``round_``
        (``approved``: just now)."""
        return RunState(
            stages=tuple(Stage(view.name, StageKind(view.kind), view.reviews,
                               view.approval == "required") for view in stages),
            stage=stage, round=round_, phase=phase, rounds=dict(memo.rounds),
            change_requests=len(memo.change_requests.get(stage, [])),
            comments=tuple(memo.comments),
            finish_approved=approved or (stage, round_) in self.live.approved)


def stage_event(stage: StageView, result: StageOutput) -> Event:
    """Return what a stage's end was (:mod:`bees_cli.moves`): failed (its reason, else
    ``failed``), a review that asked for changes (its comments), else finished."""
    if not result.ok:
        return Failed(result.reason or "failed")
    if stage.kind == "review" and result.verdict == "changes_requested":
        return ChangesRequested(tuple(result.comments))
    return Finished()


def stage_failure(result: StageOutput) -> Reason:
    """Return why a stage that did not finish failed: the code its producer handed over
    (the runner, the model loop, a denied finish; issue 24, point 3), or for an output an
    older history carries, without one, its words read back
    (:func:`~bees_cli.record.reasons.read_reason`)."""
    return result.why or read_reason(result.reason or "failed")

"""The approval gate of an item's run: a person's decisions and the agent's add-on actions.

Part of :class:`~bees_cli.engine.workflows.ItemWorkflow` (its base class), deterministic like
it: imports only ``datetime``, ``temporalio``, the engine's models and the pure gate
(:mod:`bees_cli.gate`, which decides every action; passed through).
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from bees_cli.engine.workflow_state import APPROVAL, RUNNING, RunParts

with workflow.unsafe.imports_passed_through():
    from bees_cli.engine.gate_models import decided_facts, edit_refusal
    from bees_cli.engine.models import (
        ACTION_DONE_UPDATE,
        ACTION_UPDATE,
        AWAIT_DECISION_UPDATE,
        DECIDE_UPDATE,
        JOURNAL_ACTIVITY,
        RECORD_ACTIVITY,
        STATE_QUERY,
        ActionAnswer,
        ActionAsk,
        ApprovalRequest,
        DecideInput,
        DecisionWait,
        ItemInput,
        JournalEntry,
        JournalFound,
        JournalQuery,
        RecordInput,
        RunView,
        StageOutput,
    )
    from bees_cli.engine.snapshot import EngineSnapshot, StageView
    from bees_cli.engine.workflow_policies import (
        ACTION_AT_ONCE,
        DENIAL_ANSWERS_RETRY,
        DENIAL_ENDS_AT_RETRY,
        SHORT,
    )
    from bees_cli.gate import (
        ActionCall,
        Facts,
        Intent,
        Journal,
        Kind,
        decide,
        refusal,
    )
    from bees_cli.gate import Verdict as V
    from bees_cli.moves import Phase
    from bees_cli.record.events import (
        ActionAnswered,
        ActionRan,
        ApprovalAsked,
        ApprovalCancelled,
        ApprovalRelinquished,
        Approved,
        Denied,
        Resumed,
    )
    from bees_cli.rules import review_limit_reason
    from bees_cli.utc import format_utc
    from bees_cli.why import Reason


def refuse(message: str) -> ApplicationError:
    """Return the error that refuses a person's or an agent's request (not retried)."""
    return ApplicationError(message, type="Refused", non_retryable=True)


class ApprovalGate(RunParts):
    """The item's approvals and add-on actions (DESIGN.md, Rules: approvals; the journal).

    A person approves or denies waiting requests (``bees.decide``). While a stage runs,
    ``bees action`` decides most actions itself (refused, journal-answered, ungated: no
    update) and asks the run (``bees.action``) only for a gated action on an approval stage
    or one interrupted before its result was written; since :data:`ACTION_AT_ONCE` that
    update returns at once with the held request and the caller waits on the local record.
    ``bees.action_done`` stays registered for runs that journal through it (``bees action``
    now journals to the local record itself).
    """

    _told: frozenset[int] = frozenset()
    """Requests whose decision ``bees.decide`` has written to the local record (replaced,
    never mutated: a class default needs no ``__init__``)."""

    def _fact(self, prefix: str) -> str:
        """Return a new key for a fact of the history (deterministic: a counter)."""
        self.live.facts += 1
        return f"{prefix}:{self.live.facts}"

    def _where(self) -> str:
        stage = f" at {self.live.stage}" if self.live.stage else ""
        return f"{self.live.phase.value}{stage}"

    @workflow.update(name=DECIDE_UPDATE)
    async def decide(self, decision: DecideInput) -> list[int]:
        """Approve or deny the waiting request ``decision.request_id`` (all when None); record
        who, when and what; return the ids decided."""
        chosen = self._waiting(decision.request_id)
        for request in chosen:
            request.status = "approved" if decision.approve else "denied"
            request.who, request.at, request.reason = decision.who, decision.at, decision.reason
            if request.interrupted_at is not None:
                request.answer = decision.answer
            if decision.approve and decision.input is not None:
                request.edited_input = decision.input  # the validator allows one action
            if decision.approve:
                self.live.approved.add((request.stage, request.round))
        for request in chosen:
            answered = (Approved if request.status == "approved" else Denied)(
                stage=request.stage, round=request.round, request=request.id,
                action=request.action, action_kind=request.kind, summary=request.summary,
                digest=request.digest, input=request.input, who=decision.who,
                decided_at=decision.at, reason=request.reason)
            if request.interrupted_at is not None:  # set only then: other facts unchanged
                answered = answered.model_copy(update={
                    "interrupted_at": request.interrupted_at, "answer": request.answer})
            if request.edited_input is not None:  # likewise
                answered = answered.model_copy(update={"edited_input": request.edited_input})
            await self._record(RecordInput.of(
                answered, item_id=self._id, status=None,
                key=f"approval:{request.id}:{request.status}",
                approval=request.model_dump(mode="json")))
        self._told = self._told | {request.id for request in chosen}
        if not self._waiting(None) and self.live.phase is Phase.APPROVAL:
            # running again before this update returns, so `bees run --exit-when-idle`
            # that delivered it sees work under way
            self.live.phase = Phase.RUNNING
            await self._record(RecordInput.of(
                Resumed(stage=self.live.stage), item_id=self._id, status=RUNNING,
                agent=self.live.agent, key=self._fact("resumed")))
        return [request.id for request in chosen]

    @decide.validator
    def _decide_allowed(self, decision: DecideInput) -> None:
        if not self._waiting(None):
            raise refuse(f"nothing waits for approval (it is {self._where()})")
        if decision.request_id is not None and not self._waiting(decision.request_id):
            ids = ", ".join(str(r.id) for r in self._waiting(None))
            raise refuse(f"request {decision.request_id} does not wait for approval "
                          f"(waiting: {ids})")
        if not decision.approve and not (decision.reason or "").strip():
            raise refuse("a denial needs a reason")
        chosen = self._waiting(decision.request_id)
        if decision.approve and decision.answer is None and any(
                r.interrupted_at is not None for r in chosen):
            raise refuse("an action that may already have run needs an answer: --ran "
                         "(record it as run) or --again (run it once more)")
        if decision.input is not None:
            edit = edit_refusal(decision, chosen)
            if edit is not None:
                raise refuse(edit)

    @workflow.update(name=AWAIT_DECISION_UPDATE)
    async def await_decision(self, wait: DecisionWait) -> ApprovalRequest:
        """Wait in the run for a person's decision on held request ``wait.request_id``; return
        the request (issue 24, point 1: a model agent's held tool call waits on the engine,
        not on a loop reading the local record).

        Returns once ``bees.decide`` wrote the decision to the local record (so its facts
        come before the action's), once the run closed the request (cancelled,
        relinquished), or once the stage round that asked it no longer runs (the request
        still ``waiting``; the caller is gone or gives up): a waiting handler never holds up
        the run's end or its continue-as-new. Emits no command.
        """
        request = next(r for r in self.live.requests if r.id == wait.request_id)
        await workflow.wait_condition(lambda: self._settled(request))
        return request

    @await_decision.validator
    def _await_allowed(self, wait: DecisionWait) -> None:
        if not any(r.id == wait.request_id for r in self.live.requests):
            raise refuse(f"no approval request {wait.request_id}")

    def _settled(self, request: ApprovalRequest) -> bool:
        """Tell whether a caller waiting on ``request`` has its answer (:meth:`await_decision`)."""
        if request.status == "waiting":
            return (self.live.phase not in (Phase.RUNNING, Phase.APPROVAL)
                    or self.live.stage != request.stage or self.live.round != request.round)
        return request.status not in ("approved", "denied") or request.id in self._told

    def _waiting(self, request_id: int | None) -> list[ApprovalRequest]:
        return [r for r in self.live.requests if r.status == "waiting"
                and (request_id is None or r.id == request_id)]

    @workflow.update(name=ACTION_UPDATE)
    async def action(self, ask: ActionAsk) -> ActionAnswer:
        """May the stage's agent run ``ask.action`` now? (DESIGN.md, Rules: approvals)

        Decided by :func:`bees_cli.gate.decide` from the run's facts: answered from the
        journal when the same action with the same input already ran (exit 0) in this stage
        (not for ``read`` actions, which change nothing and whose answer may have changed);
        held until a person decides when the action is gated on this stage, or when its
        intent has no result (``ask.interrupted_at``: held once per interruption, answered
        ``held`` at once); else ``run``.
        """
        addon, name = ask.action.split(".", 1)
        action = self._snapshot.addons[addon].actions[name]
        call = ActionCall(action=ask.action, agent=ask.agent,
                          tools=tuple(self._snapshot.agents[ask.agent].tools),
                          kind=Kind(action.kind), approval=self._stage_spec(ask.stage).approval)
        if ask.interrupted_at is not None and workflow.patched(ACTION_AT_ONCE):
            return await self._hold_interrupted(ask, call, list(action.command))
        facts, entry = Facts(), None
        if call.journaled:
            entry = await self._journal_hit(ask)
            if entry is not None:
                facts = Facts(journal=Journal.RAN)
        decision = decide(call, facts)
        if decision.verdict is V.JOURNAL:
            assert entry is not None
            await self._record(RecordInput.of(
                ActionAnswered(stage=ask.stage, round=self.live.round, action=ask.action,
                               digest=ask.digest, attempt=ask.attempt,
                               exit_code=entry.exit_code, ran_at=entry.at,
                               person_said=entry.person_said),
                item_id=self._id, status=None,
                key=f"answered:{ask.stage}:{ask.attempt}:{ask.action}:{ask.digest}"))
            return ActionAnswer(decision="journal", kind=action.kind,
                                exit_code=entry.exit_code, stdout=entry.stdout, at=entry.at)
        if decision.verdict is V.REFUSE:  # the validator refused it already
            raise refuse(decision.reason or "")
        if decision.verdict is V.RUN:  # not gated
            return ActionAnswer(decision="run", kind=action.kind, command=list(action.command))
        request = next((r for r in self.live.requests if r.stage == ask.stage
                        and r.action == ask.action and r.digest == ask.digest
                        and r.status in ("waiting", "approved")), None)
        if request is None:
            request = self._denied(ask)
        if request is not None:
            decision = decide(call, decided_facts(facts, request))
        if request is None:
            request = ApprovalRequest(
                id=len(self.live.requests) + 1, item_id=self._id, stage=ask.stage,
                round=self.live.round, action=ask.action, kind=action.kind, summary=ask.summary,
                digest=ask.digest, input=ask.input, asked_at=self._now())
            self.live.requests.append(request)
        if decision.verdict is V.HOLD:
            await self._hold(request, attempt=ask.attempt)
            if ask.at_once and workflow.patched(ACTION_AT_ONCE):
                return ActionAnswer(decision="held", kind=action.kind, request_id=request.id)
            await workflow.wait_condition(lambda: request.status != "waiting")
            decision = decide(call, decided_facts(facts, request))
        if decision.verdict in (V.DENIED, V.NOT_RUN):
            return ActionAnswer(decision="denied", kind=action.kind, request_id=request.id,
                                reason=decision.reason)
        # approved with a corrected input: the caller runs that one (issue 26, point 4)
        return ActionAnswer(decision="run", kind=action.kind, command=list(action.command),
                            request_id=request.id, input=request.edited_input,
                            edited_by=None if request.edited_input is None else request.who)

    def _denied(self, ask: ActionAsk) -> ApprovalRequest | None:
        """Return the request a person denied for this very ask (same stage round, action
        and input), or None: asked again (the agent asking again in the same attempt, or the
        stage's next attempt after ``bees run`` stopped and delivered a queued denial), it
        gets the denial and its reason, like an approved ask gets its approval (DESIGN.md,
        Rules: approvals). Since :data:`DENIAL_ENDS_AT_RETRY`, a denial given before a
        person's retry of the round no longer answers: None, and the ask is held afresh."""
        denials = [r for r in self.live.requests if r.stage == ask.stage
                   and r.round == self.live.round and r.action == ask.action
                   and r.digest == ask.digest and r.status == "denied"
                   and r.interrupted_at is None]
        if not denials or not workflow.patched(DENIAL_ANSWERS_RETRY):
            return None
        standing = [r for r in denials if r.id not in self.live.retried_denials]
        if len(standing) < len(denials) and not workflow.patched(DENIAL_ENDS_AT_RETRY):
            return denials[0]  # a history made before the patch: the first denial answers
        return standing[0] if standing else None

    def _retried(self, stage: str, round_: int) -> None:
        """Note that a person retried ``stage``'s ``round_``: its denials no longer answer an
        ask of the attempts that follow (:data:`DENIAL_ENDS_AT_RETRY`; no command)."""
        self.live.retried_denials = self.live.retried_denials | {
            r.id for r in self.live.requests
            if r.stage == stage and r.round == round_ and r.status == "denied"}

    async def _hold_interrupted(self, ask: ActionAsk, call: ActionCall,
                                command: list[str]) -> ActionAnswer:
        """Hold an action whose intent has no result (it may already have run) for a person,
        once per interruption; return ``held`` (the caller reads the person's answer in the
        local record), or the answer already given."""
        kind = call.kind.value
        request = next((r for r in self.live.requests if r.stage == ask.stage
                        and r.action == ask.action and r.digest == ask.digest
                        and r.interrupted_at == ask.interrupted_at), None)
        # the caller asks so only after its journal showed no result of this action
        facts = Facts(intent=Intent.OPEN)
        decision = decide(call, facts if request is None else decided_facts(facts, request))
        if decision.verdict is V.RUN and request is None:
            # a read writes no intent, so is never asked so; were it, it would run
            return ActionAnswer(decision="run", kind=kind, command=command)
        if request is None:
            request = ApprovalRequest(
                id=len(self.live.requests) + 1, item_id=self._id, stage=ask.stage,
                round=self.live.round, action=ask.action, kind=kind, summary=ask.summary,
                digest=ask.digest, input=ask.input, asked_at=self._now(),
                interrupted_at=ask.interrupted_at)
            self.live.requests.append(request)
        if decision.verdict is V.HOLD_MAY_HAVE_RUN:
            await self._hold(request, attempt=ask.attempt)
        return ActionAnswer(decision="held", kind=kind, request_id=request.id)

    @action.validator
    def _action_allowed(self, ask: ActionAsk) -> None:
        if self.live.phase not in (Phase.RUNNING, Phase.APPROVAL) or ask.stage != self.live.stage:
            raise refuse(f"stage {ask.stage} is not running (the item is {self._where()})")
        agent = self._snapshot.agents.get(ask.agent)
        if (ask.agent != self.live.agent and not self._piece_agent(ask.piece, ask.agent)) or (
                agent is None):
            raise refuse(f"agent {ask.agent} does not run stage {ask.stage} "
                          f"(its agent is {self.live.agent})")
        refused = refusal(ask.action, ask.agent, tuple(agent.tools))
        if refused is not None:
            raise refuse(refused.reason or "")
        addon, _, name = ask.action.partition(".")
        if addon not in self._snapshot.addons or name not in self._snapshot.addons[addon].actions:
            raise refuse(f"no action {ask.action} among the item's add-ons")

    @workflow.update(name=ACTION_DONE_UPDATE)
    async def action_done(self, entry: JournalEntry) -> None:
        """Journal one run of an add-on action (its result), in the run and the local record."""
        # text equality: a repeated delivery carries the same format_utc text (actions._now)
        if not any(e.at == entry.at and e.digest == entry.digest and e.action == entry.action
                   for e in self.live.journal):
            self.live.journal.append(entry)
        await self._record(RecordInput.of(
            ActionRan(stage=entry.stage, round=entry.round, action=entry.action,
                      action_kind=entry.kind, digest=entry.digest, attempt=entry.attempt,
                      exit_code=entry.exit_code, request=entry.request_id),
            item_id=self._id, status=None,
            key=f"ran:{entry.stage}:{entry.action}:{entry.digest}:{entry.at}",
            journal=entry.model_dump(mode="json")))

    @workflow.query(name="bees.journal")
    def journal(self) -> list[JournalEntry]:
        """Return the item's journal of action runs, oldest first."""
        return list(self.live.journal)

    @workflow.query(name=STATE_QUERY)
    def view(self) -> RunView:
        """Return where the item is, for ``bees run`` to rebuild a lost local record (its
        row with the reason the record showed, its approval requests, its journal)."""
        reason = None
        if self.live.phase is Phase.FAILED:
            reason = self.live.reason
        elif self.live.phase is Phase.STOPPED:
            reason = review_limit_reason(str(self.live.stage))
        elif self.live.phase is Phase.APPROVAL and self._waiting(None):
            reason = self._waiting(None)[-1].label
        live = self.live
        item = None if live.item is None else live.item.model_copy(update={"state": None})
        restart = (self._restart_stage(live.item)
                   if live.item is not None and live.phase is Phase.RELINQUISHED else None)
        return RunView(item=item, state=live.phase.value, stage=live.stage, round=live.round,
                       agent=live.agent, reason=reason, restart=restart,
                       requests=list(self.live.requests), journal=list(self.live.journal))

    def _restart_stage(self, item: ItemInput) -> str:
        """Return the stage a handover restarts at (the item's workflow says which)."""
        raise NotImplementedError

    def _piece_agent(self, piece: str | None, agent: str) -> bool:
        """Tell whether ``agent`` runs live piece ``piece`` of this run (issue 14: the item's
        workflow says, :class:`~bees_cli.engine.pieces.Delegation`); none here."""
        return False

    async def _journal_hit(self, ask: ActionAsk) -> JournalEntry | None:
        for entry in self.live.journal:
            if (entry.stage, entry.action, entry.digest, entry.exit_code) == (
                    ask.stage, ask.action, ask.digest, 0):
                return entry
        found: JournalFound = await workflow.execute_activity(
            JOURNAL_ACTIVITY, JournalQuery(item_id=self._id, stage=ask.stage, action=ask.action,
                                           digest=ask.digest),
            result_type=JournalFound, start_to_close_timeout=SHORT)
        if found.entry is not None:
            self.live.journal.append(found.entry)
        return found.entry

    async def _hold(self, request: ApprovalRequest, *, attempt: int) -> None:
        self.live.phase = Phase.APPROVAL
        await self._record(RecordInput.of(
            ApprovalAsked(stage=request.stage, round=request.round, request=request.id,
                          action=request.action, action_kind=request.kind,
                          summary=request.summary, digest=request.digest),
            item_id=self._id, status=APPROVAL, agent=self.live.agent, reason=request.label,
            key=f"approval:{request.id}:asked:{attempt}",
            approval=request.model_dump(mode="json")))

    @property
    def _id(self) -> str:
        assert self.live.item is not None
        return self.live.item.item_id

    @property
    def _snapshot(self) -> EngineSnapshot:
        assert self.live.item is not None
        return self.live.item.snapshot

    def _stage_spec(self, name: str) -> StageView:
        return self._snapshot.stage(name)

    def _now(self) -> str:
        return format_utc(workflow.now())

    async def _close_waiting(self, status: str) -> None:
        """Close every waiting approval request with ``status`` (``cancelled`` or
        ``relinquished``), so `bees approvals` no longer lists it and a held action is
        answered (denied) instead of left waiting when the run ends."""
        for request in self._waiting(None):
            request.status = status
            closed = ApprovalCancelled if status == "cancelled" else ApprovalRelinquished
            await self._record(RecordInput.of(
                closed(stage=request.stage, round=request.round, request=request.id,
                       action=request.action),
                item_id=self._id, status=None, key=f"approval:{request.id}:{status}",
                approval=request.model_dump(mode="json")))

    async def _finish_gate(self, stage: StageView, round_: int, agent: str,
                           result: StageOutput) -> StageOutput:
        """Hold a finished stage with ``approval: required`` until a person approves it.

        A person who approved a held action of this stage round approved the stage too.
        A denial fails the stage with the reason.
        """
        if (stage.name, round_) in self.live.approved:
            return result
        request = ApprovalRequest(
            id=len(self.live.requests) + 1, item_id=self._id, stage=stage.name, round=round_,
            action=None, kind="finish", summary=f"output {result.output_dir}",
            asked_at=self._now())
        self.live.requests.append(request)
        await self._hold(request, attempt=result.attempt)
        await workflow.wait_condition(lambda: request.status != "waiting")
        self.live.phase = Phase.RUNNING
        if request.status == "denied":
            why = Reason(code="finish_denied", who=request.who, said=request.reason)
            return result.model_copy(update={"ok": False, "reason": why.words(), "why": why})
        return result

    async def _record(self, record: RecordInput) -> None:
        await workflow.execute_activity(RECORD_ACTIVITY, record, start_to_close_timeout=SHORT)

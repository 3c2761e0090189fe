"""Every history kind has a model and a one-line rendering; old and unknown rows never crash."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from bees_cli.record.events import (
    KINDS,
    KNOWN_MODELS,
    EventBase,
    StageFailed,
    UnknownEvent,
    parse_event,
    parse_event_json,
)

SHA = "ab" * 32
PICK = {"agent": "writer", "reason": "named on the item",
        "skipped": [{"agent": "editor", "why": "disabled"}]}
END = {"agent": "reviewer", "attempt": 2, "reason": None, "verdict": "changes_requested",
       "comments": ["shorter", "cite"], "output_dir": "/r/Review", "stdout": "/l/a.stdout",
       "stderr": "/l/a.stderr", "exit_code": 0}
DECISION = {"request": 3, "action": "mail.send", "action_kind": "send", "summary": "to bob",
            "digest": "d", "input": {"to": "bob"}, "who": "maya",
            "decided_at": "2025-01-06T10:00:00Z", "reason": None}

# kind -> (data as a writer stores it, stage, round, the line `bees item show` prints)
SAMPLES: dict[str, tuple[dict[str, Any], str | None, int | None, str]] = {
    "created": ({}, None, None, "created"),
    "scheduled": ({"schedule": "weekly"}, None, None, "created by schedule weekly"),
    "pick": ({"pick": PICK, "reviewed_by": None}, "Draft", 1,
             "Draft round 1: picked writer: named on the item; skipped editor (disabled)"),
    "waiting": ({"reasons": ["folder reports is not linked here", "add-on mail missing"],
                 "pick": None}, "Draft", 1,
                "Draft round 1: waiting: folder reports is not linked here; add-on mail missing"),
    "busy": ({"reason": "agent writer is busy (1 of 1 runs: 01A); 2nd in line",
              "position": 2}, "Draft", None,
             "Draft: agent writer is busy (1 of 1 runs: 01A); 2nd in line"),
    "stage_started": ({"agent": "writer", "attempt": 1, "comments": ["shorter"]}, "Draft", 2,
                      "Draft round 2: started writer (attempt 1), with review comments: "
                      "shorter"),
    "stage_finished": (END, "Review", 1, "Review round 1: finished, verdict changes_requested, "
                       "comments: shorter | cite; output /r/Review"),
    "stage_failed": ({**END, "reason": "exit 3", "verdict": None}, "Review", 1,
                     "Review round 1: failed (attempt 2): exit 3"),
    "stage_interrupted": ({"agent": "writer", "attempt": 1, "reason": "bees run stopped"},
                          "Draft", 1, "Draft round 1: attempt 1 interrupted: bees run stopped"),
    "review_check": ({"check": "file_exists Draft/s.json", "ok": False,
                      "message": "Draft/s.json does not exist in the run folder"}, "Review", 1,
                     "Review round 1: check file_exists Draft/s.json failed: Draft/s.json "
                     "does not exist in the run folder"),
    "review_limit": ({"rounds": [["a"], [], ["b", "c"]]}, "Review", 3,
                     "Review round 3: stopped for a person after 3 requests for changes — "
                     "round 1: a; round 2: (no comments); round 3: b | c"),
    "retried": ({"who": "maya", "asked_at": "2025-01-06T10:00:00Z"}, "Draft", 1,
                "Draft round 1: retried by maya at 2025-01-06T10:00:00Z"),
    "accepted": ({"who": "maya", "asked_at": "2025-01-06T10:00:00Z"}, "Review", 3,
                 "Review round 3: accepted by maya at 2025-01-06T10:00:00Z"),
    "approval_asked": ({"request": 1, "action": None, "action_kind": "finish",
                        "summary": "output /r/Send", "digest": None}, "Send", 1,
                       "Send round 1: waiting for approval (request 1): finish (output /r/Send)"),
    "approved": (DECISION, "Send", 1, "Send round 1: request 3 approved by maya at "
                 "2025-01-06T10:00:00Z — mail.send to bob"),
    "denied": ({**DECISION, "reason": "not now"}, "Send", 1, "Send round 1: request 3 denied "
               "by maya at 2025-01-06T10:00:00Z: not now — mail.send to bob"),
    "approval_cancelled": ({"request": 2, "action": "mail.send"}, "Send", 1,
                           "Send round 1: request 2 closed: the item was cancelled"),
    "approval_relinquished": ({"request": 2, "action": None}, "Send", 1,
                              "Send round 1: request 2 closed: the item was relinquished"),
    "resumed": ({}, "Send", None, "Send: running again: every request answered"),
    "action_ran": ({"action": "mail.send", "action_kind": "send", "digest": SHA, "attempt": 1,
                    "exit_code": 0, "request": 3}, "Send", 1,
                   "Send round 1: ran mail.send (attempt 1), exit 0, input sha256 abababababab"),
    "action_answered": ({"action": "mail.send", "digest": SHA, "attempt": 2, "exit_code": 0,
                         "ran_at": "2025-01-06T10:01:00Z"}, "Send", 1,
                        "Send round 1: mail.send (attempt 2) answered from the journal: it ran "
                        "at 2025-01-06T10:01:00Z, exit 0; not run again"),
    "done": ({}, "Done", None, "Done: done"),
    "cancel_asked": ({"who": "maya"}, None, None, "cancel asked by maya"),
    "cancelled": ({}, "Draft", None, "Draft: cancelled"),
    "relinquished": ({"who": "maya", "asked_at": "2025-01-06T11:00:00Z",
                      "restart_stages": {"main": "Draft"}, "checkpoint_sha256": SHA,
                      "files": 4, "total_bytes": 2048, "released": True}, "Review", None,
                     "Review: relinquished by maya; restarts at Draft; checkpoint abababababab "
                     "(4 files, 2048 bytes)"),
    "continued": ({"from": "maya-laptop", "checkpoint_sha256": SHA,
                   "restart_stages": {"main": "Draft", "piece-2": "Review"}, "files": 4,
                   "journal": 1, "run": 2}, "Draft", None,
                  "Draft: continued here as run 2 from maya-laptop; restarts at main at Draft, "
                  "piece-2 at Review; checkpoint abababababab (4 files)"),
    "recovered": ({"status": "waiting for approval", "requests": 1, "journal": 0}, "Send",
                  None, "Send: rebuilt from the engine (waiting for approval): the local "
                  "record had lost it; 1 approval request(s), 0 journal entries"),
    "lost": ({"was": "running", "reason": "the engine's database was replaced"}, "Send", None,
             "Send: lost: the engine's database was replaced (it was running); bees retry "
             "starts it again"),
    "piece_started": ({"piece": "r1-a1-p1", "parent": None, "caller": "writer",
                       "named": "alpha", "task": "figures", "depth": 1}, "Draft", 1,
                      "Draft round 1: piece r1-a1-p1 handed to alpha by writer (the stage, "
                      "depth 1): figures"),
    "piece_picked": ({"piece": "r1-a1-p1", "agent": "alpha", "reason": "named by the caller"},
                     "Draft", 1, "Draft round 1: piece r1-a1-p1: picked alpha (named by the "
                     "caller)"),
    "piece_waiting": ({"piece": "r1-a1-p1", "reason": "waiting for agent alpha: 1 of 1 busy "
                       "(items 01OTHER)"}, "Draft", 1, "Draft round 1: piece r1-a1-p1 waits: "
                      "waiting for agent alpha: 1 of 1 busy (items 01OTHER)"),
    "piece_finished": ({"piece": "r1-a1-p1", "agent": "alpha", "reason": None}, "Draft", 1,
                       "Draft round 1: piece r1-a1-p1 (alpha) finished"),
    "piece_failed": ({"piece": "r1-a1-p2", "agent": "gamma", "reason": "exit 4: no sources"},
                     "Draft", 1, "Draft round 1: piece r1-a1-p2 (gamma) failed: exit 4: no "
                     "sources"),
    "piece_stopped": ({"piece": "r1-a1-p2", "agent": "gamma",
                       "reason": "stopped with its run"}, "Draft", 1,
                      "Draft round 1: piece r1-a1-p2 (gamma) stopped: stopped with its run"),
}


def test_every_kind_has_a_sample() -> None:
    assert set(SAMPLES) == KINDS
    assert len(KNOWN_MODELS) == len(KINDS) == 34


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_every_kind_renders_its_line(kind: str) -> None:
    data, stage, round_, line = SAMPLES[kind]
    event = parse_event(kind, data, at="2025-01-06T09:00:00Z", stage=stage, round=round_)
    assert not isinstance(event, UnknownEvent)
    assert event.kind == kind
    assert event.render() == line
    assert parse_event_json(event.to_json()) == event


def test_a_kind_without_a_renderer_cannot_be_made() -> None:
    class Mute(EventBase):
        kind: Literal["mute"] = "mute"

    with pytest.raises(TypeError, match="abstract"):
        Mute(at="2025-01-06T09:00:00Z")  # type: ignore[abstract]


def test_json_keeps_the_stored_field_names() -> None:
    data, stage, _, _ = SAMPLES["continued"]
    shown = parse_event("continued", data, at="t", stage=stage).to_json()
    assert shown == {"kind": "continued", "at": "t", "stage": "Draft", "round": None,
                     "computer": None, "from": "maya-laptop", "checkpoint_sha256": SHA,
                     "restart_stages": {"main": "Draft", "piece-2": "Review"}, "files": 4,
                     "journal": 1, "pieces": None, "run": 2, "retired_runner": None,
                     "set_aside": None, "set_aside_files": None}


def test_old_rows_read_with_extra_fields_ignored_and_missing_ones_defaulted() -> None:
    event = parse_event("stage_failed", {"reason": "agent writer busy for 10 minutes",
                                         "someday": "a field from elsewhere"},
                        at="t", stage="Draft", round=1)
    assert event == StageFailed(at="t", stage="Draft", round=1,
                                reason="agent writer busy for 10 minutes")
    assert event.render() == "Draft round 1: failed: agent writer busy for 10 minutes"
    assert "someday" not in event.to_json()


def test_an_unknown_kind_is_shown_as_it_is() -> None:
    event = parse_event("piece_merged", {"piece": "p-2", "agent": "helper"}, at="t",
                        stage="Draft", round=1)
    assert event == UnknownEvent(kind="piece_merged", at="t", stage="Draft", round=1,
                                 data={"piece": "p-2", "agent": "helper"})
    assert event.render() == 'Draft round 1: piece_merged {"agent": "helper", "piece": "p-2"}'
    assert event.to_json() == {"kind": "piece_merged", "at": "t", "stage": "Draft",
                               "round": 1, "computer": None,
                               "data": {"piece": "p-2", "agent": "helper"}}
    assert parse_event_json(event.to_json()) == event


def test_a_known_kind_that_does_not_fit_its_model_is_kept_whole() -> None:
    event = parse_event("pick", {"pick": "writer"}, at="t")
    assert event == UnknownEvent(kind="pick", at="t", data={"pick": "writer"})
    assert event.render() == 'pick {"pick": "writer"}'
    assert parse_event_json(event.to_json()) == event


def test_a_fact_another_computer_recorded_names_it() -> None:
    data, stage, round_, line = SAMPLES["pick"]
    event = parse_event("pick", data, at="t", stage=stage, round=round_, computer="maya-laptop")
    assert event.computer == "maya-laptop"
    assert event.render() == "[maya-laptop] " + line
    assert event.to_json()["computer"] == "maya-laptop"
    assert parse_event_json(event.to_json()) == event
    created = parse_event("created", {}, at="t", computer="maya-laptop")
    assert created.render() == "[maya-laptop] created"
    unknown = parse_event("piece_merged", {"piece": "p-2"}, at="t", computer="maya-laptop")
    assert unknown.render() == '[maya-laptop] piece_merged {"piece": "p-2"}'
    assert parse_event_json(unknown.to_json()) == unknown


def test_an_answer_from_a_persons_ran_claims_no_exit_code() -> None:
    """``bees approve --ran`` journals that the action ran; nothing recorded its exit code or
    output, so the history line does not claim one."""
    event = parse_event("action_answered", {
        "action": "mail.send", "digest": SHA, "attempt": 2, "exit_code": 0,
        "ran_at": "2025-01-06T10:01:00Z", "person_said": True}, at="2025-01-06T10:02:00Z",
        stage="Send", round=1)
    assert event.render() == (
        "Send round 1: mail.send (attempt 2) answered from the journal: it ran at "
        "2025-01-06T10:01:00Z, as a person said (bees approve --ran; no exit code or output "
        "recorded); not run again")


def test_confirming_a_run_journals_it_as_a_persons_word(tmp_path: Any) -> None:
    from bees_cli.agents.action_call import ActionCallInput
    from bees_cli.record.local import LocalRecord
    from bees_cli.usecases.action_journal import confirmed

    record = LocalRecord(tmp_path / "record.db")
    record.add_item(id="01JH3QX5Z8KZ2W4M6N8P0R2T4V", process="p", title="t", workspace="/w",
                    run_folder=str(tmp_path / "run"), input="", stage="Send")
    call = ActionCallInput(item_id="01JH3QX5Z8KZ2W4M6N8P0R2T4V", stage="Send", agent="sender",
                           action="mail.send", attempt=2)
    intent = {"seq": 1, "attempt": 1, "at": "2025-01-06T10:01:00Z"}
    confirmed(record, call, "send", intent, 1)
    [fact] = [e for e in record.events("01JH3QX5Z8KZ2W4M6N8P0R2T4V")
              if e.kind == "action_answered"]
    assert "as a person said" in fact.typed().render()

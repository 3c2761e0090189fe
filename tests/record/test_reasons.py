"""History reasons: stored sentences read as codes and values, worded back the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bees_cli.agents.selection import choose_agent
from bees_cli.machine.connections import AddonConnection
from bees_cli.machine.links import resolve_folder
from bees_cli.record.events import parse_event, parse_event_json
from bees_cli.record.reasons import Reason, read_reason
from bees_cli.workspace.models import Agent, CommandRunner, Folder, Stage

RUNNER = CommandRunner(command=["true"])

# what each writer stores (engine/, agents/, record/) -> the machine value --json gives
SENTENCES: list[tuple[str, dict[str, Any]]] = [
    ("folder notes: not linked on this computer (bees link notes PATH)",
     {"code": "folder_not_linked", "folder": "notes"}),
    ("folder notes: linked to /gone, which is not an existing directory",
     {"code": "folder_link_not_dir", "folder": "notes", "path": "/gone"}),
    ("folder notes: default path /srv/notes is not an existing directory",
     {"code": "folder_default_not_dir", "folder": "notes", "path": "/srv/notes"}),
    ("folder notes: default path ${NOTES}/x: environment variable NOTES is not set",
     {"code": "folder_env_unset", "folder": "notes", "path": "${NOTES}/x", "env": "NOTES"}),
    ("no enabled agent for Draft: writer disabled; mailer add-on mail not connected "
     "(env GMAIL_TOKEN, file ~/t)",
     {"code": "no_agent", "stage": "Draft", "skipped": [
         {"agent": "writer", "why": "disabled", "addons": []},
         {"agent": "mailer", "why": "addons_not_connected",
          "addons": [{"addon": "mail", "missing": ["env GMAIL_TOKEN", "file ~/t"]}]}]}),
    ("no enabled agent for Draft: the workspace declares no agents",
     {"code": "no_agent", "stage": "Draft", "skipped": []}),
    ("no enabled agent for a piece of Draft: writer already in the chain of callers",
     {"code": "no_agent_for_piece", "stage": "Draft",
      "skipped": [{"agent": "writer", "why": "in_chain", "addons": []}]}),
    ("waiting for agent writer: 2 of 2 busy (items 01A, 01B); place 3 in its queue",
     {"code": "agent_busy", "agent": "writer", "busy": 2, "cap": 2, "items": ["01A", "01B"],
      "position": 3}),
    ("waiting for agent writer: 1 of 1 busy (items 01A) for 10 minutes",
     {"code": "busy_too_long", "agent": "writer", "busy": 1, "cap": 1, "items": ["01A"],
      "minutes": 10}),
    ("Review asked for changes 3 times", {"code": "review_limit", "stage": "Review",
                                          "count": 3}),
    ("mail.send was not run: the item was cancelled",
     {"code": "action_not_run", "action": "mail.send", "status": "cancelled"}),
    ("mail.send was denied by maya@example.com: wrong list",
     {"code": "action_denied", "action": "mail.send", "who": "maya@example.com",
      "said": "wrong list"}),
    ("finish denied by maya@example.com: not yet",
     {"code": "finish_denied", "who": "maya@example.com", "said": "not yet"}),
    ("agent writer: the model did not answer: timed out",
     {"code": "agent_failed", "agent": "writer", "said": "the model did not answer: timed out"}),
    ("exit 3: Traceback\nValueError: x", {"code": "agent_exit", "exit_code": 3,
                                         "said": "Traceback\nValueError: x"}),
    ("bees run stopped", {"code": "run_stopped"}),
    ("its worker stopped (bees run ended or was killed)", {"code": "worker_stopped"}),
    ("stopped with its run", {"code": "piece_stopped"}),
    ("the engine's database was replaced", {"code": "engine_replaced"}),
    ("agent writer busy for 10 minutes", {"code": "other",  # an older Bees's words
                                         "text": "agent writer busy for 10 minutes"}),
    ("something a newer Bees says", {"code": "other", "text": "something a newer Bees says"}),
]


@pytest.mark.parametrize(("sentence", "value"), SENTENCES)
def test_a_stored_sentence_reads_as_its_code_and_words_back_the_same(
        sentence: str, value: dict[str, Any]) -> None:
    reason = read_reason(sentence)
    assert reason.model_dump(mode="json") == value
    assert reason.words() == sentence
    assert read_reason(reason.model_dump(mode="json")) == reason


def test_the_folder_writer_s_words_read_as_codes(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTES_HOME", raising=False)
    links = [resolve_folder("notes", None, tmp_path),
             resolve_folder("notes", Folder(path=str(tmp_path / "none")), tmp_path),
             resolve_folder("notes", Folder(path="${NOTES_HOME}/n"), tmp_path)]
    codes = [read_reason(f"folder notes: {link.reason}").code for link in links]
    assert codes == ["folder_not_linked", "folder_default_not_dir", "folder_env_unset"]
    assert [link.how for link in links] == ["not_linked", "default_not_dir", "env_unset"]
    assert links[2].env == "NOTES_HOME"


def test_agent_choice_s_words_read_as_codes() -> None:
    pick = choose_agent(
        process="p", stage=Stage(name="Draft", kind="work", agents=["writer", "mailer"]),
        item_agents=[], default_agent=None,
        agents={"writer": Agent(runner=RUNNER, enabled=False),
                "mailer": Agent(runner=RUNNER, tools=["mail.send"])},
        addon_connected={"mail": AddonConnection("mail", False, ["env GMAIL_TOKEN"])},
        reviewed_by=None)
    reason = read_reason(pick.reason)
    assert reason.code == "no_agent"
    assert [(s.agent, s.why) for s in reason.skipped or []] == [
        ("writer", "disabled"), ("mailer", "addons_not_connected")]
    assert reason.words() == pick.reason


def test_a_waiting_fact_gives_codes_in_json_and_its_old_line_as_text() -> None:
    stored = {"reasons": ["folder notes: not linked on this computer (bees link notes PATH)"],
              "pick": {"agent": None, "reason": "no enabled agent for Draft: writer disabled",
                       "skipped": [{"agent": "writer", "why": "disabled"}]}}
    event = parse_event("waiting", stored, at="t", stage="Draft", round=1)
    assert event.render() == ("Draft round 1: waiting: folder notes: not linked on this "
                              "computer (bees link notes PATH)")
    shown = event.to_json()
    assert shown["reasons"] == [{"code": "folder_not_linked", "folder": "notes"}]
    assert shown["pick"] == {"agent": None, "reason": "none",
                             "skipped": [{"agent": "writer", "why": "disabled", "addons": []}]}
    assert parse_event_json(shown) == event


def test_a_pick_gives_its_tier_with_the_stage_whose_agents_they_are() -> None:
    event = parse_event("pick", {"pick": {"agent": "writer",
                                          "reason": "stage agents of weekly-report.Draft"}},
                        at="t", stage="Draft", round=1)
    assert event.to_json()["pick"] == {"agent": "writer", "reason": "stage",
                                       "process": "weekly-report", "of_stage": "Draft",
                                       "skipped": []}
    assert event.render() == "Draft round 1: picked writer: stage agents of weekly-report.Draft"
    assert parse_event_json(event.to_json()) == event


def test_a_reason_stored_as_an_object_reads_as_it_is() -> None:
    event = parse_event("busy", {"reason": {"code": "agent_busy", "agent": "w", "busy": 1,
                                            "cap": 1, "items": ["01A"]}, "position": 1},
                        at="t", stage="Draft")
    assert event.render() == "Draft: waiting for agent w: 1 of 1 busy (items 01A)"
    assert Reason(code="run_stopped").words() == "bees run stopped"


def test_a_piece_s_joined_reasons_read_as_a_list() -> None:
    joined = ("folder notes: not linked on this computer (bees link notes PATH); no enabled "
              "agent for a piece of Draft: writer disabled; alpha already in the chain of "
              "callers")
    event = parse_event("piece_waiting", {"piece": "r1-a1-p1", "reason": joined}, at="t",
                        stage="Draft", round=1)
    assert [r["code"] for r in event.to_json()["reasons"]] == ["folder_not_linked",
                                                               "no_agent_for_piece"]
    assert event.render() == f"Draft round 1: piece r1-a1-p1 waits: {joined}"
    assert parse_event_json(event.to_json()) == event


def test_a_skip_this_bees_cannot_read_keeps_its_words() -> None:
    event = parse_event("pick", {"pick": {"agent": "writer", "reason": "named on the item",
                                          "skipped": [{"agent": "old", "why": "retired"}]}},
                        at="t", stage="Draft", round=1)
    assert event.to_json()["pick"]["skipped"] == [
        {"agent": "old", "why": "other", "addons": [], "text": "retired"}]
    assert event.render() == "Draft round 1: picked writer: named on the item; skipped old " \
                             "(retired)"
    assert parse_event_json(event.to_json()) == event


OLD_ROWS: list[tuple[str, dict[str, Any], Reason]] = [
    ("stage_failed", {"reason": "exit 3: something broke"},
     Reason(code="agent_exit", exit_code=3, said="something broke")),
    ("busy", {"reason": "waiting for agent writer: 1 of 1 busy (items A)", "position": 1},
     Reason(code="agent_busy", agent="writer", busy=1, cap=1, items=["A"])),
    ("piece_stopped", {"piece": "p-2", "agent": "writer", "reason": "stopped with its run"},
     Reason(code="piece_stopped")),
]
"""Rows as the engine's workflow wrote them before issue 24 (reasons as sentences)."""


@pytest.mark.parametrize(("kind", "data", "code"), OLD_ROWS)
def test_an_old_row_s_sentence_is_read_as_its_code_and_a_new_row_stores_the_code(
        tmp_path: Path, kind: str, data: dict[str, Any], code: Reason) -> None:
    from bees_cli.record.local import LocalRecord

    record = LocalRecord(tmp_path / "record.db")
    record.add_item(id="01JH2Q00000000000000000OLD", process="p", title="t", workspace="/ws",
                    run_folder="/r", input="{}", stage="Draft")
    record._add_event("01JH2Q00000000000000000OLD", key="old", kind=kind, stage="Draft",
                      round=1, data=data)
    old = record.events("01JH2Q00000000000000000OLD")[-1].typed()
    assert old.reason == code  # type: ignore[attr-defined]
    assert old.reason.words() == data["reason"]  # type: ignore[attr-defined]
    record.add_fact("01JH2Q00000000000000000OLD", old, key="new")
    new = record.events("01JH2Q00000000000000000OLD")[-1]
    assert new.data["reason"] == code.model_dump(mode="json")

"""The text views of ``bees status`` and ``bees approvals`` at fixed widths, emphasis, the
terminal's width and ``--watch``'s redraw (issue 15, point 6)."""

from __future__ import annotations

import io
import os
from datetime import UTC, datetime
from typing import Any

import pytest

from bees_cli.cli.status_view import approval_lines, redraw, status_lines, watch
from bees_cli.cli.table import Cell, Column, Emphasis, colour_on, fit, paint, render, table_width
from bees_cli.usecases.models import ApprovalRow

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
A = "01JH3A7Q0M2XK5T9VZ8C4RWB6N"
B = "01JH3B0000000000000000000B"
C = "01JH3C0000000000000000000C"
D = "01JH3D0000000000000000000D"
HELD = ('mail.send {"to": "team@example.com", "subject": "Weekly report", "body": "# Weekly '
        'report and a long body"}')


def row(item: str, status: str, text: str, *, stage: str = "Draft", agent: str | None = None,
        since: str = "2026-12-01T09:58:00.000000Z", **more: Any) -> dict[str, Any]:
    """A ``bees status`` row as :class:`StatusView` has it."""
    return {"id": item, "process": "weekly-report", "title": "Weekly report for the team",
            "stage": stage, "status": status, "status_text": text, "agent": agent,
            "since": since, **more}


ROWS = [
    row(A, "failed", "failed: the agent exited with 1", agent="writer"),
    row(B, "waiting for approval", f"waiting for approval: {HELD}", stage="Send",
        agent="sender", since="2026-12-01T07:00:00.000000Z"),
    row(C, "running", "running", stage="Review", agent="reviewer",
        since="2026-11-28T10:00:00.000000Z"),
    row(D, "running", "Draft, running on maya-desktop", agent=None, team=True,
        since="2026-12-01T09:59:30Z"),
]


def test_status_at_80_columns_cuts_cells_and_leaves_out_process_and_agent() -> None:
    assert status_lines(ROWS, {B: "mail.send"}, now=NOW, width=80) == [
        "item          title             stage   status                           since",
        "------------  ----------------  ------  -------------------------------  -------",
        "01JH3A7Q0M2X  Weekly report f…  Draft   failed: the agent exited with 1  2m ago",
        "01JH3B000000  Weekly report f…  Send    waiting for approval: mail.send  3h ago",
        "01JH3C000000  Weekly report f…  Review  running                          3d ago",
        "01JH3D000000  Weekly report f…  Draft   Draft, running on maya-desktop   30s ago",
    ]
    assert all(len(line) <= 80 for line in status_lines(ROWS, {}, now=NOW, width=80))


def test_status_at_120_columns_shows_every_column_and_wide_every_cell() -> None:
    assert status_lines(ROWS, {B: "mail.send"}, now=NOW, width=120) == [
        "item          process        title                       stage   status"
        "                           agent     since",
        "------------  -------------  --------------------------  ------  ------"
        "-------------------------  --------  -------",
        "01JH3A7Q0M2X  weekly-report  Weekly report for the team  Draft   failed"
        ": the agent exited with 1  writer    2m ago",
        "01JH3B000000  weekly-report  Weekly report for the team  Send    waiting"
        " for approval: mail.send  sender    3h ago",
        "01JH3C000000  weekly-report  Weekly report for the team  Review  running"
        "                          reviewer  3d ago",
        "01JH3D000000  weekly-report  Weekly report for the team  Draft   Draft, "
        "running on maya-desktop   -         30s ago",
    ]
    wide = status_lines(ROWS, {}, now=NOW, width=80, wide=True)
    assert wide[3] == (
        f"{B}  weekly-report  Weekly report for the team  Send    waiting for approval: {HELD}"
        "  sender    2026-12-01T07:00:00Z (3h ago)")


def test_piped_status_is_not_cut_but_keeps_the_held_input_out() -> None:
    lines = status_lines(ROWS, {B: "mail.send"}, now=NOW, width=None)
    assert lines[3] == (f"{B}  weekly-report  Weekly report for the team  Send    "
                        "waiting for approval: mail.send  sender    3h ago")


def test_a_decision_queued_while_bees_run_is_down_is_the_status() -> None:
    approved = {"decision": "approved", "request_id": 1, "answer": None,
                "who": "maya@example.com", "at": "2026-12-01T09:58:00Z", "reason": None}
    denied = {**approved, "decision": "denied", "reason": "wrong address"}
    rows = [row(B, "waiting for approval", f"waiting for approval: {HELD}", stage="Send",
                agent="sender", queued_decisions=[approved]),
            row(C, "waiting for approval", f"waiting for approval: {HELD}", stage="Send",
                agent="sender", queued_decisions=[denied])]
    lines = status_lines(rows, {}, now=NOW, width=None)
    assert lines[2:] == [
        f"{B}  weekly-report  Weekly report for the team  Send   approved by "
        "maya@example.com 2m ago: delivered when bees run starts                  "
        "sender  2m ago",
        f"{C}  weekly-report  Weekly report for the team  Send   denied by "
        'maya@example.com 2m ago ("wrong address"): delivered when bees run starts  '
        "sender  2m ago"]
    # another request still waits for a person: that is what the item waits for
    assert status_lines(rows[:1], {B: "finish Send"}, now=NOW, width=None)[2] == (
        f"{B}  weekly-report  Weekly report for the team  Send   waiting for approval: "
        "finish Send  sender  2m ago")


def test_emphasis_paints_failed_and_waiting_cells_only_in_colour() -> None:
    lines = status_lines(ROWS, {B: "mail.send"}, now=NOW, width=80, colour=True)
    assert lines[2] == ("01JH3A7Q0M2X  Weekly report f…  Draft   "
                        "\x1b[31mfailed: the agent exited with 1\x1b[0m  2m ago")
    assert lines[3] == ("01JH3B000000  Weekly report f…  Send    "
                        "\x1b[33mwaiting for approval: mail.send\x1b[0m  3h ago")
    assert "\x1b" not in lines[4] + lines[5]
    assert paint("x", Emphasis.REFUSED, colour=True) == "\x1b[1;31mx\x1b[0m"
    assert paint("x", Emphasis.REFUSED, colour=False) == "x"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert (colour_on(Tty()), colour_on(io.StringIO())) == (True, False)
    monkeypatch.setenv("NO_COLOR", "1")
    assert colour_on(Tty()) is False
    monkeypatch.setenv("NO_COLOR", "")
    monkeypatch.setenv("TERM", "dumb")
    assert colour_on(Tty()) is False


def test_width_is_columns_then_the_terminal_and_none_when_piped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "72")
    assert table_width(io.StringIO()) == 72
    monkeypatch.delenv("COLUMNS")
    assert table_width(io.StringIO()) is None
    monkeypatch.setattr("shutil.get_terminal_size", lambda fallback: os.terminal_size((133, 40)))
    assert table_width(Tty()) == 133


def test_fit_cuts_first_columns_then_shares_by_weight_and_keeps_uncut_ones() -> None:
    columns = [Column("id", least=4, first=True, mark=False), Column("a", least=3),
               Column("b", least=3, weight=2), Column("c", least=None)]
    assert fit([10, 20, 20, 5], columns, 30) == [4, 5, 10, 5]
    assert fit([10, 20, 20, 5], columns, None) == [10, 20, 20, 5]
    assert fit([10, 20, 20, 5], columns, 10) == [4, 3, 3, 5]  # too narrow: kept, wraps
    # the id is cut to its least, bare, although 2 characters more would fit
    assert render([["0123456789", "abcdefghij", "x", "yz"]], columns, width=24) == [
        "id    a           b  c", "----  ----------  -  --", "0123  abcdefghij  x  yz"]
    assert render([["0123456789", "abcdefghij", "xxxxxxxxxxxxxx", "yz"]], columns,
                  width=24) == ["id    a     b         c", "----  ----  --------  --",
                                "0123  abc…  xxxxxxx…  yz"]


def test_a_cell_with_emphasis_and_line_breaks() -> None:
    assert render([[Cell("a\nb", Emphasis.FAILED)]], [Column("h")], width=None,
                  colour=True) == ["h", "---", "\x1b[31ma b\x1b[0m"]


def approval(**more: Any) -> ApprovalRow:
    base = {"id": 1, "item_id": B, "stage": "Send", "title": "Weekly report for the team",
            "process": "weekly-report", "what": HELD, "asked_at": "2026-12-01T09:00:00Z",
            "action": "mail.send", "kind": "send",
            "summary": HELD.removeprefix("mail.send "), "input": "{}"}
    return ApprovalRow.model_validate({**base, **more})


def test_approvals_show_the_action_and_a_short_summary_of_its_input() -> None:
    rows = [approval(), approval(id=2, action=None, kind="finish", summary="output /r/Send"),
            approval(id=3, interrupted_at="2026-12-01T08:00:00Z")]
    assert approval_lines(rows, now=NOW, width=80) == [
        "item          request  title       stage  action     input               asked",
        "------------  -------  ----------  -----  ---------  ------------------  ------",
        '01JH3B000000  1        Weekly re…  Send   mail.send  {"to": "team@exam…  1h ago',
        "01JH3B000000  2        Weekly re…  Send   finish     output /r/Send      1h ago",
        "01JH3B000000  3        Weekly re…  Send   mail.send  may already have …  1h ago",
    ]
    assert approval_lines(rows, now=NOW, width=80, wide=True)[2] == (
        f"{B}  1        Weekly report for the team  Send   mail.send  "
        f"{HELD.removeprefix('mail.send ')}{' ' * 22}  2026-12-01T09:00:00Z (1h ago)")


def test_approvals_put_recipients_first_and_wide_shows_the_whole_input() -> None:
    """Issue 23, point 8: a mail's ``to`` came after a long body in the input's sorted keys
    and was cut away, even with ``--wide``; recipients come first, ``--wide`` cuts nothing."""
    body = "Dear team, " + "the numbers are up. " * 10
    data = ('{"bcc":["audit@example.com"],"body":"' + body + '","subject":"Weekly report",'
            '"to":"wrong@example.org"}')
    rows = [approval(input=data, summary=data[:99] + "…")]
    assert approval_lines(rows, now=NOW, width=100)[2] == (
        "01JH3B000000  1        Weekly report f…  Send   mail.send  to: wrong@example.org, "
        'bcc: ["a…  1h ago')
    assert approval_lines(rows, now=NOW, width=100, wide=True)[2] == (
        f"{B}  1        Weekly report for the team  Send   mail.send  to: wrong@example.org, "
        f'bcc: ["audit@example.com"], body: {body}, subject: Weekly report  '
        "2026-12-01T09:00:00Z (1h ago)")


def test_redraw_goes_back_over_the_last_frame_and_erases_what_is_left() -> None:
    assert redraw(["a", "b"], 0) == "a\x1b[K\nb\x1b[K\n\x1b[J"
    assert redraw(["c"], 2) == "\x1b[2Fc\x1b[K\n\x1b[J"


def test_watch_redraws_in_place_until_ctrl_c() -> None:
    frames = iter([["one", "two", "three"], ["four"]])
    waits: list[float] = []

    def wait(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 2:
            raise KeyboardInterrupt

    out = Tty()
    watch(lambda height: next(frames), out, every=2.0, wait=wait, height=3, terminal=True)
    assert waits == [2.0, 2.0]
    assert out.getvalue() == ("\x1b[?25l" "one\x1b[K\ntwo\x1b[K\n\x1b[J"  # 2 lines: height - 1
                              "\x1b[2Ffour\x1b[K\n\x1b[J" "\x1b[?25h")


def test_watch_on_a_pipe_prints_frames_one_after_another() -> None:
    frames = iter([["one"], ["two"]])
    waits: list[float] = []

    def wait(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 2:
            raise KeyboardInterrupt

    out = io.StringIO()
    watch(lambda height: next(frames), out, every=2.0, wait=wait, height=10, terminal=False)
    assert out.getvalue() == "one\n\ntwo\n"


def test_an_error_label_is_red_on_a_terminal_and_bold_for_a_refusal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from bees_cli.cli.output import render_error
    from bees_cli.errors import Refused, UserError

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    err = Tty()
    monkeypatch.setattr("sys.stderr", err)
    render_error(Refused("item 01JH3 is owned by maya-desktop"), as_json=False)
    render_error(UserError("bad"), as_json=False)
    assert err.getvalue().splitlines() == [
        "\x1b[1;31merror:\x1b[0m item 01JH3 is owned by maya-desktop",
        "\x1b[31merror:\x1b[0m bad"]
    monkeypatch.setattr("sys.stderr", piped := io.StringIO())
    render_error(UserError("bad"), as_json=False)
    assert piped.getvalue() == "error: bad\n"

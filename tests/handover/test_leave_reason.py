"""A runner that leaves an offer on an invalid checkpoint names the first problems (file and
what is wrong, bounded), as docs/runners.md says; not only their count."""

from __future__ import annotations

from bees_cli.errors import Refused
from bees_cli.handover.problems import CheckpointInvalid, Problem, ProblemCode
from bees_cli.usecases.runners import LEAVE_DETAIL_CHARS, leave_reason

CHANGED = Problem(ProblemCode.CONTENT_CHANGED, "Draft/notes.txt",
                  f"content changed (sha256 {'a' * 64} expected {'b' * 64})")
EXTRA = [Problem(ProblemCode.EXTRA_FILE, f"logs/Draft-r1-a1.{name}",
                 "extra file not in the checkpoint") for name in ("stderr", "stdout")]


def test_the_reason_names_the_first_problems_and_counts_the_rest() -> None:
    assert leave_reason(CheckpointInvalid([CHANGED, *EXTRA])) == (
        f"checkpoint invalid: 3 problems: Draft/notes.txt: content changed (sha256 {'a' * 64}"
        f" expected {'b' * 64}); logs/Draft-r1-a1.stderr: extra file not in the checkpoint; "
        "and 1 more (bees checkpoint verify RUN_FOLDER lists them)")
    assert leave_reason(CheckpointInvalid(EXTRA[:1])) == (
        "checkpoint invalid: 1 problem: logs/Draft-r1-a1.stderr: extra file not in the "
        "checkpoint")


def test_a_long_first_problem_is_cut_and_other_refusals_keep_their_message() -> None:
    long = Problem(ProblemCode.EXTRA_FILE, "x/" + "y" * 500, "extra file not in the checkpoint")
    reason = leave_reason(CheckpointInvalid([long, CHANGED]))
    assert reason == ("checkpoint invalid: 2 problems: x/" + "y" * (LEAVE_DETAIL_CHARS - 2)
                      + "…; and 1 more (bees checkpoint verify RUN_FOLDER lists them)")
    assert leave_reason(Refused("cannot continue item X here: no agent")) == (
        "cannot continue item X here: no agent")

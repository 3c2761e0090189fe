"""No side doors (issue 25, point 5): may a stage's model write there now? One pure decision,
tested as a table."""

from __future__ import annotations

import pytest

from bees_cli.rules import WriteFolder, write_refusal

READ_ONLY = ("folder team-notes is read-only to this stage: it is not under the stage's "
             "writes:")
BEFORE_APPROVAL = ("folder team-notes is a linked folder and this stage needs a person's "
                   "approval before it changes one; write in the stage's own folder (stage) "
                   "until then")
OUTSIDE = ("that path is outside the folders this stage may write: its own folder (stage) "
           "and those under its writes:")


@pytest.mark.parametrize(("where", "required", "approved", "refusal"), [
    # the stage's own folder, in the run folder: always
    ("run", False, False, None),
    ("run", True, False, None),
    ("run", True, True, None),
    # a folder the stage declares under writes: at once, or once a person approved
    ("writes", False, False, None),
    ("writes", True, False, BEFORE_APPROVAL),
    ("writes", True, True, None),
    # a linked folder it only reads: never, approved or not
    ("reads", False, False, READ_ONLY),
    ("reads", True, False, READ_ONLY),
    ("reads", True, True, READ_ONLY),
    # outside every folder: never
    ("outside", False, False, OUTSIDE),
    ("outside", True, True, OUTSIDE),
])
def test_may_the_stages_model_write_there_now(where: WriteFolder, required: bool,
                                              approved: bool, refusal: str | None) -> None:
    assert write_refusal(where, folder="team-notes", approval_required=required,
                         approved=approved) == refusal

"""An add-on action's journal: answers from it, and the run folder's copy (record/run_journal.py).

The local record holds the journal (intents and results); the run folder keeps a copy that
travels with a handover and outlives a lost ``record.db`` (DESIGN.md, under faults: an intent
without a result is never run again by itself).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from bees_cli.errors import UserError
from bees_cli.record.events import ActionAnswered
from bees_cli.usecases.models import ActionOutcome

if TYPE_CHECKING:
    from bees_cli.agents.action_call import ActionCallInput
    from bees_cli.record.local import LocalRecord
    from bees_cli.record.run_journal import EndHow


def answered(record: LocalRecord, call: ActionCallInput, hit: dict[str, Any]) -> ActionOutcome:
    """Answer a repeated action from the journal (``hit``: its journaled result), and note it
    in the item's history."""
    record.add_fact(call.item_id, ActionAnswered(
        stage=call.stage, round=call.round, action=call.action, digest=call.digest,
        attempt=call.attempt, exit_code=hit["exit_code"], ran_at=hit["at"],
        person_said=bool(hit.get("person_said"))),
        key=f"answered:{call.stage}:{call.attempt}:{call.action}:{call.digest}")
    return ActionOutcome(exit_code=int(hit["exit_code"]), stdout=hit["stdout"],
                         from_journal=True, ran_at=hit["at"])


def confirmed(record: LocalRecord, call: ActionCallInput, kind: str, intent: dict[str, Any],
              request_id: int) -> ActionOutcome:
    """A person confirmed that the interrupted action ran (``bees approve --ran``, request
    ``request_id``): journal it as a person's word (``person_said``; exit 0 and no stdout for
    the agent, at the intent's time) and answer from the journal."""
    from bees_cli.engine.models import JournalEntry

    entry = JournalEntry(stage=call.stage, round=call.round, attempt=int(intent["attempt"]),
                         action=call.action, kind=kind, digest=call.digest, exit_code=0,
                         stdout="", at=intent["at"], request_id=request_id, person_said=True)
    record.end_intent(call.item_id, int(intent["seq"]), "ran", entry.model_dump(mode="json"))
    folder_end(record, call, "ran", entry.model_dump(mode="json"))
    return answered(record, call, entry.model_dump(mode="json"))


def recall_from_folder(record: LocalRecord, call: ActionCallInput) -> dict[str, Any] | None:
    """When the local record knows nothing of this action (it was lost and rebuilt), read
    the run folder's copy: a successful result is journaled again and returned (answered
    from the journal); an intent without a result is written back as an open intent, so it
    is held as "may already have run" like one the record kept. Returns the result, or None.
    """
    from bees_cli.record.run_journal import recall

    if record.open_intent(call.item_id, call.stage, call.action, call.digest) is not None:
        return None  # the record has this action's story: it decides
    found = recall(record.item(call.item_id).run_folder, stage=call.stage, action=call.action,
                   digest=call.digest)
    if found.hit is not None:
        record.add_journal(call.item_id, found.hit)
        return found.hit
    if found.intent is not None:
        record.add_intent(call.item_id, stage=call.stage, action=call.action,
                          digest=call.digest, attempt=int(found.intent["attempt"]),
                          at=str(found.intent["at"]))
    return None


def folder_intent(record: LocalRecord, call: ActionCallInput, at: str) -> None:
    """Append the intent to the run folder's copy, durably, before the add-on runs.

    Raises:
        DiskError: the run folder cannot be written (the action does not run; the record's
            intent is ended as not started).
    """
    from bees_cli.errors import disk_error_of
    from bees_cli.record.run_journal import write_intent

    try:
        write_intent(record.item(call.item_id).run_folder, stage=call.stage,
                     action=call.action, digest=call.digest, attempt=call.attempt, at=at)
    except OSError as error:
        # it does not run: the record's intent ends, so nothing is held for a person
        seq = record.open_intent(call.item_id, call.stage, call.action, call.digest)
        if seq is not None:
            record.end_intent(call.item_id, int(seq["seq"]), "result", None)
        raise disk_error_of(error) or UserError(
            f"cannot write the run folder's journal: {error}") from None


def folder_end(record: LocalRecord, call: ActionCallInput, how: EndHow,
               entry: dict[str, Any] | None) -> None:
    """Append how the action ended to the run folder's copy. A failure only warns: the
    local record has it, and an intent left open there is held for a person, never rerun."""
    from bees_cli.record.run_journal import write_end

    try:
        write_end(record.item(call.item_id).run_folder, stage=call.stage, action=call.action,
                  digest=call.digest, how=how, entry=entry)
    except OSError as error:
        print(f"warning: cannot write the run folder's journal: {error}", file=sys.stderr)

"""The Bees app's actions: ``POST /items/ITEM_ID/<verb>``, each the same use case as its CLI
command (issue 17, point 3), answered by 303 back to the item page with a note.

approve → ``bees approve`` (Edit and approve: ``bees approve --input``), deny → ``bees
deny --reason``, retry → ``bees retry``, accept → ``bees item accept``, cancel → ``bees item
cancel``, relinquish → ``bees relinquish``, continue → ``bees continue``. A refusal (any
:class:`~bees_cli.errors.BeesError`) is shown in the use case's words, with its hint and,
for a checkpoint that failed verification, each
file's problem.

Cancel and relinquish lose work (:data:`CONFIRMED`), so their button only leads to a
confirmation page (``GET /items/ITEM_ID/<verb>``, no JavaScript needed); only its POST, with
``confirm=<verb>`` and the csrf, calls the use case.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field

from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from bees_cli.app.item_page import item_page
from bees_cli.app.pages import item_id_of
from bees_cli.app.render import AppState, error_page, page, state_of
from bees_cli.app.security import checked_form
from bees_cli.app.views import VERBS, Verb
from bees_cli.errors import BeesError, UserError

CONFIRMED: dict[Verb, str] = {
    "cancel": "Cancelling stops its running stage and every piece it handed out, frees its "
              "agent slots and closes its open approval requests. It cannot be undone: a "
              "cancelled item is never retried nor continued (`bees item cancel`).",
    "relinquish": "Relinquishing stops its stage and every piece it handed out, writes the "
                  "checkpoint into the run folder and tells Bees Cloud the item is free "
                  "(`bees relinquish`). The work in progress is lost: where the item "
                  "continues (Continue on this machine, here or on another computer), its "
                  "unfinished stage starts again from the top (a review stage: from the "
                  "stage that made the work under review).",
}
"""The actions that lose work, each with what it does in words: pressing the button shows
a confirmation, and only the confirming POST (``confirm=<verb>``) acts."""

CONFIRM_FIELD = "confirm"
"""The confirming POST's form field: the verb it confirms."""

NOTES_KEPT = 200
"""Notes kept for the pages POSTs redirect to (the oldest go first)."""


@dataclass(frozen=True)
class Note:
    """What a POST did, shown once on the item page it redirects to.

    Attributes:
        verb: the action.
        ok: True: done (``[role="status"]``); False: refused (``[role="alert"]``).
        message: the use case's words (or what was done).
        hint: the refusal's hint, or None.
        problems: a checkpoint's problems, one line each (``PATH: message``).
    """

    verb: Verb
    ok: bool
    message: str
    hint: str | None = None
    problems: list[str] = field(default_factory=list)


def _request_id(form: FormData) -> int | None:
    text = form.get("request")
    if not isinstance(text, str) or not text:
        return None
    if not text.isdigit():
        raise UserError(f"request {text}: not a request number")
    return int(text)


def _corrected_input(form: FormData) -> str | None:
    """Return the Edit and approve form's corrected input (its ``input`` field) as JSON
    text for the use case, or None (a plain approval). Parsed here so the use case never
    reads it as ``@FILE``: the page sends JSON, never a path on this computer.

    Raises:
        UserError: the text is not valid JSON.
    """
    text = form.get("input")
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        data = json.loads(text)
    except ValueError as error:
        raise UserError(f"the corrected input is not valid JSON: {error}",
                        hint="correct the JSON in the box, then press Edit and approve"
                        ) from None
    return json.dumps(data, ensure_ascii=False)


async def perform(app: AppState, verb: Verb, item_id: str, form: FormData) -> str:
    """Call ``verb``'s use case on ``item_id`` and return what was done, in words (as the
    CLI says it).

    Raises:
        BeesError: the use case's refusal or failure (shown in words on the item page).
    """
    bees = app.acting()
    if verb in ("approve", "deny"):
        reason: str | None = None
        if verb == "deny":
            reason = str(form.get("reason") or "").strip()
            if not reason:
                raise UserError("a denial needs a reason: the agent is told",
                                hint="write why in the reason box, then press Deny")
        answer = form.get("answer") if verb == "approve" else None
        edited = _corrected_input(form) if verb == "approve" else None
        done = await bees.decide(item_id, approve=verb == "approve",
                                 request_id=_request_id(form), reason=reason,
                                 answer=answer if answer in ("ran", "again") else None,
                                 input_text=edited)
        word = "approved" if verb == "approve" else "denied"
        if done.input is not None:
            word += " by {who} with your corrected input (the agent is told what changed)"
        else:
            word += " by {who}"
        word = word.format(who=done.who)
        if done.queued:
            return f"{word}; bees run delivers it when it starts"
        ids = ", ".join(str(i) for i in done.decided or [])
        return f"request {ids} {word}"
    if verb == "retry":
        person = await bees.retry(item_id)
        return f"{person.stage} starts again (asked by {person.who})"
    if verb == "accept":
        person = await bees.accept(item_id)
        return f"the work under review at {person.stage} is accepted (by {person.who})"
    if verb == "cancel":
        cancel = await bees.cancel(item_id)
        if not cancel.requested:
            return "cancelled"
        return "cancel requested; cancelled" if cancel.cancelled else (
            "cancel requested; still stopping")
    if verb == "relinquish":
        from bees_cli.handover.relinquish import main_restart

        gone = await bees.relinquish(item_id)
        where = "Bees Cloud told" if gone.released else "no Bees Cloud: digest kept here"
        return (f"relinquished at {gone.stage or '-'}; free, restarts at "
                f"{main_restart(gone.restart_stages)} ({where}); checkpoint "
                f"{gone.checkpoint_sha256}")
    came = await bees.continue_item(item_id, workspace_path=app.workspace)
    state = "started" if came.started else "waiting for bees run"
    return (f"claimed here; {came.stage} restarts from the top ({state}); run folder "
            f"{came.run_folder}")


def keep(app: AppState, note: Note) -> str:
    """Keep ``note`` for the page the POST redirects to; return its token."""
    token = secrets.token_urlsafe(12)
    app.notes[token] = note
    while len(app.notes) > NOTES_KEPT:
        app.notes.pop(next(iter(app.notes)))
    return token


async def act(request: Request) -> Response:
    """``POST /items/ITEM_ID/<verb>``: check the form's csrf, call the verb's use case, and
    answer 303 to the item page with the note of what happened.

    Cancel and relinquish (:data:`CONFIRMED`) without ``confirm=<verb>`` change nothing:
    303 to their confirmation page.

    Raises:
        HTTPException: 403 without the right csrf; 404 for an unknown verb or item id.
    """
    app = state_of(request)
    verb = str(request.path_params["verb"])
    form = await checked_form(request, app.guard)
    if verb not in VERBS:
        raise HTTPException(404, f"{verb}: not an action")
    action: Verb = verb  # type: ignore[assignment]
    item_id = item_id_of(request)
    if action in CONFIRMED and form.get(CONFIRM_FIELD) != action:
        return RedirectResponse(f"/items/{item_id}/{action}", status_code=303)
    try:
        note = Note(action, True, await perform(app, action, item_id, form))
    except BeesError as error:
        problems = [p.format() for p in getattr(error, "problems", None) or []]
        note = Note(action, False, error.message, error.hint, problems)
    return RedirectResponse(f"/items/{item_id}?note={keep(app, note)}", status_code=303)


async def confirm(request: Request) -> Response:
    """``GET /items/ITEM_ID/<verb>`` for cancel and relinquish: the item, what the action
    does and loses, the confirming form (POST with ``confirm=<verb>`` and the csrf) and a
    link back that keeps the item as it is.

    Raises:
        HTTPException: 405 for a verb that needs no confirmation; 404 for an unknown verb or
            item id.
    """
    app = state_of(request)
    verb = str(request.path_params["verb"])
    if verb not in VERBS:
        raise HTTPException(404, f"{verb}: not an action")
    if verb not in CONFIRMED:
        raise HTTPException(405, f"{verb}: press its button on the item page")
    action: Verb = verb  # type: ignore[assignment]
    try:
        details = await app.bees.item_details(item_id_of(request))
    except BeesError as error:
        return error_page(request, error)
    shown = item_page(details, here=app.bees.computer.computer)
    return page(request, "confirm.html", {"item": shown, "verb": action,
                                          "words": CONFIRMED[action],
                                          "confirm_field": CONFIRM_FIELD})

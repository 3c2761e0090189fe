"""An add-on action's input checked against the JSON Schema its add-on declares, before it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bees_cli.errors import UserError
from bees_cli.ids import check_email

if TYPE_CHECKING:
    from bees_cli.agents.grounded import FolderOf
    from bees_cli.agents.snapshot import ItemSnapshot
    from bees_cli.record.rows import ItemRow


def _formats() -> Any:
    """The formats an input schema may name that are checked: ``email`` by the one shared
    email rule (:func:`bees_cli.ids.check_email`), as a person's address is everywhere."""
    import jsonschema

    checker = jsonschema.FormatChecker(formats=())
    checker.checks("email", raises=ValueError)(check_email)
    return checker


def check_input(name: str, schema: dict[str, Any] | None, data: Any, *,
                folder_of: FolderOf | None = None) -> None:
    """Check an action's input against its add-on's ``input`` schema (JSON Schema 2020-12,
    ``format: email`` checked). An action without a schema takes any input. With
    ``folder_of``, each ``enum_from`` of the schema allows only the values that exist now
    (:func:`~bees_cli.agents.grounded.ground_schema`; issue 26, point 6: grounded arguments).

    Why before the journal and the approval: a person should never be asked to approve an
    input the add-on cannot take, and a model agent sees the refusal as its tool call's
    error (``failed: …``) and can call again with a right input.

    Args:
        name: ``ADDON.ACTION`` (named in the message).
        schema: the action's ``input`` schema, or None.
        data: the input (decoded JSON).
        folder_of: where an ``enum_from`` folder is (folder name → directory), or None
            (``enum_from`` is then not checked).

    Raises:
        UserError: the input does not follow the schema; the message names the first
            field that does not (``mail.send: input "to" is not an email address: 'x'``;
            ``tracker.file: bug 'BUG-9' is not among bug-reports/*.md: BUG-1, BUG-2``).
    """
    if schema is None:
        return
    import jsonschema

    if folder_of is not None:
        from bees_cli.agents.grounded import ground_schema

        schema = ground_schema(schema, folder_of, keep=True)

    validator = jsonschema.Draft202012Validator(schema, format_checker=_formats())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if not errors:
        return
    error = errors[0]
    where = "/".join(str(p) for p in error.absolute_path)
    field = f" {where!r}".replace("'", '"') if where else ""
    grounded = error.schema.get("enum_from") if isinstance(error.schema, dict) else None
    if error.validator == "enum" and isinstance(grounded, dict):
        listed = ", ".join(str(v) for v in error.validator_value) or "there are none"
        raise UserError(f"{name}: {where or 'input'} {error.instance!r} is not among "
                        f"{grounded.get('folder')}/{grounded.get('glob')}: {listed}",
                        hint=f"give {name} one of the values listed (they are what the "
                             "folder holds now)")
    if error.validator == "format" and error.validator_value == "email":
        what = f"is not an email address: {error.instance!r}"
    else:
        what = f"does not follow the action's schema: {error.message}"
    raise UserError(f"{name}: input{field} {what}",
                    hint=f"give {name} an input its add-on's schema allows "
                         "(the add-on's actions.*.input)")


def item_folders(row: ItemRow, snapshot: ItemSnapshot) -> FolderOf:
    """Return where the item's ``enum_from`` folders are on this computer: a folder the item
    reads, at its link here (:func:`~bees_cli.agents.eligibility.linked_reads`), else that
    folder of the item's run folder (issue 26, point 6) — as a model agent is offered them."""
    from bees_cli.agents.eligibility import linked_reads
    from bees_cli.agents.grounded import folder_finder

    linked, _ = linked_reads(snapshot)
    return folder_finder(row.run_folder, linked)

"""Before a gated action runs on a runner, Bees Cloud is asked whether it still owns the item.

A runner retired while alive learns it at its next sync (up to 15 s); until then it could
still send. So ``bees run --runner`` answers "do I still own ITEM?" on a loopback port
(:func:`serve_owner_check`, its port in ``DATA_DIR/owner-check.json``), asking Bees Cloud once
with the runner's own token (a read of the item's owner row: a retired token is refused with
``runner_retired``), and every gated action (send, post, delete, pay, undeclared: the kinds
of :data:`bees_cli.rules.GATED_KINDS`) on that computer asks it first
(:func:`refuse_unless_owner`). Why a port and not the cloud directly: the stage's own
``bees action`` never holds the runner's token (``BEES_TOKEN`` is withheld from children).
The cost is one request per gated action, on runners only; a person's computer is never
retired, so it does not ask.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bees_cli.errors import CloudError, Refused, is_retired
from bees_cli.rules import GATED_KINDS

if TYPE_CHECKING:
    from bees_cli.cloud.client import CloudClient
    from bees_cli.machine.computer import Computer

CHECK_FILE = "owner-check.json"
"""The file in the data folder naming the loopback port of a runner's owner check."""
ASK_TIMEOUT = 15.0
"""Most seconds a gated action waits for the owner check's answer."""


def check_file(computer: Computer) -> Path:
    """Return where a runner's ``bees run`` names its owner check's port."""
    return computer.data_dir / CHECK_FILE


def _ask_cloud(api: CloudClient, computer: Computer, item_id: str) -> str | None:
    """Return None when this computer holds ``item_id`` in Bees Cloud, else why not.

    Raises:
        CloudError: Bees Cloud refused (``runner_retired``) or could not be reached.
    """
    owner = api.get_owner(item_id)
    if owner is None:
        return f"item {item_id} has no owner in Bees Cloud"
    if owner.machine_id != computer.machine_id:
        return f"item {item_id} is owned by {owner.computer_name}, not by this runner"
    if not owner.held:
        return f"this runner released item {item_id}"
    return None


@dataclass
class OwnerCheck:
    """A runner's owner check: its loopback server and the Bees Cloud client it asks with."""

    computer: Computer
    server: asyncio.Server
    api: CloudClient

    async def stop(self) -> None:
        """Close the server and the client, and forget the port."""
        self.server.close()
        await self.server.wait_closed()
        self.api.close()
        with contextlib.suppress(FileNotFoundError):
            check_file(self.computer).unlink()


async def serve_owner_check(computer: Computer,
                            on_retired: Callable[[CloudError], None]) -> OwnerCheck:
    """Answer "does this runner still own ITEM?" on a loopback port until stopped.

    One JSON line in (``{"item_id"}``), one out (``{"owner": true}`` or ``{"owner": false,
    "message"}``). Each question is one read of the item's owner row with the runner's
    token; a refusal with ``runner_retired`` also goes to ``on_retired`` (the runner stops).

    Returns:
        The running check; :meth:`OwnerCheck.stop` it when ``bees run`` stops.
    """
    from bees_cli.cloud.client import sync_cloud_for

    api = sync_cloud_for(computer, retries=1)
    assert api is not None  # a runner is signed in
    lock = asyncio.Lock()  # one request at a time on the kept client

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            item_id = str(json.loads(await reader.readline())["item_id"])
            try:
                async with lock:
                    why = await asyncio.to_thread(_ask_cloud, api, computer, item_id)
            except CloudError as error:
                if is_retired(error):
                    on_retired(error)
                why = error.message
            reply = {"owner": True} if why is None else {"owner": False, "message": why}
            writer.write(json.dumps(reply).encode() + b"\n")
            await writer.drain()
        except (ValueError, KeyError, OSError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    check_file(computer).write_text(json.dumps({"port": port}), encoding="utf-8")
    return OwnerCheck(computer, server, api)


async def refuse_unless_owner(computer: Computer, item_id: str, action: str,
                              kind: str) -> None:
    """Before a gated action of ``item_id`` runs here: on a runner, refuse it unless Bees
    Cloud says the runner still owns the item (DESIGN.md, Owners: a computer never runs an
    item another computer owns; Runners: a retired runner is fenced).

    Nothing is asked for a kind outside :data:`~bees_cli.rules.GATED_KINDS`, nor on a
    computer that is not a runner's ``bees run`` (no :func:`check_file`).

    Raises:
        Refused: Bees Cloud says this runner no longer owns the item (or retired it), or
            the runner's ``bees run`` could not be asked: the action is not run.
    """
    if kind not in GATED_KINDS:
        return
    try:
        port = int(json.loads(check_file(computer).read_text(encoding="utf-8"))["port"])
    except FileNotFoundError:
        return
    except (ValueError, KeyError, OSError) as error:
        raise Refused(f"{item_id}'s {action} ({kind}) is not run here: this runner's owner "
                      f"check is unreadable ({error})") from None
    not_run = f"{item_id}'s {action} ({kind}) is not run here"
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), ASK_TIMEOUT)
        try:
            writer.write(json.dumps({"item_id": item_id}).encode() + b"\n")
            await writer.drain()
            reply = json.loads(await asyncio.wait_for(reader.readline(), ASK_TIMEOUT))
        finally:
            writer.close()
    except (OSError, TimeoutError, ValueError) as error:
        raise Refused(f"{not_run}: this runner's bees run could not be asked whether it "
                      f"still owns the item ({error!r})",
                      hint="start bees run --runner again; the stage restarts") from None
    if not reply.get("owner"):
        raise Refused(f"{reply.get('message') or 'not the owner'}: {not_run}")


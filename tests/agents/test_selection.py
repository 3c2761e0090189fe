"""Agent choice: the four tiers in order, every skip reason, review exclusion."""

from __future__ import annotations

import json

from bees_cli.agents.selection import Pick, Skipped, choose_agent
from bees_cli.machine.connections import AddonConnection
from bees_cli.workspace.models import Agent, CommandRunner, Stage

RUNNER = CommandRunner(command=["true"])
MODEL = {"model": {"base_url": "https://api.example.com/v1", "name": "m",
                   "api_key_env": "EXAMPLE_API_KEY"}}


def model_agent(*, enabled: bool = True) -> Agent:
    return Agent.model_validate({"enabled": enabled, "runner": MODEL})
REVIEWED = Skipped("writer", "did the work under review")


def agent(*, enabled: bool = True, tools: list[str] | None = None) -> Agent:
    return Agent(enabled=enabled, tools=tools or [], runner=RUNNER)


DRAFT = Stage(name="Draft", kind="work", agents=["writer", "helper"])
REVIEW = Stage(name="Review", kind="review", reviews="Draft", agents=["writer", "reviewer"])
CONNECTED = {
    "gmail": AddonConnection("gmail", True, []),
    "slack": AddonConnection("slack", False, ["env SLACK_TOKEN"]),
}


def pick(stage: Stage = DRAFT, *, item_agents: tuple[str, ...] = (), default: str | None = None,
         agents: dict[str, Agent], reviewed_by: str | None = None) -> Pick:
    return choose_agent(process="weekly-report", stage=stage, item_agents=item_agents,
                        default_agent=default, agents=agents, addon_connected=CONNECTED,
                        reviewed_by=reviewed_by)


def test_item_agent_comes_first() -> None:
    agents = {"writer": agent(), "helper": agent(), "other": agent()}
    assert pick(item_agents=("other",), agents=agents) == Pick("other", "named on the item", ())


def test_stage_agents_when_the_item_names_none_usable() -> None:
    agents = {"writer": agent(enabled=False), "helper": agent(), "other": agent(enabled=False)}
    result = pick(item_agents=("other", "ghost"), agents=agents)
    assert result == Pick(
        "helper",
        "stage agents of weekly-report.Draft",
        (
            Skipped("other", "disabled"),
            Skipped("ghost", "not declared in the workspace"),
            Skipped("writer", "disabled"),
        ),
    )


def test_workspace_default_then_first_enabled_by_name() -> None:
    stage = Stage(name="Draft", kind="work", agents=["writer"])
    agents = {"writer": agent(enabled=False), "zed": agent(), "alpha": agent(enabled=False),
              "beta": agent()}
    assert pick(stage, default="zed", agents=agents) == Pick(
        "zed", "workspace default", (Skipped("writer", "disabled"),)
    )
    agents["zed"] = agent(tools=["slack.post"])
    assert pick(stage, default="zed", agents=agents) == Pick(
        "beta",
        "first enabled agent by name",
        (
            Skipped("writer", "disabled"),
            Skipped("zed", "add-on slack not connected (env SLACK_TOKEN)"),
            Skipped("alpha", "disabled"),
        ),
    )


def test_addon_reasons_connected_missing_and_undeclared() -> None:
    agents = {
        "writer": agent(tools=["gmail.read", "slack.post", "slack.read", "drive.read"]),
        "helper": agent(tools=["gmail.send"]),
    }
    result = pick(agents=agents)
    assert result.agent == "helper"
    assert result.skipped == (
        Skipped(
            "writer",
            "add-on slack not connected (env SLACK_TOKEN), "
            "add-on drive not connected (not declared in the workspace)",
        ),
    )


def test_model_runner_agents_are_chosen_like_command_agents() -> None:
    agents = {"writer": model_agent(), "helper": agent(), "off": model_agent(enabled=False)}
    assert pick(item_agents=("off",), agents=agents) == Pick(
        "writer", "stage agents of weekly-report.Draft", (Skipped("off", "disabled"),))
    only = {"writer": model_agent()}
    assert pick(Stage(name="Draft", kind="work"), agents=only).agent == "writer"


def test_callable_connection_is_asked_once_per_addon() -> None:
    asked: list[str] = []

    def connected(name: str) -> AddonConnection:
        asked.append(name)
        return AddonConnection(name, False, [f"env {name.upper()}_TOKEN"])

    agents = {"a": agent(tools=["gmail.read"]), "b": agent(tools=["gmail.send"])}
    result = choose_agent(process="p", stage=Stage(name="S", kind="work"), item_agents=[],
                          default_agent=None, agents=agents, addon_connected=connected,
                          reviewed_by=None)
    assert asked == ["gmail"]
    assert result == Pick(
        None,
        "no enabled agent for S: a add-on gmail not connected (env GMAIL_TOKEN); "
        "b add-on gmail not connected (env GMAIL_TOKEN)",
        (
            Skipped("a", "add-on gmail not connected (env GMAIL_TOKEN)"),
            Skipped("b", "add-on gmail not connected (env GMAIL_TOKEN)"),
        ),
    )


def test_review_never_uses_the_reviewed_agent_even_on_stage_and_as_default() -> None:
    agents = {"writer": agent(), "reviewer": agent(), "aaa": agent()}
    assert pick(REVIEW, default="writer", agents=agents, reviewed_by="writer") == Pick(
        "reviewer", "stage agents of weekly-report.Review", (REVIEWED,)
    )
    only_writer = Stage(name="Review", kind="review", reviews="Draft", agents=["writer"])
    assert pick(only_writer, default="writer", agents=agents, reviewed_by="writer") == Pick(
        "aaa", "first enabled agent by name", (Skipped("writer", "did the work under review"),)
    )


def test_item_agents_are_ignored_on_a_review_stage() -> None:
    agents = {"writer": agent(), "reviewer": agent(), "boss": agent()}
    result = pick(REVIEW, item_agents=("boss",), agents=agents, reviewed_by="writer")
    assert result == Pick(
        "reviewer", "stage agents of weekly-report.Review", (REVIEWED,)
    )


def test_each_agent_is_listed_once_with_its_first_reason() -> None:
    agents = {"writer": agent(enabled=False)}
    result = pick(item_agents=("writer", "writer"), default="writer", agents=agents)
    assert result == Pick(
        None, "no enabled agent for Draft: writer disabled; helper not declared in the workspace",
        (Skipped("writer", "disabled"), Skipped("helper", "not declared in the workspace")),
    )


def test_no_agents_at_all() -> None:
    result = pick(Stage(name="Draft", kind="work"), agents={})
    assert result == Pick(None, "no enabled agent for Draft: the workspace declares no agents", ())


def test_pick_json_round_trip() -> None:
    agents = {"writer": agent(enabled=False), "helper": agent()}
    result = pick(agents=agents)
    data = json.loads(json.dumps(result.to_json()))
    assert data == {
        "agent": "helper",
        "reason": "stage agents of weekly-report.Draft",
        "skipped": [{"agent": "writer", "why": "disabled"}],
    }
    assert Pick.from_json(data) == result
    none = Pick(None, "no enabled agent for Draft: x", ())
    assert Pick.from_json(json.loads(json.dumps(none.to_json()))) == none

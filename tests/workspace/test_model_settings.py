"""A model agent's runner settings: the key variable is optional, loop limits have defaults."""

from __future__ import annotations

import warnings

import pytest
from pydantic import ValidationError

from bees_cli.workspace.models import Agent, ModelRunner, ModelSpec, Prices


def test_model_runner_settings_and_their_defaults() -> None:
    local = Agent.model_validate({"runner": {"model": {"base_url": "http://127.0.0.1:11434/v1",
                                                       "name": "smollm2"}}}).runner
    assert local == ModelRunner(model=ModelSpec(base_url="http://127.0.0.1:11434/v1",
                                                name="smollm2"))
    assert isinstance(local, ModelRunner)
    assert (local.model.api_key_env, local.model.prices, local.model.timeout_seconds,
            local.model.deadline_seconds, local.model.max_reply_bytes) == (
        None, None, 300.0, 600.0, 1_000_000)
    assert (local.tool_mode, local.max_turns, local.token_budget, local.max_reply_tokens,
            local.max_tool_calls) == ("native", 20, None, None, 50)
    full = Agent.model_validate({"runner": {
        "model": {"base_url": "https://api.openai.com/v1", "name": "gpt-4o-mini",
                  "api_key_env": "OPENAI_API_KEY", "timeout_seconds": 30,
                  "prices": {"input_per_million": 0.15, "output_per_million": 0.6}},
        "tool_mode": "json", "max_turns": 8, "token_budget": 50_000, "max_reply_tokens": 512,
    }}).runner
    assert isinstance(full, ModelRunner)
    assert full.model.prices == Prices(input_per_million=0.15, output_per_million=0.6)
    assert full.model.prices.cost(2_000_000, 500_000) == pytest.approx(0.6)
    assert (full.tool_mode, full.max_turns, full.token_budget, full.max_reply_tokens,
            full.model.timeout_seconds) == ("json", 8, 50_000, 512, 30.0)


def test_an_agent_dumps_its_model_runner_without_a_serializer_warning() -> None:
    agent = Agent.model_validate({"runner": {"model": {"base_url": "http://h/v1", "name": "m"},
                                             "max_turns": 3}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dumped = agent.model_dump(mode="json")["runner"]
    assert dumped == {"model": {"base_url": "http://h/v1", "name": "m", "api_key_env": None,
                                "prices": None, "timeout_seconds": 300.0,
                                "deadline_seconds": 600.0, "max_reply_bytes": 1_000_000},
                      "tool_mode": "native", "max_turns": 3, "token_budget": None,
                      "max_reply_tokens": None, "max_tool_calls": 50, "file_tools": True,
                      "attach": [], "required_tools": []}
    assert Agent.model_validate({"runner": dumped}) == agent


def test_a_deadline_longer_than_the_engines_bound_of_one_call_is_refused() -> None:
    model = {"base_url": "http://127.0.0.1:11434/v1", "name": "m"}
    with pytest.raises(ValidationError, match="less than or equal to 1800"):
        Agent.model_validate({"runner": {"model": {**model, "deadline_seconds": 1801}}})
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        Agent.model_validate({"runner": {"model": model, "max_tool_calls": 0}})


def test_required_tools_work_in_either_tool_mode_and_must_be_the_agents_tools() -> None:
    model = {"base_url": "http://127.0.0.1:11434/v1", "name": "m"}
    for mode in ("json", "native"):
        ok = Agent.model_validate({"tools": ["mail.send"], "runner": {
            "model": model, "tool_mode": mode, "required_tools": ["mail.send"]}})
        assert ok.runner.required_tools == ["mail.send"]  # type: ignore[union-attr]
    with pytest.raises(ValidationError, match="runner.required_tools mail.send not in tools"):
        Agent.model_validate({"runner": {"model": model, "tool_mode": "json",
                                         "required_tools": ["mail.send"]}})


def test_context_and_sampling_settings_are_checked_and_dump_only_when_set() -> None:
    """Unset, they are left out of the dump: a snapshot stored before them keeps its digest
    (an item already running finds it again)."""
    model = {"base_url": "http://127.0.0.1:11434/v1", "name": "m"}
    runner = Agent.model_validate({"runner": {"model": model, "context_tokens": 8192,
                                              "temperature": 0, "seed": 42}}).runner
    assert isinstance(runner, ModelRunner)
    assert (runner.context_tokens, runner.temperature, runner.seed) == (8192, 0.0, 42)
    dumped = runner.model_dump(mode="json")
    assert (dumped["context_tokens"], dumped["temperature"], dumped["seed"]) == (8192, 0.0, 42)
    unset = Agent.model_validate({"runner": {"model": model}}).model_dump(mode="json")["runner"]
    assert {"context_tokens", "temperature", "seed"} & set(unset) == set()
    for wrong, says in ((("temperature", 2.5), "less than or equal to 2"),
                        (("temperature", -0.1), "greater than or equal to 0"),
                        (("seed", 1.5), "valid integer"), (("seed", "7"), "valid integer"),
                        (("context_tokens", 100), "greater than or equal to 256")):
        with pytest.raises(ValidationError, match=says):
            Agent.model_validate({"runner": {"model": model, wrong[0]: wrong[1]}})

"""What a model agent is offered and how its answers are read (issue 13, points 3–5)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bees_cli.agents.chat_wire import ChatResponse
from bees_cli.agents.model_steps import (
    Read,
    addon_tool,
    failed_not_called,
    function_name,
    not_called,
    opening,
    read_step,
    response_format,
    step_schema,
    told_not_called,
    tool_name,
)
from bees_cli.workspace.models import Action


def answer(message: dict[str, object]) -> ChatResponse:
    return ChatResponse.model_validate({"choices": [{"message": message}]})


@pytest.mark.parametrize("tool", ["mail.send", "slack.post_message", "read_file", "write_file"])
def test_tool_names_map_to_function_names_and_back(tool: str) -> None:
    assert tool_name(function_name(tool)) == tool
    assert function_name("mail.send") == "mail__send"


def test_tool_calls_are_read_with_their_problems() -> None:
    calls = [{"id": "a", "type": "function", "function": {"name": "mail__send",
                                                          "arguments": '{"to": "x"}'}},
             {"id": "b", "type": "function", "function": {"name": "fly", "arguments": "{}"}},
             {"id": "c", "type": "function", "function": {"name": "read_file",
                                                          "arguments": "[1]"}}]
    read = read_step(answer({"role": "assistant", "tool_calls": calls}), review=False,
                     json_mode=False, offered={"mail__send", "read_file"}, turn=1)
    assert read == Read(kind="tools", calls=[
        ("a", "mail.send", {"to": "x"}, None),
        ("b", "fly", {}, "there is no tool 'fly' (tools: mail__send, read_file)"),
        ("c", "read_file", {}, "the arguments of tool call 'read_file' are a JSON list, "
                               "not an object")])


def test_a_review_answers_a_verdict_or_is_invalid() -> None:
    good = answer({"role": "assistant",
                   "content": '{"verdict": "changes_requested", "comments": ["shorter"]}'})
    assert read_step(good, review=True, json_mode=False, offered=set(), turn=1) == Read(
        kind="verdict", verdict="changes_requested", comments=["shorter"])
    bad = read_step(answer({"role": "assistant", "content": "looks good"}), review=True,
                    json_mode=False, offered=set(), turn=1)
    assert bad.kind == "invalid"
    assert bad.problem == "the model's answer is not JSON: Expecting value at line 1 column 1"
    fmt = response_format(review=True, json_mode=False)
    assert fmt is not None and fmt.json_schema is not None
    assert fmt.json_schema.name == "verdict"
    assert response_format(review=False, json_mode=False) is None


def test_json_mode_asks_one_branch_per_tool_with_its_input_schema() -> None:
    schema = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}
    fmt = response_format(review=False, json_mode=True,
                          tools=[addon_tool("mail.send", None, schema)])
    assert fmt is not None and fmt.json_schema is not None
    assert fmt.json_schema.schema_ == {"anyOf": [
        {"type": "object", "properties": {"tool": {"const": "mail__send"}, "arguments": schema},
         "required": ["tool", "arguments"], "additionalProperties": False},
        {"type": "object", "properties": {"final": {"type": "string"}},
         "required": ["final"], "additionalProperties": False}]}


def test_json_mode_reads_a_tool_step_or_a_final_answer() -> None:
    tool = answer({"role": "assistant", "content": '{"tool": "mail__send", "arguments": {}}'})
    assert read_step(tool, review=False, json_mode=True, offered={"mail__send"},
                     turn=3) == Read(kind="tools", calls=[("step-3", "mail.send", {}, None)])
    final = answer({"role": "assistant", "content": '{"final": "done"}'})
    assert read_step(final, review=False, json_mode=True, offered=set(), turn=1) == Read(
        kind="final", text="done")


@pytest.mark.parametrize(("named", "offered", "problem"), [
    ("mail__list", {"mail__send"}, "the step names tool 'mail__list', which is not offered at "
     "this step (offered: mail__send)"),
    ("fly", {"read_file"}, "the step names tool 'fly', which is not offered at this step "
     "(offered: read_file)"),
    ("mail__send", set(), "the step names tool 'mail__send', which is not offered at this "
     "step (offered: none)"),
])
def test_a_json_step_naming_a_tool_not_offered_is_invalid(named: str, offered: set[str],
                                                          problem: str) -> None:
    """Issue 26, point 3: not a call for the gate to refuse (a required tool already called
    is no longer offered, so it cannot run twice)."""
    step = answer({"role": "assistant", "content": f'{{"tool": "{named}", "arguments": {{}}}}'})
    assert read_step(step, review=False, json_mode=True, offered=offered, turn=2) == Read(
        kind="invalid", problem=problem)


def test_a_json_step_may_name_an_offered_action_with_its_dot() -> None:
    step = answer({"role": "assistant", "content": '{"tool": "mail.send", "arguments": {}}'})
    assert read_step(step, review=False, json_mode=True, offered={"mail__send"},
                     turn=2) == Read(kind="tools", calls=[("step-2", "mail.send", {}, None)])


def test_required_tools_not_called_are_named_in_order() -> None:
    required = ["tracker.file", "mail.send"]
    assert not_called(required, {"mail.send"}) == ["tracker.file"]
    assert not_called(required, {"mail.send", "tracker.file"}) == []
    assert told_not_called(["tracker.file"]) == (
        "you have not called tracker.file; call it before your final answer")
    assert told_not_called(required) == (
        "you have not called tracker.file, mail.send; call each before your final answer")
    assert failed_not_called(required) == (
        "the final answer came before tracker.file, mail.send were called "
        "(runner.required_tools), also after the model was told once")


def test_an_actions_input_schema_must_describe_an_object() -> None:
    schema = {"type": "object", "properties": {"to": {"type": "string"}}}
    assert Action(kind="send", command=["x"], input=schema).input == schema
    with pytest.raises(ValidationError, match="the input schema must describe an object"):
        Action(kind="send", command=["x"], input={"type": "string"})


def test_a_bounded_reply_bounds_the_final_answer_and_the_verdicts_comments() -> None:
    """With ``max_reply_tokens`` 300 the strings leave 40 tokens for the JSON around them:
    a grammar-following server closes the answer before the reply is cut."""
    work = step_schema([], review=False, reply_tokens=300)
    assert work == {"anyOf": [{"type": "object", "properties": {
        "final": {"type": "string", "maxLength": 260}}, "required": ["final"],
        "additionalProperties": False}]}
    review = step_schema([], review=True, reply_tokens=300)["anyOf"][0]
    assert review["properties"]["comments"] == {
        "type": "array", "items": {"type": "string", "maxLength": 82}, "maxItems": 3}
    fmt = response_format(review=True, json_mode=False, reply_tokens=300)
    assert fmt is not None and fmt.json_schema is not None
    assert fmt.json_schema.schema_["properties"]["comments"]["maxItems"] == 3


def test_the_final_answer_is_left_out_until_the_required_tools_ran() -> None:
    send = addon_tool("mail.send", None, {"type": "object", "properties": {}})
    schema = step_schema([send], review=False, final=False)
    assert [b["properties"].get("tool") for b in schema["anyOf"]] == [{"const": "mail__send"}]
    assert step_schema([], review=False, final=False)["anyOf"][0]["required"] == ["final"]


def test_attached_files_are_in_the_task_and_no_tools_asks_for_the_answer_only() -> None:
    system, task = opening(instructions="Write.", title="Weekly report", stage="Draft",
                           kind="work", folders=["stage"], previous={}, comments=[],
                           tools_text="", attached={"team-notes/maya.md": "- shipped\n"})
    assert system.content == 'Write.\n\nAnswer with one JSON object: {"final": TEXT}'
    assert task.content == ("Work item: Weekly report\nStage: Draft (work)\n"
                            "Folders you may use: stage\n--- team-notes/maya.md ---\n"
                            "- shipped\n--- end of team-notes/maya.md ---")


"""Typed messages of the OpenAI-compatible chat-completions protocol, as Bees sends and reads them.

Requests are strict (a typo in a field is a bug); answers ignore fields they do not name,
since every server adds its own (llama.cpp's ``timings``, OpenAI's ``system_fingerprint``).
A streamed reply (``"stream": true``) is assembled into the same whole reply
(:mod:`bees_cli.agents.model_stream`): Bees acts on whole replies, one per turn.
"""

from __future__ import annotations

import json
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bees_cli.errors import ModelAnswerInvalid, ModelToolCallInvalid

Role = Literal["system", "user", "assistant", "tool"]
ToolChoice = Literal["auto", "none", "required"]
T = TypeVar("T", bound=BaseModel)


class Sent(BaseModel):
    """Base of what Bees sends: unknown fields are refused, ``None`` fields are left out."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def wire(self) -> dict[str, Any]:
        """Return the JSON body: protocol names (aliases), no ``None`` fields."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class Read(BaseModel):
    """Base of what Bees reads: fields it does not name are ignored."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class FunctionCall(Read, Sent):
    """The function a tool call names, with its arguments as JSON *text* (as the protocol says)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    name: str
    arguments: str = "{}"


class ToolCall(Read):
    """One tool call of an assistant message."""

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall

    def parsed_arguments(self) -> dict[str, Any]:
        """Return the arguments as a JSON object.

        Returns:
            The decoded arguments (``{}`` for empty text).

        Raises:
            ModelToolCallInvalid: the text is not JSON, or not a JSON object; the loop
                tells this back to the model (issue 13, point 7).
        """
        text = self.function.arguments.strip() or "{}"
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise ModelToolCallInvalid(
                f"the arguments of tool call {self.function.name!r} are not valid JSON: "
                f"{error.msg} at line {error.lineno} column {error.colno}",
                tool_call_id=self.id,
                tool=self.function.name,
            ) from None
        if not isinstance(value, dict):
            raise ModelToolCallInvalid(
                f"the arguments of tool call {self.function.name!r} are a JSON "
                f"{type(value).__name__}, not an object",
                tool_call_id=self.id,
                tool=self.function.name,
            )
        return value


class Message(Read, Sent):
    """One message of the conversation, sent or received.

    ``content`` is None on an assistant message that only calls tools; ``tool_call_id``
    is set on a ``tool`` message (the result of that call).
    """

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    def wire(self) -> dict[str, Any]:
        """Return the message as sent (an empty ``tool_calls`` list is left out)."""
        data = super().wire()
        if not data.get("tool_calls"):
            data.pop("tool_calls", None)
        return data


class FunctionDef(Sent):
    """A tool offered to the model: its name, what it does, its input as a JSON Schema."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


class ToolDef(Sent):
    """One entry of the request's ``tools`` list."""

    type: Literal["function"] = "function"
    function: FunctionDef


class JsonSchemaFormat(Sent):
    """The JSON Schema a ``response_format`` of type ``json_schema`` asks the answer to follow."""

    name: str
    schema_: dict[str, Any] = Field(alias="schema")
    strict: bool | None = None


class ResponseFormat(Sent):
    """The request's ``response_format``: free text, any JSON object, or one JSON Schema."""

    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None

    @classmethod
    def for_schema(
        cls, name: str, schema: dict[str, Any], *, strict: bool = True
    ) -> ResponseFormat:
        """Return a ``json_schema`` format asking for an answer that follows ``schema``."""
        wanted = JsonSchemaFormat(name=name, schema=schema, strict=strict)
        return cls(type="json_schema", json_schema=wanted)


class ChatRequest(Sent):
    """The body of ``POST /chat/completions`` (non-streaming)."""

    model: str
    messages: list[Message] = Field(min_length=1)
    tools: list[ToolDef] | None = None
    tool_choice: ToolChoice | None = None
    response_format: ResponseFormat | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0)
    seed: int | None = None
    stream: bool = False
    """Ask for the reply as server-sent events (issue 26, point 2; see ``model_stream``)."""
    stream_options: dict[str, bool] | None = None

    def wire(self) -> dict[str, Any]:
        """Return the JSON body, each message as :meth:`Message.wire` gives it."""
        data = super().wire()
        data["messages"] = [m.wire() for m in self.messages]
        return data


class Usage(Read):
    """Tokens one call used: prompt (in) and completion (out)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class Choice(Read):
    """One answer of the model (Bees asks for one)."""

    index: int = 0
    message: Message
    finish_reason: str | None = None


class ChatResponse(Read):
    """The answer to ``POST /chat/completions``."""

    id: str | None = None
    model: str | None = None
    choices: list[Choice] = Field(min_length=1)
    usage: Usage = Field(default_factory=Usage)

    @property
    def message(self) -> Message:
        """The first choice's message (Bees asks for one choice)."""
        return self.choices[0].message

    def json_content(self) -> Any:
        """Return the message's content decoded as JSON (the ``response_format`` answer).

        Raises:
            ModelAnswerInvalid: there is no content, or it is not JSON.
        """
        text = self.message.content
        if text is None or not text.strip():
            raise ModelAnswerInvalid("the model answered no content where JSON was asked")
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            # some of json's messages end with "at" ("Unterminated string starting at")
            raise ModelAnswerInvalid(
                f"the model's answer is not JSON: {error.msg.removesuffix(' at')} at line "
                f"{error.lineno} column {error.colno}"
            ) from None

    @property
    def cut_for_length(self) -> bool:
        """Whether the server stopped the reply at its token limit (``finish_reason``
        ``length``: ``max_tokens``, else the server's own limit), not at its end."""
        return self.choices[0].finish_reason == "length"

    def parsed_content(self, model: type[T]) -> T:
        """Return the message's JSON content validated as ``model``.

        Raises:
            ModelAnswerInvalid: the content is not JSON, or does not fit ``model`` (the
                message names the first problem's field).
        """
        value = self.json_content()
        try:
            return model.model_validate(value)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(the answer)"
            raise ModelAnswerInvalid(
                f"the model's answer is not a valid {model.__name__}: {where}: {first['msg']}"
            ) from None

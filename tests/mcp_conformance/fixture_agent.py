"""The agent ``scripts/mcp-conformance.sh`` serves with ``tether mcp-serve --http``: the fixture
tools the official MCP conformance suite's server scenarios call, by the names and shapes the
suite's scenario sources give, each made the way a tether user makes a tool. Its model is
scripted (the suite never asks the agent itself)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable, Mapping
from typing import Any

from tether import Agent, Tool, tool
from tether.mcp import Elicitation, McpTool, NeedsInput, resumed
from tether.messages import ImageBlock
from tether.testing import Reply, ScriptedTransport
from tether.tools.progress import report_progress

# a 1x1 red pixel, as the suite suggests
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


@tool
def test_simple_text() -> str:
    """Return a simple text response."""
    return "This is a simple text response for testing."


@tool
def test_image_content() -> list[ImageBlock]:
    """Return an image (a 1x1 red pixel)."""
    return [ImageBlock.from_bytes("image/png", PNG)]


# a WAV file with no samples: the header alone
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
NO_ARGUMENTS = {"type": "object", "properties": {}}


def _content(*items: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A handler whose result is MCP content as it is (served to an MCP client as it is)."""
    return lambda args: {"content": list(items)}


test_multiple_content_types = McpTool(
    "test_multiple_content_types",
    "Return text, an image and an embedded resource.",
    NO_ARGUMENTS,
    _content(
        {"type": "text", "text": "Multiple content types test:"},
        {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"},
        {
            "type": "resource",
            "resource": {
                "uri": "test://mixed-content-resource",
                "mimeType": "application/json",
                "text": json.dumps({"test": "data", "value": 123}),
            },
        },
    ),
).as_tool()

test_audio_content = McpTool(
    "test_audio_content",
    "Return audio (a WAV file with no samples).",
    NO_ARGUMENTS,
    _content({"type": "audio", "data": WAV, "mimeType": "audio/wav"}),
).as_tool()

test_embedded_resource = McpTool(
    "test_embedded_resource",
    "Return an embedded text resource.",
    NO_ARGUMENTS,
    _content(
        {
            "type": "resource",
            "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content.",
            },
        }
    ),
).as_tool()


@tool
def test_error_handling() -> str:
    """Always fail."""
    raise RuntimeError("This tool intentionally returns an error for testing")


async def _with_progress() -> str:
    for done in (0, 50, 100):
        report_progress(done, 100)
        if done < 100:
            await asyncio.sleep(0.05)
    return "Progress test completed"


test_tool_with_progress = Tool(
    "test_tool_with_progress",
    _with_progress,
    description="Report progress 0, 50 and 100 of 100, about 50 ms apart.",
    schema={"type": "object", "properties": {}},
    reports_progress=True,
)


def _address_tool(name: str = "", address: dict[str, str] | None = None) -> str:
    return f"{name} at {address}"


json_schema_2020_12_tool = Tool(
    "json_schema_2020_12_tool",
    _address_tool,
    description="Tool with JSON Schema 2020-12 features",
    schema={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    },
)


def _asked(tool_name: str, message: str, schema: dict[str, Any]) -> Mapping[str, Any] | None:
    """The user's answer to one question (None: declined or cancelled): the first call raises
    ``NeedsInput`` with it, and the call run again with the answer reads it."""
    answered = resumed()
    if answered is None:
        question = Elicitation(message, schema, server=tool_name, tool=tool_name, key="answer")
        raise NeedsInput([question], {}, f"{tool_name} asks the user: {message}")
    return answered.answers.get("answer")


def _said(content: Mapping[str, Any] | None) -> str:
    action = "accept" if content is not None else "decline or cancel"
    return f"action={action}, content={json.dumps(content)}"


USER = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}


@tool
def test_elicitation(message: str) -> str:
    """Ask the user for a username and an e-mail address, showing ``message``."""
    return f"User response: {_said(_asked('test_elicitation', message, USER))}"


DEFAULTS = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}


@tool
def test_elicitation_sep1034_defaults() -> str:
    """Ask the user a form whose every field has a default (SEP-1034)."""
    message = "Test client default value handling - please accept with defaults"
    answer = _asked("test_elicitation_sep1034_defaults", message, DEFAULTS)
    return f"Elicitation completed: {_said(answer)}"


def _titled(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in pairs]


OPTIONS = ["option1", "option2", "option3"]
ENUMS = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": OPTIONS},
        "titledSingle": {
            "type": "string",
            "oneOf": _titled(
                ("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")
            ),
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": OPTIONS}},
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": _titled(
                    ("value1", "First Choice"),
                    ("value2", "Second Choice"),
                    ("value3", "Third Choice"),
                )
            },
        },
    },
    "required": [],
}


@tool
def test_elicitation_sep1330_enums() -> str:
    """Ask the user a form with each kind of enum (SEP-1330)."""
    message = "Test enum schema variants - please pick options"
    answer = _asked("test_elicitation_sep1330_enums", message, ENUMS)
    return f"Elicitation completed: {_said(answer)}"


agent = Agent(
    "The MCP conformance suite's fixture tools.",
    ScriptedTransport([], then=lambda request: Reply("The fixtures are tools; call them.")),
    tools=[
        test_simple_text,
        test_image_content,
        test_multiple_content_types,
        test_audio_content,
        test_embedded_resource,
        test_error_handling,
        test_tool_with_progress,
        json_schema_2020_12_tool,
        test_elicitation,
        test_elicitation_sep1034_defaults,
        test_elicitation_sep1330_enums,
    ],
    name="conformance-fixtures",
)

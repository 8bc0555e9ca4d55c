"""The agent ``scripts/mcp-conformance.sh`` serves with ``tether mcp-serve --http``: the fixture
tools the official MCP conformance suite's server scenarios call, by the names and shapes the
suite's scenario sources give, each made the way a tether user makes a tool. Its model is
scripted (the suite never asks the agent itself)."""

from __future__ import annotations

import asyncio
import base64

from tether import Agent, Tool, tool
from tether.messages import ImageBlock, TextBlock
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


@tool
def test_multiple_content_types() -> list[TextBlock | ImageBlock]:
    """Return text and an image (the suite also asks for an embedded resource)."""
    return [TextBlock("Multiple content types test:"), ImageBlock.from_bytes("image/png", PNG)]


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


agent = Agent(
    "The MCP conformance suite's fixture tools.",
    ScriptedTransport([], then=lambda request: Reply("The fixtures are tools; call them.")),
    tools=[
        test_simple_text,
        test_image_content,
        test_multiple_content_types,
        test_error_handling,
        test_tool_with_progress,
        json_schema_2020_12_tool,
    ],
    name="conformance-fixtures",
)

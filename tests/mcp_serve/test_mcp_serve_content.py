"""A tool defined in MCP's terms (``McpTool``) whose result holds audio and an embedded resource
reaches an MCP client as that content, item for item, over stdio and HTTP; the model, asked
through ``ask``, still reads the result as tether reduces it (the resource's text, the audio
described in a line). Real ``tether mcp-serve`` processes, driven by the SDK's ``Client``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp_serve_helpers import AGENTS, reaching, server_env, tether_command, text_of

from mcp import Client, StdioServerParameters

SPEC = f"{AGENTS}:asker"
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest, markers: Path) -> Iterator[Any]:
    with reaching(request.param, markers, SPEC) as where:
        yield where


async def test_audio_and_an_embedded_resource_reach_the_client_as_they_are(target: Any) -> None:
    async with Client(target) as session:
        result = await session.call_tool("recording", {})
        asked = await session.call_tool("ask", {"message": "record"})
    assert result.is_error is False
    text, audio, embedded = result.content
    assert isinstance(text, types.TextContent) and text.text == "a recording:"
    assert isinstance(audio, types.AudioContent)
    assert (audio.data, audio.mime_type) == (WAV, "audio/wav")
    assert isinstance(embedded, types.EmbeddedResource)
    resource = embedded.resource
    assert isinstance(resource, types.TextResourceContents)
    assert (str(resource.uri), resource.mime_type, resource.text) == (
        "note://1",
        "text/plain",
        "the transcript",
    )
    said = text_of(asked)  # what the model read: the reduced result
    assert said.startswith("The tool said: a recording:")
    assert "[audio (audio/wav)" in said and "the transcript" in said


async def test_a_result_a_middleware_changed_is_served_as_changed(markers: Path) -> None:
    command = tether_command("--agent", f"{AGENTS}:censored")
    params = StdioServerParameters(
        command=command[0], args=command[1:], env=server_env(markers), cwd=markers
    )
    async with Client(params) as session:
        result = await session.call_tool("recording", {})
    assert [item.type for item in result.content] == ["text"]
    assert text_of(result) == "redacted"

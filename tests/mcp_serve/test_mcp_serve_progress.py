"""A served tool that reports its progress (``report_progress``) is heard by the MCP client that
asked for progress while the call runs, as the MCP conformance suite's
``tools-call-with-progress`` scenario checks; a client that did not ask gets the result alone."""

from __future__ import annotations

from pathlib import Path

from mcp_serve_helpers import AGENTS
from test_mcp_serve_stdio import connected

REPORTER = f"{AGENTS}:agent"


async def test_a_tools_own_progress_reaches_the_client_before_its_result(markers: Path) -> None:
    heard: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    async with connected(markers, REPORTER) as session:
        result = await session.call_tool("count_to", {"n": 3}, progress_callback=progress)
    assert not result.is_error
    assert [item.text for item in result.content if item.type == "text"] == ["counted to 3"]
    assert heard == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_a_client_that_asked_for_no_progress_gets_the_result_alone(markers: Path) -> None:
    async with connected(markers, REPORTER) as session:
        result = await session.call_tool("count_to", {"n": 2})
    assert not result.is_error
    assert [item.text for item in result.content if item.type == "text"] == ["counted to 2"]

"""The chat page reloaded while a run streams (issue 40): it attaches to the run again and the
rest streams in, each message once, instead of waiting for the run to end."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from chat_pages import open_page, send

from served import serving
from tether import Agent, tool
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Call, Hold, Reply, ScriptedTransport

playwright = pytest.importorskip("playwright.async_api")
expect = playwright.expect


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_a_reload_mid_run_attaches_and_the_rest_streams_in(
    tmp_path: Path, browser: Any
) -> None:
    gate = asyncio.Event()
    model = ScriptedTransport(
        [
            Reply("Adding first.", tool_calls=[Call("add", {"a": 2, "b": 3})]),
            Hold(gate, Reply("So far. Now more", chunks=2), after_events=1),
        ]
    )
    agent = Agent("s", model, tools=[add], approval=[])
    async with SQLiteStore(tmp_path / "c.db") as store, serving(app(agent, store)) as base:
        page, problems = await open_page(browser, base)
        await send(page, "2 + 3?")
        answer = page.locator(".msg.assistant").nth(1)
        await expect(answer).to_have_text("So far.")  # the first half; the run is held
        await page.reload()
        # the run under way is shown again from its start, live: half an answer, Stop shown
        await expect(answer).to_have_text("So far.")
        await expect(page.locator("#stop")).to_be_visible()
        await expect(page.locator(".tool[data-call='call_1'] .result")).to_have_text("5")
        gate.set()
        await expect(answer).to_have_text("So far. Now more")
        await expect(page.locator("#stop")).to_be_hidden()
        await expect(page.locator(".msg.user")).to_have_count(1)
        await expect(page.locator(".msg.assistant")).to_have_count(2)
        await expect(page.locator(".tool")).to_have_count(1)
        await expect(page.locator(".msg.assistant").first).to_have_text("Adding first.")
        await expect(page.locator("#log")).not_to_contain_text("under way")
        assert problems == []

"""One chat through the served page on the real local model: the question typed in headless
Chromium, the model's tool call shown with its result, and its answer streamed to the page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from served import serving
from tether import Agent, tool
from tether.local import LocalModel
from tether.serve import app
from tether.stores import SQLiteStore

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(600)]

SYSTEM = "You are a helpful assistant. Use the tools when they help, then answer briefly."


@tool
def add(a: int, b: int) -> int:
    """Add two whole numbers and return the sum."""
    return a + b


async def test_a_chat_with_a_tool_call_through_the_page(
    local_model: LocalModel, browser: Any, tmp_path: Path
) -> None:

    transport = local_model.chat_transport(temperature=0, seed=7, max_tokens=160)
    agent = Agent(SYSTEM, transport, tools=[add], max_iterations=4, name="local")
    try:
        async with SQLiteStore(tmp_path / "c.db") as store, serving(app(agent, store)) as base:
            page = await browser.new_page()
            problems: list[str] = []
            page.on("pageerror", lambda e: problems.append(str(e)))
            await page.goto(base + "/")
            await page.fill("#prompt", "Use the add tool to add 17 and 25, then tell me the sum.")
            await page.click("#send")
            card = page.locator(".tool.done", has_text="add")
            await card.first.wait_for(timeout=300_000)
            assert (await card.first.locator(".result").inner_text()).strip() == "42"
            await page.locator(".note.usage").last.wait_for(timeout=300_000)
            answers = await page.locator(".msg.assistant").all_inner_texts()
            assert any("42" in answer for answer in answers), answers
            assert "tokens" in await page.locator(".note.usage").last.inner_text()
            assert problems == []
            sessions = await store.sessions()
            assert len(sessions) == 1 and sessions[0].messages >= 4
    finally:
        await transport.aclose()

"""A run on the chat page: a "thinking" indicator with elapsed seconds while the model is awaited
(naming the step a server reports), Send disabled while a run streams, tool cards that fold to
their name and state once done, the approval note gone once decided, a deny reason that reaches
the model, and a panel with the run's events in order."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from chat_pages import Injected, open_page, send

from served import serving
from tether import Agent, tool
from tether.messages import ToolResultBlock
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Call, Hold, Reply, ScriptedTransport

playwright = pytest.importorskip("playwright.async_api")
expect = playwright.expect

SECONDS = re.compile(r"[1-9][0-9]* s")


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_thinking_shows_while_the_model_is_awaited(tmp_path: Path, browser: Any) -> None:
    first, second = asyncio.Event(), asyncio.Event()
    model = ScriptedTransport(
        [
            Hold(first, Reply(tool_calls=[Call("add", {"a": 2, "b": 3})])),
            Hold(second, Reply("It is 5.")),
        ]
    )
    agent = Agent("s", model, tools=[add])
    async with SQLiteStore(tmp_path / "c.db") as store, serving(app(agent, store)) as base:
        page, problems = await open_page(browser, base)
        await send(page, "2 + 3?")
        thinking = page.locator("#log .thinking")
        await expect(thinking).to_contain_text("thinking")
        await expect(thinking).to_contain_text(SECONDS, timeout=5000)  # the seconds count up
        first.set()
        card = page.locator(".tool[data-call='call_1']")
        await card.locator(".result").wait_for(state="attached")
        # after the tool's result the model is awaited again: the indicator is back, last
        await expect(page.locator("#log > :last-child")).to_have_class(re.compile("thinking"))
        await expect(thinking).to_have_count(1)
        second.set()
        await page.locator(".msg.assistant", has_text="It is 5.").wait_for()
        await expect(thinking).to_have_count(0)
        assert problems == []


async def test_a_step_the_server_reports_names_the_wait(tmp_path: Path, browser: Any) -> None:
    gate = asyncio.Event()
    model = ScriptedTransport([Hold(gate, Reply("Ready."))])
    async with SQLiteStore(tmp_path / "c.db") as store:
        served = Injected(app(Agent("s", model), store))
        async with serving(served) as base:
            await step_names_the_wait(browser, base, served, gate)


async def step_names_the_wait(browser: Any, base: str, served: Injected, gate: Any) -> None:
    page, problems = await open_page(browser, base)
    await send(page, "hello")
    thinking = page.locator("#log .thinking")
    await expect(thinking).to_contain_text("thinking")
    await served.events.put({"type": "STEP_STARTED", "stepName": "loading the model's weights"})
    await expect(thinking).to_contain_text("loading the model's weights")
    await expect(thinking).to_contain_text(SECONDS, timeout=5000)
    await served.events.put({"type": "STEP_FINISHED", "stepName": "something else"})
    await asyncio.sleep(0.3)
    await expect(thinking).to_contain_text("loading the model's weights")
    await served.events.put({"type": "STEP_FINISHED", "stepName": "loading the model's weights"})
    await expect(thinking).not_to_contain_text("loading")
    await expect(thinking).to_contain_text("thinking")
    gate.set()
    await page.locator(".msg.assistant", has_text="Ready.").wait_for()
    await expect(thinking).to_have_count(0)
    assert problems == []


async def test_send_is_disabled_while_a_run_streams(tmp_path: Path, browser: Any) -> None:
    """Disabled from the send to the run's end, and enabled again after an answer, a failure
    and a stop; Enter does not send meanwhile either."""
    gates = [asyncio.Event() for _ in range(2)]
    model = ScriptedTransport(
        [
            Hold(gates[0], Reply("One.")),
            ValueError("the model broke"),
            Hold(gates[1], Reply("never", chunks=2), 1),
        ]
    )
    async with (
        SQLiteStore(tmp_path / "c.db") as store,
        serving(app(Agent("s", model), store)) as base,
    ):
        page, problems = await open_page(browser, base)
        button = page.locator("#send")
        await send(page, "first")
        await expect(button).to_be_disabled()
        await page.fill("#prompt", "sneaked in")
        await page.press("#prompt", "Enter")
        gates[0].set()
        await page.locator(".msg.assistant", has_text="One.").wait_for()
        await expect(button).to_be_enabled()
        assert await page.locator(".msg.user").count() == 1  # Enter sent nothing meanwhile
        assert await page.input_value("#prompt") == "sneaked in"

        await send(page, "second")  # the model fails
        await page.locator(".note.error", has_text="the model broke").wait_for()
        await expect(button).to_be_enabled()

        await send(page, "third")
        await expect(button).to_be_disabled()
        await page.locator(".msg.assistant", has_text="nev").wait_for()
        await page.click("#stop")
        await page.locator(".note", has_text="stopped").wait_for()
        await expect(button).to_be_enabled()
        assert [p for p in problems if "the model broke" not in p] == []


async def test_tool_cards_fold_once_done(tmp_path: Path, browser: Any) -> None:
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("add", {"a": 20, "b": 22})]), Reply("It is 42.")]
    )
    agent = Agent("s", model, tools=[add])
    async with SQLiteStore(tmp_path / "c.db") as store, serving(app(agent, store)) as base:
        page, problems = await open_page(browser, base)
        await send(page, "20 + 22?")
        await page.locator(".msg.assistant", has_text="It is 42.").wait_for()
        for reading in ("the stream", "the store"):
            card = page.locator(".tool[data-call='call_1']")
            head = card.locator(".head")
            await expect(head).to_contain_text("add")
            await expect(head).to_contain_text("done")
            await expect(card.locator(".args")).to_be_hidden()
            await expect(card.locator(".result")).to_be_hidden()
            await head.click()
            await expect(card.locator(".args")).to_be_visible()
            await expect(card.locator(".args")).to_contain_text('"a": 20')
            await expect(card.locator(".result")).to_have_text("42")
            assert await head.get_attribute("aria-expanded") == "true", reading
            await head.click()
            await expect(card.locator(".result")).to_be_hidden()
            await page.reload()
            await page.locator(".msg.assistant", has_text="It is 42.").wait_for()
        assert problems == []


async def test_approval_note_clears_and_a_deny_reason_reaches_the_model(
    tmp_path: Path, browser: Any
) -> None:
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("add", {"a": 1, "b": 2})]),
            Reply("Done, 3."),
            Reply(tool_calls=[Call("add", {"a": 5, "b": 5})]),
            Reply("Understood."),
        ]
    )
    agent = Agent("s", model, tools=[add], approval=["add"])
    async with SQLiteStore(tmp_path / "c.db") as store, serving(app(agent, store)) as base:
        page, problems = await open_page(browser, base)
        log = page.locator("#log")
        await send(page, "1 + 2")
        card = page.locator(".tool[data-call='call_1']")
        await card.locator("button.approve").wait_for()
        await expect(log).to_contain_text("waiting for your approval")
        await card.locator("button.approve").click()
        await page.locator(".msg.assistant", has_text="Done, 3.").wait_for()
        await expect(log).not_to_contain_text("waiting for your approval")

        await send(page, "5 + 5")
        card = page.locator(".tool[data-call='call_2']")
        await card.locator("button.deny").wait_for()
        await expect(log).to_contain_text("waiting for your approval")
        await card.locator("input.reason").fill("use your head, no tools")
        await card.locator("button.deny").click()
        await page.locator(".msg.assistant", has_text="Understood.").wait_for()
        await expect(log).not_to_contain_text("waiting for your approval")
        await expect(card.locator(".result")).to_contain_text("use your head, no tools")
        assert problems == []

    results = [
        block
        for message in model.requests[-1].messages
        for block in message.content
        if isinstance(block, ToolResultBlock) and block.tool_use_id == "call_2"
    ]
    assert len(results) == 1 and results[0].is_error
    assert "use your head, no tools" in results[0].text


async def test_the_events_panel_lists_the_runs_events(tmp_path: Path, browser: Any) -> None:
    model = ScriptedTransport(
        [
            Reply("Adding.", tool_calls=[Call("add", {"a": 2, "b": 3})]),
            Reply("It is 5."),
            Reply("Still 5."),
        ]
    )
    agent = Agent("s", model, tools=[add])
    async with SQLiteStore(tmp_path / "c.db") as store, serving(app(agent, store)) as base:
        page, problems = await open_page(browser, base)
        panel = page.locator("#trace")
        await expect(panel).to_be_hidden()
        await send(page, "2 + 3?")
        await page.locator(".msg.assistant", has_text="It is 5.").wait_for()
        await page.click("#events")
        await expect(panel).to_be_visible()
        assert await page.get_attribute("#events", "aria-pressed") == "true"
        rows = panel.locator("li.event")
        await expect(rows.last).to_contain_text("RUN_FINISHED")
        shown = await rows.all_inner_texts()
        kinds = [row.split()[1] for row in shown]
        assert kinds == [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "TEXT_MESSAGE",
            "TOOL_CALL_START",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE",
            "MESSAGES_SNAPSHOT",
            "RUN_FINISHED",
        ]
        offsets = [float(row.split()[0].removeprefix("+").removesuffix("s")) for row in shown]
        assert offsets == sorted(offsets) and offsets[0] >= 0
        assert "1 message" in shown[1] and "4 messages" in shown[7]
        assert "Adding." in shown[2]
        assert "add" in shown[3] and '"a":2' in shown[4].replace(" ", "")
        assert "5" in shown[5]
        assert "tokens" in shown[-1] and "success" in shown[-1]
        # a second run is added below the first; another session starts an empty panel
        await send(page, "again?")
        await expect(rows.filter(has_text="RUN_FINISHED")).to_have_count(2)
        await page.click("#new")
        await expect(rows).to_have_count(0)
        await page.click("#events")
        await expect(panel).to_be_hidden()
        assert problems == []

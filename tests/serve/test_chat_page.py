"""The chat page at ``/`` in a real headless Chromium (Debian's, driven by Playwright): the answer
streams in before the run ends, tool calls show as they start and finish, a paused call is
approved or denied with its buttons, Stop cancels a run, sessions are listed, switched, reloaded
and deleted, and model output is shown as text, never run as HTML."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest

from served import serving
from tether import Agent, tool
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Call, Hold, Reply, ScriptedTransport

playwright = pytest.importorskip("playwright.async_api")

HOSTILE = 'Let me add <script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> that.'
GREEN, RED, AMBER = (46, 158, 106), (217, 69, 63), (201, 138, 27)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def open_page(browser: Any, base: str) -> tuple[Any, list[str]]:
    """A page at ``base`` and the list that collects its console errors, page errors and any
    request that leaves the server (the page must need nothing else)."""
    page = await browser.new_page(viewport={"width": 1100, "height": 800})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    # the page's own policy forbids eval: the test waits with locators, not wait_for_function
    page.on("dialog", lambda d: problems.append(f"dialog: {d.message}"))
    page.on("request", lambda r: None if r.url.startswith(base) else problems.append(r.url))
    await page.goto(base + "/")
    await page.wait_for_selector("#agent:not(:empty)")
    return page, problems


async def send(page: Any, text: str) -> None:
    await page.fill("#prompt", text)
    await page.click("#send")


async def test_a_chat_streams_and_a_paused_call_is_approved(tmp_path: Path, browser: Any) -> None:
    gate = asyncio.Event()
    model = ScriptedTransport(
        [
            Hold(gate, Reply(HOSTILE, tool_calls=[Call("add", {"a": 2, "b": 3})], chunks=4), 2),
            Reply("It is 5."),
        ]
    )
    agent = Agent("s", model, tools=[add], approval=["add"], name="adder")
    async with SQLiteStore(tmp_path / "c.db") as store, serving(app(agent, store)) as base:
        page, problems = await open_page(browser, base)
        assert await page.inner_text("#agent") == "adder · tools: add"
        await send(page, "What is 2 + 3?")

        # the first half of the answer is on the page while the run waits for the rest
        bubble = page.locator(".msg.assistant").first
        await bubble.wait_for()
        await playwright.expect(bubble).to_contain_text("Let me add")
        shown = await bubble.text_content()
        assert HOSTILE.startswith(shown) and shown != HOSTILE
        assert await page.is_visible("#stop")
        gate.set()

        card = page.locator(".tool[data-call='call_1']")
        await card.locator("button.approve").wait_for()
        assert "waiting for your approval" in await card.inner_text()
        assert '"a": 2' in await card.locator(".args").inner_text()
        assert await bubble.text_content() == HOSTILE  # shown as text, every character
        assert await page.evaluate("window.pwned") is None
        assert await page.locator(".msg.assistant img, .msg.assistant script").count() == 0

        await card.locator("button.approve").click()
        await page.locator(".msg.assistant", has_text="It is 5.").wait_for()
        assert await card.locator(".result").inner_text() == "5"
        assert "done" in await card.get_attribute("class")
        assert "tokens" in await page.locator(".note.usage").last.inner_text()
        assert_colours(await page.screenshot(), GREEN)

        # the session is on the side, and a reload shows it again from the store
        session = page.locator("#sessions li.current")
        assert await session.count() == 1
        await page.reload()
        await page.locator(".msg.assistant", has_text="It is 5.").wait_for()
        assert await page.locator(".msg.user").inner_text() == "What is 2 + 3?"
        assert await page.locator(".msg.assistant").first.text_content() == HOSTILE
        assert await page.locator(".tool[data-call='call_1'] .result").inner_text() == "5"
        assert await page.evaluate("window.pwned") is None
        assert problems == []


async def test_a_denied_call_shows_in_red_and_stop_cancels(tmp_path: Path, browser: Any) -> None:
    gate = asyncio.Event()
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("add", {"a": 1, "b": 1})]),
            Reply("Fine, I will not."),
            Hold(gate, Reply("this never arrives", chunks=3), 1),
        ]
    )
    agent = Agent("s", model, tools=[add], approval=["add"])
    async with SQLiteStore(tmp_path / "c.db") as store, serving(app(agent, store)) as base:
        page, problems = await open_page(browser, base)
        await send(page, "add one and one")
        card = page.locator(".tool[data-call='call_1']")
        await card.locator("button.deny").click()
        await page.locator(".msg.assistant", has_text="Fine, I will not.").wait_for()
        assert "error" in await card.get_attribute("class")
        assert "denied" in await card.locator(".result").inner_text()
        assert_colours(await page.screenshot(), RED)

        await send(page, "say something long")
        await page.locator(".msg.assistant", has_text="this").wait_for()
        await page.click("#stop")
        await page.locator(".note", has_text="stopped").wait_for()
        assert await page.is_hidden("#stop")
        first = await page.evaluate("location.hash")

        # a new chat, then back to the first one, then delete it
        await page.click("#new")
        assert await page.locator("#log > *").count() == 0
        await send(page, "hello")
        await playwright.expect(page.locator("#sessions li")).to_have_count(2)
        listed = page.locator(f"#sessions li[data-session='{first.removeprefix('#s=')}']")
        await listed.click()
        await page.locator(".msg.assistant", has_text="Fine, I will not.").wait_for()
        await playwright.expect(listed).to_have_class("current")
        await listed.locator("button.delete").click()
        await page.click("dialog#confirm button.ok")  # deleting asks first
        await playwright.expect(page.locator("#sessions li")).to_have_count(1)
        assert await page.locator("#log > *").count() == 0
        assert problems == []
    assert len(await store.sessions()) == 1


def assert_colours(png: bytes, *colours: tuple[int, int, int]) -> None:
    """The screenshot is drawn (many colours), and holds each of ``colours`` (a card's edge)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    found = image.getcolors(maxcolors=1 << 20) or []
    present = {colour for _, colour in found}
    assert len(found) > 20, "the page looks blank"
    for colour in colours:
        assert colour in present, f"no {colour} on the page"


async def test_a_session_opened_twice_shows_its_reasoning(tmp_path: Path, browser: Any) -> None:
    model = ScriptedTransport([Reply("The answer.", reasoning="Thinking it over.")])
    async with (
        SQLiteStore(tmp_path / "c.db") as store,
        serving(app(Agent("s", model), store)) as base,
    ):
        page, problems = await open_page(browser, base)
        await send(page, "why?")
        await page.locator(".msg.assistant", has_text="The answer.").wait_for()
        for _ in range(2):  # from the store, then again from the list
            await page.locator("#sessions li").first.click()
            await page.locator(".msg.assistant", has_text="The answer.").wait_for()
            shown = page.locator("details.reasoning")
            await playwright.expect(shown).to_have_count(1)
            assert await shown.text_content() == "reasoningThinking it over."
        assert problems == []


@tool
def times(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


PROTOTYPE_IDS = ["constructor", "__proto__", "toString", "hasOwnProperty"]


async def test_tool_call_ids_named_like_object_properties(tmp_path: Path, browser: Any) -> None:
    """Provider ids are untrusted: calls with ids such as ``constructor`` or ``__proto__`` show
    their cards and results, the text after them shows, a paused one is approved with its button,
    and the session reads again from the store."""
    calls = [Call("add", {"a": n, "b": 1}, id=i) for n, i in enumerate(PROTOTYPE_IDS)]
    model = ScriptedTransport(
        [
            Reply("Adding four ways.", tool_calls=calls),
            Reply("All four are done."),
            Reply(tool_calls=[Call("times", {"a": 6, "b": 7}, id="valueOf")]),
            Reply("Six times seven is 42."),
        ]
    )
    agent = Agent("s", model, tools=[add, times], approval=["times"])
    async with SQLiteStore(tmp_path / "c.db") as store, serving(app(agent, store)) as base:
        page, problems = await open_page(browser, base)
        await send(page, "add")
        await page.locator(".msg.assistant", has_text="All four are done.").wait_for()
        await assert_cards(page, {i: str(n + 1) for n, i in enumerate(PROTOTYPE_IDS)})

        await send(page, "multiply")
        card = page.locator(".tool[data-call='valueOf']")
        await card.locator("button.approve").click()
        await page.locator(".msg.assistant", has_text="Six times seven is 42.").wait_for()
        assert await card.locator(".result").inner_text() == "42"
        assert problems == []

        shown = {i: str(n + 1) for n, i in enumerate(PROTOTYPE_IDS)} | {"valueOf": "42"}
        for reopen in (page.reload, page.locator("#sessions li").first.click):
            await reopen()  # from the store: a reload, then the session again from the list
            await page.locator(".msg.assistant", has_text="Six times seven is 42.").wait_for()
            await assert_cards(page, shown)
            assert await page.locator(".msg.assistant", has_text="All four are done.").count() == 1
        assert problems == []


async def assert_cards(page: Any, results: dict[str, str]) -> None:
    """One card per call id, each done with its result."""
    for call, result in results.items():
        card = page.locator(f".tool[data-call='{call}']")
        await playwright.expect(card).to_have_count(1)
        assert await card.locator(".result").inner_text() == result, call
        assert "done" in await card.get_attribute("class"), call

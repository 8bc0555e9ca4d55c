"""The chat page's sessions and layout: sessions listed by their first message with a date, not
their id; delete asks first (Cancel keeps the session, Delete removes it); at a phone's width the
sessions fold behind a button and nothing is wider than the screen; screenshots at desktop and
phone widths show the log and the input inside the viewport."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from chat_pages import colours, open_page, send

from served import serving
from tether import Agent, tool
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Call, Reply, ScriptedTransport

playwright = pytest.importorskip("playwright.async_api")
expect = playwright.expect

LONG = "Plan a three-day trip to Lisbon with museums, food markets and a day at the beach " * 2
PHONE = {"width": 375, "height": 740}
DESKTOP = {"width": 1280, "height": 800}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_sessions_are_titled_and_deleted_only_when_confirmed(
    tmp_path: Path, browser: Any
) -> None:
    model = ScriptedTransport([Reply("Sure."), Reply("Hello!")])
    async with (
        SQLiteStore(tmp_path / "c.db") as store,
        serving(app(Agent("s", model), store)) as base,
    ):
        page, problems = await open_page(browser, base)
        await send(page, LONG)
        await page.locator(".msg.assistant", has_text="Sure.").wait_for()
        await page.click("#new")
        await send(page, "  hi\n  there ")
        await page.locator(".msg.assistant", has_text="Hello!").wait_for()
        items = page.locator("#sessions li")
        await expect(items).to_have_count(2)
        names = await items.locator(".name").all_inner_texts()
        assert names[0] == "hi there"  # newest first, its whitespace made one line
        assert names[1] == LONG[:60].rstrip() + "…"
        ids = [s.session_id for s in await store.sessions()]
        listed = await items.all_inner_texts()
        assert not any(i in text for i in ids for text in listed)  # no 32-character ids
        meta = await items.first.locator(".meta").inner_text()
        assert re.search(r"\d{1,2}:\d{2}", meta), meta  # a time of day

        first = items.nth(1)
        await first.locator("button.delete").click()
        dialog = page.locator("dialog#confirm")
        await expect(dialog).to_be_visible()
        await expect(dialog).to_contain_text(LONG[:30])
        await dialog.locator("button.cancel").click()
        await expect(dialog).to_be_hidden()
        await expect(items).to_have_count(2)
        assert len(await store.sessions()) == 2

        await first.locator("button.delete").click()
        await page.keyboard.press("Escape")  # Escape cancels as well
        await expect(dialog).to_be_hidden()
        assert len(await store.sessions()) == 2

        await first.locator("button.delete").click()
        await dialog.locator("button.ok").click()
        await expect(items).to_have_count(1)
        assert await items.locator(".name").inner_text() == "hi there"
        assert len(await store.sessions()) == 1
        assert problems == []


async def test_phone_width_folds_the_sessions(tmp_path: Path, browser: Any) -> None:
    model = ScriptedTransport(
        [Reply("x" * 400 + " and `" + "y" * 300 + "`\n\n```\n" + "z" * 500 + "\n```")]
    )
    async with (
        SQLiteStore(tmp_path / "c.db") as store,
        serving(app(Agent("s", model), store)) as base,
    ):
        page, problems = await open_page(browser, base, viewport=PHONE)
        sessions = page.locator("#sessions")
        await expect(sessions).to_be_hidden()
        await send(page, "w" * 300)
        await page.locator(".msg.assistant pre").wait_for()
        assert await fits(page)
        await page.click("#menu")
        await expect(sessions).to_be_visible()
        assert await page.get_attribute("#menu", "aria-expanded") == "true"
        assert await fits(page)
        await page.mouse.click(360, 400)  # a tap beside the list folds it
        await expect(sessions).to_be_hidden()
        await page.click("#menu")
        await expect(sessions).to_be_visible()
        await page.locator("#sessions li").first.click()  # opening one folds the list again
        await expect(sessions).to_be_hidden()
        await page.click("#events")
        await expect(page.locator("#trace")).to_be_visible()
        assert await fits(page)
        assert problems == []


async def fits(page: Any) -> bool:
    """Nothing on the page is wider than the window (no sideways scrolling)."""
    wide: int = await page.evaluate("document.scrollingElement.scrollWidth")
    return wide <= await page.evaluate("innerWidth")


async def test_screenshots_at_desktop_and_phone_widths(tmp_path: Path, browser: Any) -> None:
    model = ScriptedTransport(
        [
            Reply("Adding.", tool_calls=[Call("add", {"a": 2, "b": 3})]),
            Reply("## The sum\n\nIt is **5**.\n\n```\n2 + 3 = 5\n```"),
        ]
    )
    agent = Agent("s", model, tools=[add])
    async with SQLiteStore(tmp_path / "c.db") as store, serving(app(agent, store)) as base:
        for name, size in (("desktop", DESKTOP), ("phone", PHONE)):
            page, problems = await open_page(browser, base, viewport=size)
            if name == "desktop":
                await send(page, "2 + 3?")
                await page.locator(".msg.assistant h2").wait_for()
            else:
                await page.locator("#sessions li").first.dispatch_event("click")
                await page.locator(".msg.assistant h2").wait_for()
            path = tmp_path / f"{name}.png"
            await page.screenshot(path=str(path))
            from PIL import Image

            with Image.open(path) as shot:
                assert shot.size == (size["width"], size["height"]), name
                png = path.read_bytes()
            assert len(colours(png)) > 20, f"the {name} screenshot looks blank"
            for part in ("#log", "#prompt", "#send"):
                box = await page.locator(part).bounding_box()
                assert box is not None, (name, part)
                assert box["x"] >= 0 and box["y"] >= 0, (name, part, box)
                assert box["x"] + box["width"] <= size["width"], (name, part, box)
                assert box["y"] + box["height"] <= size["height"], (name, part, box)
                assert box["width"] > 40 and box["height"] > 20, (name, part, box)
            assert await fits(page), name
            assert problems == []

"""The trace page in a real headless Chromium (Debian's, installed by scripts/test.sh): it loads
with no console error and nothing fetched, shows one bar per span on a drawn timeline, and
opening a call shows its arguments."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from recorded import SPANS, record

from tether.cli import main

playwright = pytest.importorskip("playwright.async_api")


async def test_the_page_draws_a_bar_per_call_and_opens_to_the_arguments(
    tmp_path: Path, browser: Any
) -> None:
    trace, html = tmp_path / "trace.jsonl", tmp_path / "trace.html"
    await record(trace)
    assert main(["trace", str(trace), "--html", str(html)]) == 0

    page = await browser.new_page(viewport={"width": 1200, "height": 800})
    problems: list[str] = []
    page.on(
        "console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("request", lambda r: problems.append(r.url) if not r.url.startswith("file:") else None)
    await page.goto(html.as_uri())

    bars = await page.query_selector_all(".bar")
    assert len(bars) == SPANS
    boxes = [await bar.bounding_box() for bar in bars]
    assert all(box is not None and box["width"] >= 1 and box["height"] >= 8 for box in boxes)
    tools = page.locator("details.row.tool", has_text="execute_tool weather")
    assert await tools.count() == 2
    first = tools.first
    assert not await first.locator(".detail").is_visible()
    await first.locator("summary").click()
    detail = first.locator(".detail")
    assert await detail.is_visible()
    assert "gen_ai.tool.call.arguments" in await detail.inner_text()
    assert "city" in await detail.inner_text()
    assert await page.locator("details.row.error").count() == 1  # the failing tool, in red

    shot = await page.locator("#timeline").screenshot()
    assert_drawn(shot)
    assert problems == []


def assert_drawn(png: bytes) -> None:
    """The timeline is not blank: its bars' colours are on the screenshot."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    colours = {colour for _, colour in image.getcolors(maxcolors=1 << 20) or []}
    for bar in ((63, 127, 217), (46, 158, 106), (217, 69, 63), (107, 122, 153)):
        assert bar in colours, f"no bar of colour {bar} was drawn"
    blank = image.getcolors(maxcolors=1 << 20)
    assert blank is not None and len(blank) > 20

"""The chat page renders the model's markdown (headings, emphasis, code, lists, tables, links) as
DOM nodes it builds itself: raw HTML in a reply shows as text and runs nothing, only http(s)
links are links, a code block's Copy button puts its code on the clipboard, and the renderer's
time grows linearly with what it is given (it never backtracks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from chat_pages import open_page, send

from served import serving
from tether import Agent
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Reply, ScriptedTransport

playwright = pytest.importorskip("playwright.async_api")

CODE = 'def greet(name):\n    return f"<b>{name}</b> & co"\n'
ANSWER = f"""# Plan

Some **bold**, some *leaning* text, `inline <code>` and a [safe link](https://example.org/a_b).
A [bad link](javascript:window.pwned=3) and [another](data:text/html,hi) stay text.
<img src=x onerror="window.pwned = 1"> and <script>window.pwned = 2</script> are text too.
A bare address, https://example.com/x_y?q=1. ends a sentence; javascript:alert(1) is text.

- first item
- second with **strong**
  - nested

1. one
2. two

```python
{CODE}```

| name | value |
|------|-------|
| a    | `1`   |

> quoted _words_ here
"""


async def test_markdown_is_rendered_as_nodes_and_raw_html_is_text(
    tmp_path: Path, browser: Any
) -> None:
    model = ScriptedTransport([Reply(ANSWER, chunks=7)])
    async with (
        SQLiteStore(tmp_path / "c.db") as store,
        serving(app(Agent("s", model), store)) as base,
    ):
        page, problems = await open_page(
            browser, base, permissions=["clipboard-read", "clipboard-write"]
        )
        await send(page, "show me")
        answer = page.locator(".msg.assistant").first
        await answer.locator("table").wait_for()
        for reading in ("the stream", "the store"):
            assert await answer.locator("h1").inner_text() == "Plan", reading
            assert await answer.locator("strong").first.inner_text() == "bold"
            assert await answer.locator("em").first.inner_text() == "leaning"
            assert await answer.locator("p code").first.inner_text() == "inline <code>"
            links = answer.locator("a")
            hrefs = [await a.get_attribute("href") for a in await links.all()]
            assert hrefs == ["https://example.org/a_b", "https://example.com/x_y?q=1"]
            assert await links.all_inner_texts() == ["safe link", "https://example.com/x_y?q=1"]
            assert "noopener" in (await links.first.get_attribute("rel") or "")
            text = await answer.inner_text()
            assert "[bad link](javascript:window.pwned=3)" in text
            assert "[another](data:text/html,hi)" in text
            assert '<img src=x onerror="window.pwned = 1">' in text
            assert "<script>window.pwned = 2</script>" in text
            assert await answer.locator("img, script, iframe").count() == 0
            assert await answer.locator("ul > li").count() == 3  # two items and the nested one
            assert await answer.locator("ul ul > li").inner_text() == "nested"
            assert await answer.locator("ol > li").count() == 2
            assert await answer.locator("pre code").inner_text() == CODE.rstrip("\n")
            assert await answer.locator("td").all_inner_texts() == ["a", "1"]
            assert await answer.locator("blockquote em").inner_text() == "words"
            assert await page.evaluate("window.pwned") is None
            await page.reload()
            await answer.locator("table").wait_for()

        await answer.locator(".code button.copy").click()
        await playwright.expect(answer.locator(".code button.copy")).to_have_text("Copied")
        assert await page.evaluate("navigator.clipboard.readText()") == CODE.rstrip("\n")
        assert problems == []


async def test_streamed_markdown_shows_as_it_arrives(tmp_path: Path, browser: Any) -> None:
    """The answer is rendered while it streams, and ends as the whole text."""
    model = ScriptedTransport(
        [Reply("Start `x`.\n\n```\nline one\nline two\n```\nAfter.", chunks=9)]
    )
    async with (
        SQLiteStore(tmp_path / "c.db") as store,
        serving(app(Agent("s", model), store)) as base,
    ):
        page, problems = await open_page(browser, base)
        await send(page, "go")
        answer = page.locator(".msg.assistant").first
        await answer.locator("p", has_text="After.").wait_for()
        assert await answer.locator("pre code").inner_text() == "line one\nline two"
        assert await answer.locator("p code").inner_text() == "x"
        assert problems == []


HOSTILE_INPUTS = [
    "[" * 60_000 + "](" * 30_000,
    "*a" * 60_000,
    "**a " * 30_000 + "_" * 60_000,
    "`" * 40_000 + "``x" * 20_000,
    "> " * 30_000 + "x",
    "".join(" " * n + "- item\n" for n in range(0, 3000, 2)),
    "[x](https://" * 20_000,
    "| a |\n|---|\n" + "| b " * 30_000 + "\n",
    "https://a" + "." * 120_000,
]


async def test_the_renderer_takes_linear_time(tmp_path: Path, browser: Any) -> None:
    """Texts built to make a backtracking parser take quadratic (or worse) time render in well
    under a second each, at 120,000 characters and more: each delimiter is looked for once."""
    model = ScriptedTransport([])
    async with (
        SQLiteStore(tmp_path / "c.db") as store,
        serving(app(Agent("s", model), store)) as base,
    ):
        page, problems = await open_page(browser, base)
        timing = r"""(text) => {
            const started = performance.now();
            const shown = markdown(text);
            return [performance.now() - started, shown.textContent.replace(/\s/g, "").length];
        }"""
        for text in HOSTILE_INPUTS:
            took, shown = await page.evaluate(timing, text)
            assert took < 1500, (text[:30], took)
            assert shown >= len("".join(text.split())) // 3  # the text is there, not dropped
        assert problems == []

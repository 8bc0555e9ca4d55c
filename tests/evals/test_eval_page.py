"""The report's page in a real headless Chromium: it loads with no error and fetches nothing,
shows a row per case coloured by its result, hides passed cases on request, opens a case onto
its answers and checks, and runs nothing an answer says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import weather_agent

from tether.evals import Case, Dataset, ToolCalls, evaluate

pytest.importorskip("playwright.async_api")

HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=1</script>'


async def test_the_page_shows_each_case_and_opens_onto_its_checks(
    tmp_path: Path, browser: Any
) -> None:
    data = Dataset(
        [
            Case("Weather in Oslo?", name="oslo", evaluators=[ToolCalls(["get_weather"])]),
            Case("What is 2+2?", name="wrong", expected="5"),
            Case(f"Weather in {HOSTILE}?", name="hostile"),
        ]
    )
    report = await evaluate(weather_agent(), data, progress=False)
    path = tmp_path / "report.html"
    report.save(path)

    page = await browser.new_page(viewport={"width": 1200, "height": 900})
    problems: list[str] = []
    page.on(
        "console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("request", lambda r: problems.append(r.url) if not r.url.startswith("file:") else None)
    await page.goto(path.as_uri())

    summary = page.locator("#summary")
    assert await summary.get_attribute("data-passed") == "2"
    assert "2 of 3 cases passed" in await summary.inner_text()
    rows = page.locator("tr.case")
    assert await rows.count() == 3
    wrong = page.locator("tr.case[data-case='wrong']")
    colour = await wrong.locator("td").nth(1).evaluate("e => getComputedStyle(e).color")
    assert colour == "rgb(207, 34, 46)"  # red: failed

    detail = page.locator("#case-1")
    assert not await detail.locator("pre").first.is_visible()
    await detail.locator("summary").click()
    text = await detail.inner_text()
    assert "expected '5', got '4'" in text and "equals" in text

    assert await page.evaluate("window.pwned === undefined")
    hostile = page.locator("#case-2")
    await hostile.locator("summary").click()
    assert HOSTILE in await hostile.locator("pre").first.inner_text()

    await page.locator("#only-failed").check()
    assert not await page.locator("tr.case[data-case='oslo']").is_visible()
    assert await wrong.is_visible()
    assert await page.evaluate("window.pwned === undefined")
    assert problems == []

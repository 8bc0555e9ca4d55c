"""A front end on another origin, as a browser runs it: a page served from one port runs the
agent of ``tether serve`` on another port with ``fetch`` (headless Chromium). Allowed by
``allow_origins`` it reads the run's events; not allowed, the browser blocks it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from served import ask, serving
from tether import Agent
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Reply, ScriptedTransport

playwright = pytest.importorskip("playwright.async_api")

PAGE = """<!doctype html><html><body><pre id="out">waiting</pre><script>
fetch(TETHER + "/agui", {method: "POST", headers: {"content-type": "application/json"},
                         body: JSON.stringify(BODY)})
  .then(async (r) => { out.textContent = r.status + " " + (await r.text()); })
  .catch((e) => { out.textContent = "blocked: " + e.name; });
</script></body></html>"""


def front_end(where: dict[str, str]) -> Any:
    """A Starlette app serving a page that runs the agent at ``where["tether"]``."""
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    async def page(_: Any) -> HTMLResponse:
        script = (
            f"const TETHER = {json.dumps(where['tether'])}; const BODY = {json.dumps(ask('hi'))};"
        )
        return HTMLResponse(PAGE.replace("<script>", "<script>" + script, 1))

    return Starlette(routes=[Route("/", page)])


async def _shown(browser: Any, tmp_path: Path, allowed: bool) -> str:
    where: dict[str, str] = {}
    async with serving(front_end(where)) as front:
        agent = Agent("s", ScriptedTransport([], then=Reply("hello from tether")))
        origins = [front] if allowed else []
        served = app(agent, SQLiteStore(tmp_path / "c.db"), allow_origins=origins)
        async with serving(served) as tether:
            where["tether"] = tether
            context = await browser.new_context()
            page = await context.new_page()
            await page.goto(front + "/")
            await page.wait_for_function("document.getElementById('out').textContent !== 'waiting'")
            shown: str = await page.text_content("#out") or ""
            await context.close()
            return shown


async def test_an_allowed_front_end_runs_the_agent_from_the_browser(
    tmp_path: Path, browser: Any
) -> None:
    shown = await _shown(browser, tmp_path, allowed=True)
    assert shown.startswith("200 ") and "hello from tether" in shown and "RUN_FINISHED" in shown


async def test_a_front_end_not_allowed_is_blocked_by_the_browser(
    tmp_path: Path, browser: Any
) -> None:
    assert await _shown(browser, tmp_path, allowed=False) == "blocked: TypeError"

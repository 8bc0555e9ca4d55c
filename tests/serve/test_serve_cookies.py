"""The token cookie is found among whatever else a browser sends: cookies are shared by every
port of a host, so another app on localhost may have set cookies whose values hold spaces,
quotes, backslashes or JSON, or one with the token cookie's own name. The server reads the
``Cookie`` header as browsers write it (``name=value`` pairs split at ``;``), admits a request
whose token cookie holds the token, and nothing else (over real HTTP: uvicorn, httpx; and in
headless Chromium after a login link)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from served import client, serving
from tether import Agent
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Reply, ScriptedTransport

TOKEN = "a-token-of-enough-length-0123456789"

# what other apps on localhost leave in a browser, as the browser sends them back
NEIGHBOURS = [
    'prefs={"theme":"dark","langs":["en","fr"],"n":1}',
    "greeting=hello there world",
    'half="unbalanced',
    r"folder=C:\Users\someone\new",
    r'escaped="a\"b"',
    'wrapped="quoted value"',
    "equals=a=b==c",
    "justavalue",
    "=nameless",
    "empty=",
    "$Version=1",
    "tether_token_old=stale",
    "TETHER_TOKEN=other-case",
    "café=crème",
    "[brackets]=(parens),{braces}",
    "semi=a,b,c",
]


@pytest.fixture
async def base(tmp_path: Path) -> Any:
    agent = Agent("s", ScriptedTransport([], then=Reply("hello")))
    async with SQLiteStore(tmp_path / "c.db") as store, serving(app(agent, store, TOKEN)) as url:
        yield url


async def status_with(base: str, *cookies: str) -> int:
    """The status of a read sent with ``cookies`` as one Cookie header (as browsers join them)."""
    header = "; ".join(cookies).encode("utf-8")
    async with client(base) as http:
        answer = await http.get("/api/sessions", headers=[(b"cookie", header)])
    return answer.status_code


async def test_the_token_is_found_among_hostile_neighbours(base: str) -> None:
    mine = f"tether_token={TOKEN}"
    for n in range(len(NEIGHBOURS)):
        before, after = NEIGHBOURS[:n], NEIGHBOURS[n:]
        assert await status_with(base, *before, mine, *after) == 200, (before, after)
    for neighbour in NEIGHBOURS:
        assert await status_with(base, neighbour, mine) == 200, neighbour
        assert await status_with(base, mine, neighbour) == 200, neighbour
        assert await status_with(base, neighbour) == 401, neighbour
    assert await status_with(base, *NEIGHBOURS) == 401


async def test_browser_spacing_and_quoting_of_the_token_cookie(base: str) -> None:
    for mine in (
        f"tether_token={TOKEN}",
        f" tether_token={TOKEN} ",
        f'tether_token="{TOKEN}"',
    ):
        assert await status_with(base, "a=b", mine, "c=d") == 200, mine
    for wrong in (
        f"tether_token={TOKEN[:-1]}",
        f"tether_token={TOKEN}x",
        f"tether_token=x{TOKEN}",
        f'tether_token="{TOKEN}',
        f"tether_token={TOKEN[:-1]}\\{TOKEN[-1]}",
        f"tether_token = {TOKEN.upper()}",
        f"Tether_Token={TOKEN}",
        f"tether_token{TOKEN}",
        f"x=tether_token={TOKEN}",
        f'prefs={{"tether_token":"{TOKEN}"}}',
        "tether_token=",
        "tether_token",
    ):
        assert await status_with(base, "a=b", wrong, "c=d") == 401, wrong


async def test_a_same_named_neighbour_cookie_neither_locks_out_nor_lets_in(base: str) -> None:
    """Another app can set its own ``tether_token`` (a longer path is sent first, an older one
    too): the request is admitted when one of them holds the token, whatever their order, and
    refused when none does; a quoted value cannot carry a second one past the check."""
    mine = f"tether_token={TOKEN}"
    theirs = ["tether_token=guess", 'tether_token="x; y"', "tether_token={}", "tether_token= x"]
    for order in itertools.permutations([mine, *theirs[:2]]):
        assert await status_with(base, *order) == 200, order
    assert await status_with(base, *theirs) == 401
    smuggled = f'prefs="a; tether_token={TOKEN[:-1]}y"'
    assert await status_with(base, smuggled) == 401


async def test_cookies_in_several_headers_are_all_read(base: str) -> None:
    """HTTP/2 lets a client split cookies over several headers (a proxy may pass them on)."""
    async with client(base) as http:
        split = [(b"cookie", b'prefs={"a":1}'), (b"cookie", f"tether_token={TOKEN}".encode())]
        assert (await http.get("/api/sessions", headers=split)).status_code == 200
        split.reverse()
        assert (await http.get("/api/sessions", headers=split)).status_code == 200


async def test_a_browser_with_hostile_neighbour_cookies_stays_logged_in(
    tmp_path: Path, browser: Any
) -> None:
    """Headless Chromium: another app on the same host (another port) has set its cookies, each
    kind a browser keeps, before the user logs in with the link (so the browser sends them
    first); the page and its API calls work, and a run streams."""
    agent = Agent("s", ScriptedTransport([], then=Reply("still here")), name="guarded")
    async with (
        SQLiteStore(tmp_path / "c.db") as store,
        serving(served := app(agent, store, TOKEN)) as url,
    ):
        context = await browser.new_context()
        host = url.rsplit(":", 1)[0]
        neighbours = [
            ("prefs", '{"theme":"dark","langs":["en","fr"]}'),
            ("greeting", "hello there world"),
            ("half", '"unbalanced'),
            ("folder", r"C:\Users\someone"),
            ("escaped", r'"a\"b"'),
        ]
        await context.add_cookies(
            [{"name": n, "value": v, "url": host + ":1/"} for n, v in neighbours]
        )
        page = await context.new_page()
        problems: list[str] = []
        page.on("pageerror", lambda e: problems.append(str(e)))
        await page.goto(url + "/login?code=" + served.login_code())
        await page.wait_for_selector("#agent:not(:empty)")
        sent = [c["name"] for c in await context.cookies(url)]
        assert {n for n, _ in neighbours} < set(sent)  # the browser sends them to this port
        assert await page.inner_text("#agent") == "guarded"
        await page.fill("#prompt", "are you there?")
        await page.click("#send")
        await page.locator(".msg.assistant", has_text="still here").wait_for()
        assert problems == []
        await context.close()

"""What the chat page's tests share: a page opened on a served app with its problems collected
(console errors, page errors, requests that leave the server), typing a message, a middleware
that adds AG-UI events to a run's stream when a test asks, and a screenshot's colour check."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

VIEWPORT = {"width": 1100, "height": 800}


async def open_page(
    browser: Any, base: str, *, viewport: dict[str, int] | None = None, **context: Any
) -> tuple[Any, list[str]]:
    """A page at ``base`` in a context of its own and the list that collects its problems (the
    page must need nothing outside the server, and log no error)."""
    made = await browser.new_context(viewport=viewport or VIEWPORT, **context)
    page = await made.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("dialog", lambda d: problems.append(f"dialog: {d.message}"))
    page.on("request", lambda r: None if r.url.startswith(base) else problems.append(r.url))
    await page.goto(base + "/")
    await page.wait_for_selector("#agent:not(:empty)")
    return page, problems


async def send(page: Any, text: str) -> None:
    await page.fill("#prompt", text)
    await page.click("#send")


def colours(png: bytes) -> set[tuple[int, int, int]]:
    """The distinct colours of a screenshot."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    return {colour for _, colour in image.getcolors(maxcolors=1 << 22) or []}


class Injected:
    """An ASGI middleware that adds the AG-UI events a test puts in ``events`` to the stream of
    the run under way (after its first chunk), as a server that sends them would."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/agui":
            await self.app(scope, receive, send)
            return
        streaming = asyncio.Event()

        async def sending(message: dict[str, Any]) -> None:
            await send(message)
            if message["type"] == "http.response.body" and message.get("more_body"):
                streaming.set()

        async def inject() -> None:
            await streaming.wait()
            while True:
                event = await self.events.get()
                body = b"data: " + json.dumps(event).encode() + b"\n\n"
                await send({"type": "http.response.body", "body": body, "more_body": True})

        adding = asyncio.create_task(inject())
        try:
            await self.app(scope, receive, sending)
        finally:
            adding.cancel()

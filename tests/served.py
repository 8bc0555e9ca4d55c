"""A real uvicorn server on 127.0.0.1 (a free port) in the test's own event loop, and a reader of
its Server-Sent Events through a real HTTP client (httpx)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import uvicorn
from ag_ui.core import Event
from pydantic import TypeAdapter

from tether.cli.serving import listen

EVENT = TypeAdapter(Event)


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """Serve ``app`` until the block ends (its lifespan's shutdown included); the base URL."""
    listening = listen("127.0.0.1", 0)  # as tether serve listens (TCP_NODELAY)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[listening]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{listening.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)
        listening.close()


def client(base: str, **kw: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=base, timeout=30, **kw)


def ask(text: str, thread: str | None = None, **more: Any) -> dict[str, Any]:
    """An AG-UI RunAgentInput with the user's ``text``."""
    body: dict[str, Any] = {"messages": [{"id": "u1", "role": "user", "content": text}], **more}
    if thread is not None:
        body["threadId"] = thread
    return body


def decide(thread: str, call: str, approved: bool, reason: str = "") -> dict[str, Any]:
    payload: dict[str, Any] = {"approved": approved}
    if reason:
        payload["reason"] = reason
    entry = {"interruptId": call, "status": "resolved", "payload": payload}
    return {"threadId": thread, "messages": [], "resume": [entry]}


async def events_of(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The events of an SSE response, each checked against the AG-UI event types."""
    assert response.status_code == 200, await response.aread()
    assert response.headers["content-type"].startswith("text/event-stream")
    data: list[str] = []
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            event = json.loads("\n".join(data))
            EVENT.validate_python(event)  # a shape AG-UI clients read
            data.clear()
            yield event


async def run(http: httpx.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    """POST ``body`` to /agui and read the whole stream."""
    async with http.stream("POST", "/agui", json=body) as response:
        return [event async for event in events_of(response)]


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]

"""The A2A routes of a served agent, on the SDK's dispatchers: the card at the well-known path,
JSON-RPC at ``/a2a``, HTTP+JSON under it. Each request body is read within the server's cap
first (413 past it), so a huge body never reaches the SDK's parser."""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ...agent import Agent
from ...stores.base import SessionStore
from ...tools.selector import read_tools
from ...tools.tool import Tool
from ..access import ASGIApp, Receive, Scope, Send
from ..runs import Runs
from .card import CARD_PATHS, PATH, agent_card
from .executor import RunExecutor
from .handler import Handler
from .records import TaskRecords

__all__ = ["A2ARoutes", "a2a_routes"]


@dataclass(slots=True)
class A2ARoutes:
    """The A2A routes, and the handler to close when the server stops."""

    routes: list[BaseRoute]
    handler: Handler

    async def aclose(self) -> None:
        await self.handler.aclose()


def a2a_routes(
    agent: Agent,
    store: SessionStore,
    runs: Runs,
    *,
    secured: bool,
    max_body: int,
    url: str | None = None,
) -> A2ARoutes:
    """The A2A routes serving ``agent``; the card names the Bearer scheme when ``secured``, and
    its interfaces at ``url`` (else the URL each request came in by)."""
    card = Card(agent, secured, url)
    executor = RunExecutor(agent, store, runs, TaskRecords(store))
    handler = Handler(executor, agent_card(agent.name, card.about, [], "http://localhost", secured))
    served = [
        *create_jsonrpc_routes(handler, PATH),
        *(r for r in create_rest_routes(handler, path_prefix=PATH) if isinstance(r, Route)),
    ]
    routes: list[BaseRoute] = [Route(path, card.get, methods=["GET"]) for path in CARD_PATHS]
    for route in served:
        assert isinstance(route, Route)
        routes.append(Route(route.path, Capped(route.app, max_body), methods=route.methods))
    return A2ARoutes(routes, handler)


@dataclass(slots=True)
class Card:
    """The card endpoint: the tools read once, the URL from each request (or ``url``)."""

    agent: Agent
    secured: bool
    url: str | None
    tools: list[Tool] | None = None

    @property
    def about(self) -> str:
        return f"The tether agent {self.agent.name!r}, served over A2A."

    async def get(self, request: Request) -> Response:
        if self.tools is None:
            self.tools = list(await read_tools(self.agent.tools))
        base = self.url or str(request.base_url)
        card = agent_card(self.agent.name, self.about, self.tools, base, self.secured)
        return JSONResponse(agent_card_to_dict(card), headers={"cache-control": "no-cache"})


class Capped:
    """An ASGI app that reads the request body (at most ``limit`` bytes, else 413) before
    ``app`` sees it."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers", []))
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await _too_large(scope, receive, send, self.limit)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit:
                await _too_large(scope, receive, send, self.limit)
                return
            more = message.get("more_body", False)
        body = b"".join(chunks)
        await self.app(scope, _replay(body, receive), send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then waits on the real one (a disconnect)."""
    given = False

    async def again() -> MutableMapping[str, Any]:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


async def _too_large(scope: Scope, receive: Receive, send: Send, limit: int) -> None:
    answer = JSONResponse({"error": f"the body is over {limit} bytes"}, status_code=413)
    await answer(scope, receive, send)

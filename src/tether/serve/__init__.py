"""``tether serve``: an agent behind HTTP, for a web front end or the chat page at ``/``.

``app(agent, store=None, token=None)`` is an ASGI application (Starlette; the ``serve`` extra):
runs stream as Server-Sent Events in the AG-UI event vocabulary (``POST /agui`` takes an AG-UI
``RunAgentInput``), sessions live in ``store`` (default: the CLI's SQLite file), and a person can
chat, watch tool calls, approve or deny paused calls and stop a run from the page at ``/``.

Without ``token`` the app answers only requests addressed to a loopback host (bind it to
127.0.0.1); with one, every request carries it (``Authorization: Bearer``, or the cookie a
one-time link from ``login_code()`` sets). A client that disconnects cancels nothing unless its
``RunAgentInput`` asks for that (``forwardedProps.cancelOnDisconnect``): the run finishes and is
stored, and the session can be read again, or the run attached to again while it goes on
(``GET /agui/{threadId}/events`` with ``Last-Event-ID``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ..agent import Agent
from ..stores.base import SessionStore
from .access import Access, Guard, Receive, Scope, Send
from .agui import PROTOCOL_VERSION
from .runs import Runs
from .shared_state import shared_state
from .wire import Refused, ServeLimits

__all__ = ["PROTOCOL_VERSION", "ServeLimits", "ServerApp", "app", "shared_state"]


class ServerApp:
    """The ASGI application ``app`` returns; ``login_code()`` makes one-time login links."""

    def __init__(self, guard: Guard, runs: Runs) -> None:
        self._guard = guard
        self.runs = runs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._guard(scope, receive, send)

    @property
    def needs_token(self) -> bool:
        return self._guard.access.token is not None

    def stop_soon(self) -> None:
        """Stop the runs under way and end their streams, before a server shuts down (call it
        in the event loop's thread)."""
        self.runs.stop_soon()

    def login_code(self) -> str:
        """A code for one login: ``/login?code=<code>`` sets the token's cookie, once."""
        return self._guard.access.login_code()


def app(
    agent: Agent,
    store: SessionStore | None = None,
    token: str | None = None,
    *,
    limits: ServeLimits | None = None,
    allow_origins: Sequence[str] = (),
) -> ServerApp:
    """An ASGI application serving ``agent``: its sessions in ``store`` (default: the CLI's
    SQLite file, opened and closed with the app), the chat page at ``/``, runs as AG-UI events.
    ``token`` (16 characters or more) is required of every request when given.
    ``allow_origins`` (``http://localhost:3000``) are the other origins whose pages may use
    it: their browsers' preflights are answered (the token rule stays as it is)."""
    from starlette.applications import Starlette  # noqa: PLC0415 - the serve extra
    from starlette.routing import Route  # noqa: PLC0415

    from .routes import Server, refused  # noqa: PLC0415 - imports Starlette too

    access = Access(token, allow_origins)
    owned = store is None
    if store is None:
        store = _default_store()
    runs = Runs(agent.transport)  # its phases (a model starting) stream as steps
    server = Server(agent, store, limits or ServeLimits(), runs)

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await runs.stop_all()
            if owned:
                await store.aclose()  # type: ignore[attr-defined]

    routes = [
        Route("/", server.page, methods=["GET"]),
        Route("/api/agent", server.about, methods=["GET"]),
        Route("/api/sessions", server.sessions, methods=["GET"]),
        Route("/api/sessions/{session:str}", server.session, methods=["GET"]),
        Route("/api/sessions/{session:str}", server.delete, methods=["DELETE"]),
        Route("/api/sessions/{session:str}/cancel", server.cancel, methods=["POST"]),
        Route("/agui", server.run, methods=["POST"]),
        Route("/agui/{session:str}/events", server.attach, methods=["GET"]),
    ]
    starlette = Starlette(routes=routes, lifespan=lifespan, exception_handlers={Refused: refused})
    return ServerApp(Guard(starlette, access), runs)


def _default_store() -> SessionStore:
    from ..stores.home import chats_path  # noqa: PLC0415
    from ..stores.sqlite import SQLiteStore  # noqa: PLC0415

    path = chats_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    return SQLiteStore(path)

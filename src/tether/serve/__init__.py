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

``a2a_app(agent, store=None, token=None)`` serves the agent over A2A 1.0 instead (the ``a2a``
extra): its card at ``/.well-known/agent-card.json`` (public, as A2A clients read it before they
authenticate), JSON-RPC at ``/a2a`` and HTTP+JSON under it, each task a run in the session its
``contextId`` names; ``app(..., a2a=True)`` serves both from one server (``tether serve --a2a``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..agent import Agent
from ..stores.base import SessionStore
from .access import Access, Guard, Receive, Scope, Send
from .agui import PROTOCOL_VERSION
from .runs import Runs
from .shared_state import shared_state
from .wire import Refused, ServeLimits

if TYPE_CHECKING:
    from .a2a.app import A2ARoutes

__all__ = ["PROTOCOL_VERSION", "ServeLimits", "ServerApp", "a2a_app", "app", "shared_state"]


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
    a2a: bool = False,
) -> ServerApp:
    """An ASGI application serving ``agent``: its sessions in ``store`` (default: the CLI's
    SQLite file, opened and closed with the app), the chat page at ``/``, runs as AG-UI events.
    ``token`` (16 characters or more) is required of every request when given.
    ``allow_origins`` (``http://localhost:3000``) are the other origins whose pages may use
    it: their browsers' preflights are answered (the token rule stays as it is). ``a2a``
    serves A2A beside (as ``a2a_app`` does), on the same sessions and runs."""
    from starlette.applications import Starlette  # noqa: PLC0415 - the serve extra
    from starlette.routing import Route  # noqa: PLC0415

    from .routes import Server, refused  # noqa: PLC0415 - imports Starlette too

    access = Access(token, allow_origins)
    owned = store is None
    if store is None:
        store = _default_store()
    runs = Runs(agent.transport)  # its phases (a model starting) stream as steps
    server = Server(agent, store, limits or ServeLimits(), runs)
    served = _a2a(agent, store, runs, access, server.limits) if a2a else None
    lifespan = _lifespan(runs, served, store if owned else None)
    routes = [
        Route("/", server.page, methods=["GET"]),
        Route("/api/agent", server.about, methods=["GET"]),
        Route("/api/sessions", server.sessions, methods=["GET"]),
        Route("/api/sessions/{session:str}", server.session, methods=["GET"]),
        Route("/api/sessions/{session:str}", server.delete, methods=["DELETE"]),
        Route("/api/sessions/{session:str}/cancel", server.cancel, methods=["POST"]),
        Route("/agui", server.run, methods=["POST"]),
        Route("/agui/{session:str}/events", server.attach, methods=["GET"]),
        *(served.routes if served is not None else ()),
    ]
    starlette = Starlette(routes=routes, lifespan=lifespan, exception_handlers={Refused: refused})
    return ServerApp(Guard(starlette, access, public=_public(served)), runs)


def a2a_app(
    agent: Agent,
    store: SessionStore | None = None,
    token: str | None = None,
    *,
    limits: ServeLimits | None = None,
    url: str | None = None,
) -> ServerApp:
    """An ASGI application serving ``agent`` over A2A 1.0: the agent card, JSON-RPC at
    ``/a2a`` and HTTP+JSON under it, tasks kept in ``store`` (default: the CLI's SQLite file).
    ``token`` is required of every request but the card's when given. ``url`` is where
    clients reach the server (the card's interfaces), when not the URL a request came by."""
    from starlette.applications import Starlette  # noqa: PLC0415 - the serve extra

    access = Access(token)
    owned = store is None
    if store is None:
        store = _default_store()
    runs = Runs(agent.transport)
    served = _a2a(agent, store, runs, access, limits or ServeLimits(), url)
    lifespan = _lifespan(runs, served, store if owned else None)
    starlette = Starlette(routes=served.routes, lifespan=lifespan)
    return ServerApp(Guard(starlette, access, public=_public(served)), runs)


def _lifespan(
    runs: Runs, served: A2ARoutes | None, owned: SessionStore | None
) -> Callable[[Any], contextlib.AbstractAsyncContextManager[None]]:
    """The app's lifespan: at its end the runs under way are stopped (each stores what it has),
    then A2A's handler, and the store the app opened itself (``owned``) closed."""

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await runs.stop_all()
            if served is not None:
                await served.aclose()
            if owned is not None:
                await owned.aclose()  # type: ignore[attr-defined]

    return lifespan


def _a2a(
    agent: Agent,
    store: SessionStore,
    runs: Runs,
    access: Access,
    limits: ServeLimits,
    url: str | None = None,
) -> A2ARoutes:
    from .a2a.app import a2a_routes  # noqa: PLC0415 - the a2a extra

    secured = access.token is not None
    return a2a_routes(agent, store, runs, secured=secured, max_body=limits.max_body, url=url)


def _public(served: A2ARoutes | None) -> frozenset[str]:
    """What anyone may read without the token: the A2A card, when A2A is served."""
    if served is None:
        return frozenset()
    from .a2a.card import CARD_PATHS  # noqa: PLC0415

    return frozenset(CARD_PATHS)


def _default_store() -> SessionStore:
    from ..stores.home import chats_path  # noqa: PLC0415
    from ..stores.sqlite import SQLiteStore  # noqa: PLC0415

    path = chats_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    return SQLiteStore(path)

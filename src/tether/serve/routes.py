"""The server's endpoints: the chat page, the sessions of the store, and runs streamed as AG-UI
Server-Sent Events.

``POST /agui`` takes an AG-UI ``RunAgentInput``: ``threadId`` is the session (a new one when
absent), the last of ``messages`` the user's new message, or ``resume`` entries the decisions on
calls waiting for approval (``interruptId`` a call's id; ``status: "resolved"`` with ``payload:
{"approved": true}`` runs it, anything else denies it). ``GET /api/sessions`` lists sessions,
``GET /api/sessions/{id}`` reads one (AG-UI messages and the calls waiting), ``DELETE`` removes
it, ``POST /api/sessions/{id}/cancel`` stops its run.

A session is listed with a title, its first user message: read once per session and kept (a
store lists sessions without their messages), at most ``TITLES_PER_LIST`` histories a listing.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..agent import Agent
from ..context import ContextStore, new_session_id
from ..jsonforms import pending_to_dict
from ..loop import AgentStream, CancellationToken, pending
from ..messages import Message
from ..stores.base import SessionInfo, SessionStore, check_session_id
from ..tools.selector import read_tools
from .a2a import RECORDS
from .history import agui_messages, title_of
from .page import page_response
from .runs import Busy, LiveRun, Runs, stream_of
from .wire import Refused, RunAsked, ServeLimits, json_body, run_input

__all__ = ["TITLES_PER_LIST", "Server"]

TITLES_PER_LIST = 50  # histories one listing reads for titles not known yet (newest first)

_SSE_HEADERS = {"cache-control": "no-store", "x-accel-buffering": "no"}


@dataclass(slots=True)
class Server:
    """What the endpoints share: the agent, the store, the runs under way and the limits."""

    agent: Agent
    store: SessionStore
    limits: ServeLimits
    runs: Runs
    titles: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    """Each session's title, and its message count when it was read (untitled ones are read
    again once they have more messages)."""

    async def page(self, request: Request) -> Response:
        return page_response()

    async def about(self, request: Request) -> Response:
        tools = sorted(tool.name for tool in await read_tools(self.agent.tools))
        return JSONResponse({"agent": self.agent.name, "tools": tools})

    async def sessions(self, request: Request) -> Response:
        found = sorted(await self.store.sessions(), key=lambda s: s.updated, reverse=True)
        found = [info for info in found if not info.session_id.startswith(RECORDS)]
        await self._read_titles(found)
        return JSONResponse(
            [
                {
                    "id": info.session_id,
                    "title": self.titles.get(info.session_id, (0, None))[1],
                    "messages": info.messages,
                    "created": info.created,
                    "updated": info.updated,
                    "running": self.runs.get(info.session_id) is not None,
                }
                for info in found
            ]
        )

    async def _read_titles(self, found: list[SessionInfo]) -> None:
        """Read the titles ``found`` sessions lack (the newest ``TITLES_PER_LIST`` of them), and
        forget those of sessions no longer stored."""
        listed = {info.session_id for info in found}
        for gone in self.titles.keys() - listed:
            del self.titles[gone]
        unread = [info for info in found if self._untitled(info)][:TITLES_PER_LIST]
        for info in unread:
            title = title_of(await self.store.history_of(info.session_id))
            self.titles[info.session_id] = (info.messages, title)

    def _untitled(self, info: SessionInfo) -> bool:
        count, title = self.titles.get(info.session_id, (-1, None))
        return title is None and count != info.messages

    async def session(self, request: Request) -> Response:
        session_id = _checked(request.path_params["session"])
        history = await self.store.history_of(session_id)  # reading makes no session
        limit = self.limits.max_shown
        first = max(0, len(history) - limit)
        waiting = [pending_to_dict(c) for c in pending(history)]
        return JSONResponse(
            {
                "id": session_id,
                "messages": agui_messages(history[first:], first),
                "total": len(history),
                "pending": waiting,
                "running": self.runs.get(session_id) is not None,
            }
        )

    async def delete(self, request: Request) -> Response:
        session_id = _checked(request.path_params["session"])
        if self.runs.get(session_id) is not None:
            raise Refused(409, "the session has a run under way: stop it first")
        self.titles.pop(session_id, None)
        if not await self.store.delete(session_id):
            raise Refused(404, f"no session {session_id!r}")
        return Response(status_code=204)

    async def cancel(self, request: Request) -> Response:
        live = self.runs.get(request.path_params["session"])
        if live is None:
            raise Refused(404, "the session has no run under way")
        live.cancel.cancel()
        return JSONResponse({"runId": live.run_id, "cancelled": True}, status_code=202)

    async def run(self, request: Request) -> Response:
        asked = run_input(await json_body(request, self.limits), self.limits)
        thread = asked.thread_id or new_session_id()
        try:
            live = self.runs.reserve(thread, asked.run_id or secrets.token_hex(8))
        except Busy as exc:
            raise Refused(409, str(exc)) from None
        try:
            await self._check(_checked(thread), asked)
            context = await self.store.open(thread)
        except BaseException:
            self.runs.release(live)
            raise
        queue = live.listen()
        self.runs.start(live, lambda token: self._begin(context, asked, token))
        body = _events(live, queue, asked.cancel_on_disconnect)
        return StreamingResponse(body, media_type="text/event-stream", headers=_SSE_HEADERS)

    async def _check(self, session_id: str, asked: RunAsked) -> None:
        """Refuse what the engine would not take, before anything is stored (opening a session
        creates it): a new message while calls wait for a decision, a decision on a call that
        does not wait (on a new thread, none does)."""
        calls = pending(await self._view(session_id))
        waiting = {call.id for call in calls}
        if asked.message is not None and waiting:
            names = ", ".join(sorted(waiting))
            raise Refused(409, f"calls wait for approval ({names}): approve or deny them first")
        decided = set(asked.approve) | set(asked.deny) | set(asked.answers)
        if asked.message is None and not decided <= waiting:
            unknown = ", ".join(sorted(decided - waiting))
            raise Refused(409, f"no call waiting for approval has the id {unknown}")
        asking = {call.id for call in calls if call.asks}
        if asking & (set(asked.approve) | set(asked.deny)) or set(asked.answers) - asking:
            raise Refused(
                409,
                "a call that waits for the user's input takes answers (payload.answers), "
                "and only such a call does",
            )

    async def _view(self, session_id: str) -> list[Message]:
        """The session's messages from where the model's view begins, read without creating
        the session (``context_of`` where the store keeps where the view begins)."""
        reader = getattr(self.store, "context_of", None)
        found: list[Message] = await (reader or self.store.history_of)(session_id)
        return found

    def _begin(
        self, context: ContextStore, asked: RunAsked, token: CancellationToken
    ) -> AgentStream:
        if asked.message is not None:
            return self.agent.run_stream(asked.message, context, cancel=token)
        return self.agent.resume_stream(
            context, asked.approve, asked.deny, answers=asked.answers or None, cancel=token
        )


def _checked(session_id: str) -> str:
    try:
        return check_session_id(session_id)
    except ValueError as exc:
        raise Refused(400, str(exc)) from None


async def _events(
    live: LiveRun, queue: asyncio.Queue[bytes], cancel_on_leave: bool
) -> AsyncIterator[bytes]:
    """The run's events for one client; one that leaves early cancels the run only if it asked
    to (``forwardedProps.cancelOnDisconnect``)."""
    finished = False
    try:
        async for chunk in stream_of(live, queue):
            yield chunk
        finished = True
    finally:
        if cancel_on_leave and not finished:
            live.cancel.cancel()


def refused(request: Request, exc: Exception) -> Response:
    """A ``Refused`` as its JSON answer."""
    assert isinstance(exc, Refused)
    return JSONResponse({"error": exc.message}, status_code=exc.status)

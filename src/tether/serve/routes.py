"""The server's endpoints: the chat page, the sessions of the store, and runs streamed as AG-UI
Server-Sent Events.

``POST /agui`` takes an AG-UI ``RunAgentInput``: ``threadId`` is the session (a new one when
absent), the last of ``messages`` the user's new message, or ``resume`` entries the decisions on
calls waiting for approval (``interruptId`` a call's id; ``status: "resolved"`` with ``payload:
{"approved": true}`` runs it, anything else denies it). ``GET /api/sessions`` lists sessions,
``GET /api/sessions/{id}`` reads one (AG-UI messages and the calls waiting), ``DELETE`` removes
it, ``POST /api/sessions/{id}/cancel`` stops its run. ``GET /agui/{threadId}/events`` attaches to
the thread's run under way again: from the event after ``Last-Event-ID`` (or ``?after=``), else
from its start; 204 when no run is under way (or the one that id belongs to has ended).

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
from ..context import kept_of, new_session_id
from ..events import StreamEvent
from ..loop import CancellationToken, pending
from ..messages import Message
from ..stores.base import SessionInfo, SessionStore, StoredContext, check_session_id
from ..stores.jsonforms import pending_to_dict
from ..tools.selector import read_tools
from .agui import Event
from .client_input import ClientInput, client_input
from .front_run import FORKED, Plan, StateWatch, fork, front_events, plan_run, run_agent, start_run
from .frontend import is_frontend
from .hidden import HIDDEN, hidden
from .history import agui_messages, title_of
from .page import page_response
from .runs import Busy, LiveRun, Runs, UnknownEvent, stream_of
from .shared_state import delete_state, sharing
from .tracked import Tracked
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
        found = [info for info in found if not info.session_id.startswith(HIDDEN)]
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
        await delete_state(self.store, session_id)
        return Response(status_code=204)

    async def cancel(self, request: Request) -> Response:
        live = self.runs.get(request.path_params["session"])
        if live is None:
            raise Refused(404, "the session has no run under way")
        live.cancel.cancel()
        return JSONResponse({"runId": live.run_id, "cancelled": True}, status_code=202)

    async def run(self, request: Request) -> Response:
        body = await json_body(request, self.limits)
        asked = run_input(body, self.limits)
        given = client_input(body, self.limits)  # tools, history, context, state
        thread = asked.thread_id or new_session_id()
        if (why := hidden(thread)) is not None:
            raise Refused(400, f"threadId: {why}")
        try:
            live = self.runs.reserve(thread, asked.run_id or secrets.token_hex(8))
        except Busy as exc:
            raise Refused(409, str(exc)) from None
        try:
            plan, count = await self._check(_checked(thread), asked, given)
            agent = await run_agent(self.agent, given, plan.pending)
            context = await self.store.open(thread)
            first = await self._first(context, plan)
            state = await StateWatch.of(self.store, thread, given.state)
        except BaseException:
            self.runs.release(live)
            raise
        if state.state:
            first.append({"type": "STATE_SNAPSHOT", "snapshot": state.sent})
        # where the run's messages go: after a fork, the branch's first messages are the thread
        tracked = Tracked(context, count if plan.fork_at is None else plan.fork_at)
        live.places, live.shown = tracked, self.limits.max_shown
        queue = live.listen()

        def begin(token: CancellationToken) -> AsyncIterator[StreamEvent]:
            stream = start_run(agent, tracked, asked, plan, token)
            return front_events(stream, live, first, plan.quiet, state)

        with sharing(state.state):  # the run's task starts with it: its tools read it
            self.runs.start(live, begin)
        body = _events(live, queue, asked.cancel_on_disconnect)
        return StreamingResponse(body, media_type="text/event-stream", headers=_SSE_HEADERS)

    async def attach(self, request: Request) -> Response:
        """The thread's run under way, again: what the client missed after the event it names,
        then the rest (204 when there is no such run)."""
        session_id = _checked(request.path_params["session"])
        after = _cursor(request)
        live = self.runs.get(session_id)
        if live is None or (after is not None and not after.startswith(live.tag + ".")):
            return Response(status_code=204)
        try:
            missed, queue = live.attach(after)
        except UnknownEvent as exc:
            raise Refused(400, f"{exc}: send the id of the last event read") from None
        body = _attached(missed, _events(live, queue, False))
        return StreamingResponse(body, media_type="text/event-stream", headers=_SSE_HEADERS)

    async def _first(self, context: StoredContext, plan: Plan) -> list[Event]:
        """Fork the session where an edit asked (``plan.fork_at``); what the client is told
        first."""
        if plan.fork_at is None:
            return []
        branch = await fork(self.store, context, plan.fork_at)
        value = {"threadId": context.session_id, "branch": branch, "at": plan.fork_at}
        return [{"type": "CUSTOM", "name": FORKED, "value": value}]

    async def _check(
        self, session_id: str, asked: RunAsked, given: ClientInput
    ) -> tuple[Plan, int]:
        """Refuse what the engine would not take, before anything is stored (opening a session
        creates it): a history that differs from the stored one (unless an edit forks it), a
        new message while calls wait for a decision, a decision on a call that does not wait
        (on a new thread, none does). Calls that wait for the front end take its results, or
        end unanswered when a new message comes (``front_run.plan_run``). The plan, and how
        many messages the session holds (read whole only when the view is a compaction's
        tail or the client sent its history)."""
        view = await self._view(session_id)
        full = len(given.messages) > 1 or any(kept_of(m) is not None for m in view)
        history = await self.store.history_of(session_id) if full else view
        plan = plan_run(history, view, asked, given)
        calls = [call for call in plan.pending if not is_frontend(call)]
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
        return plan, len(history)

    async def _view(self, session_id: str) -> list[Message]:
        """The session's messages from where the model's view begins, read without creating
        the session (``context_of`` where the store keeps where the view begins)."""
        reader = getattr(self.store, "context_of", None)
        found: list[Message] = await (reader or self.store.history_of)(session_id)
        return found


def _checked(session_id: str) -> str:
    try:
        return check_session_id(session_id)
    except ValueError as exc:
        raise Refused(400, str(exc)) from None


def _cursor(request: Request) -> str | None:
    """The last event id a client read: ``Last-Event-ID`` or ``?after=`` (the same, if both)."""
    header = request.headers.get("last-event-id")
    query = request.query_params.get("after")
    if header is not None and query is not None and header.strip() != query.strip():
        raise Refused(400, "Last-Event-ID and ?after= name different events: send one")
    given = query if query is not None else header
    if given is not None and (not given.strip() or len(given) > 64):
        raise Refused(400, "an event id is the id: line of an event read (at most 64 characters)")
    return given.strip() if given is not None else None


async def _attached(missed: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    if missed:
        yield missed
    async for chunk in rest:
        yield chunk


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

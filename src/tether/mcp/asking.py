"""``Asker``: a server's elicitations put to the application's ``on_elicit``, as the SDK's
elicitation callback, in both eras: the 2026-07-28 era's input requests (answered inside the
call, in the call's own task) and the handshake era's ``elicitation/create`` requests (answered
from the connection's task, while the call waits).

Each call is an ``AskingCall``: it counts what it was asked (at most ``MAX_ASKS`` a call: a
handshake-era server that asks more loses its connection, the next use reconnects), and
whatever goes wrong while asking (a request past the caps, an answerer that raised, an answer
that does not fit) fails the call at once with that reason. The server then gets an error, never
the application's exception; a question still open when its call ends is answered ``cancel``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Coroutine, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal

from .answers import Unanswerable, accepted, checked_request
from .elicitation import Elicitation, OnElicit

__all__ = ["MAX_ASKS", "Asker", "AskingCall", "read_request"]

log = logging.getLogger("tether.mcp")

MAX_ASKS = 10  # questions one call may ask; the SDK gives the 2026 era's rounds one more
_SERVER_ERROR = "the client could not answer this elicitation"


class AskingCall:
    """One tool call while it may be asked for input: what asked, how often, and why it
    failed (``failure``); ``stop`` is set once nothing more is to be asked (failed or ended)."""

    __slots__ = ("arguments", "asked", "failure", "stop", "tool")

    def __init__(self, tool: str | None, arguments: Mapping[str, Any] | None) -> None:
        self.tool = tool
        self.arguments = arguments
        self.asked = 0
        self.failure: str | None = None
        self.stop = asyncio.Event()

    def fail(self, reason: str) -> None:
        """The call ends with ``reason`` (the first one given)."""
        if self.failure is None:
            self.failure = reason
        self.stop.set()


_CURRENT: ContextVar[AskingCall | None] = ContextVar("tether_mcp_asking", default=None)
_STOPPED = object()


class Asker:
    """Answers one server's elicitations through ``answer`` (``on_elicit``); ``label()`` is the
    server's label for the application, ``who()`` the server in words for error messages.
    Without an ``answer`` the client still offers to answer (a 2026-07-28 era question then
    pauses the run: ``tether.mcp.pausing``), and a handshake-era question, which lives inside
    the open call, is declined and fails its call with a reason that names ``on_elicit``."""

    __slots__ = ("_calls", "_loose", "_on_storm", "_one_at_a_time", "answer", "label", "who")

    def __init__(
        self,
        answer: OnElicit | None,
        label: Callable[[], str],
        who: Callable[[], str],
        on_storm: Callable[[], None] | None = None,
    ) -> None:
        """``on_storm()`` hears that a handshake-era server asked past the cap: its questions
        may outlive the call and be taken for the next one's, so its connection is best let go."""
        self.answer = answer
        self._on_storm = on_storm
        self.label = label
        self.who = who
        self._calls: set[AskingCall] = set()
        self._loose: AskingCall | None = None  # questions no one call can be told to have asked
        self._one_at_a_time: asyncio.Lock | None = None  # a person answers one question at a time

    @contextmanager
    def asking(self, tool: str, arguments: Mapping[str, Any]) -> Iterator[AskingCall]:
        """The call to ``tool`` in flight: its elicitations are its own while this lasts."""
        call = AskingCall(tool, dict(arguments))
        token = _CURRENT.set(call)
        self._calls.add(call)
        try:
            yield call
        finally:
            _CURRENT.reset(token)
            self._calls.discard(call)
            call.stop.set()
            if not self._calls and self._loose is not None:
                self._loose.stop.set()
                self._loose = None

    async def run(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        request: Coroutine[Any, Any, Any],
        guarded: Callable[[Coroutine[Any, Any, Any]], Coroutine[Any, Any, Any]],
    ) -> tuple[Any, str | None]:
        """Await ``request`` (through ``guarded``, which bounds it) as the call to ``tool``: its
        result, or None and why asking failed it (the request is then cancelled at once)."""
        with self.asking(tool, arguments) as call:
            try:
                result = await guarded(_until_stopped(request, call))
            except Exception:
                if call.failure is None:
                    raise
                result = None
        return result, call.failure

    def _call(self) -> AskingCall | None:
        """The call that asked: the current task's (the 2026 era), else the only one in flight
        (a handshake-era request comes from the connection's task); None when unknown."""
        call = _CURRENT.get()
        if call is not None and call in self._calls:
            return call
        return next(iter(self._calls)) if len(self._calls) == 1 else None

    async def __call__(self, context: Any, params: Any) -> Any:
        """The SDK's elicitation callback: an ``ElicitResult``, or ``ErrorData`` when the
        question is not put to the application or its answer is not sent."""
        from mcp_types import INTERNAL_ERROR, INVALID_REQUEST, ElicitResult, ErrorData  # noqa: PLC0415

        call = self._call()
        if call is None:  # several calls in flight, and the server did not say which asked
            if not self._calls:
                log.warning("%s asked for input outside any tool call: refused", self.who())
                return ErrorData(code=INVALID_REQUEST, message="no tool call is waiting for input")
            call = self._loose = self._loose or AskingCall(None, None)
        if self.answer is None:
            call.fail(
                f"{self.who()} asked for the user's input in the middle of the call, and this "
                "client cannot answer it: give the server on_elicit= to answer it in this process"
            )
            return ElicitResult(action="decline")
        try:
            elicitation = self._counted(call, params)
            answer = await self._asked(elicitation, call)
            if answer is _STOPPED:
                return ElicitResult(action="cancel")
            content = accepted(elicitation, answer, self.who())
        except Unanswerable as exc:
            call.fail(str(exc))
            if call.tool is None:
                log.warning("%s", exc)
            return ErrorData(code=INVALID_REQUEST, message=_SERVER_ERROR)
        except Exception as exc:  # the application's answerer raised: it stays its own
            call.fail(f"on_elicit raised {type(exc).__name__}: {exc}")
            return ErrorData(code=INTERNAL_ERROR, message=_SERVER_ERROR)
        if content is None:
            return ElicitResult(action="decline")
        if elicitation.mode == "url":
            return ElicitResult(action="accept")
        return ElicitResult(action="accept", content=content)

    def _counted(self, call: AskingCall, params: Any) -> Elicitation:
        if call.failure is not None:
            raise Unanswerable(call.failure)
        call.asked += 1
        if call.asked > MAX_ASKS:
            if self._on_storm is not None and _CURRENT.get() is not call:
                self._on_storm()  # asked from the connection's task: the handshake era
            raise Unanswerable(
                f"{self.who()} asked for input more than {MAX_ASKS} times in one call"
            )
        asked = read_request(params, self.label(), call.tool, call.arguments)
        return checked_request(asked, self.who())

    async def _asked(self, elicitation: Elicitation, call: AskingCall) -> Any:
        """The application's answer, or ``_STOPPED`` when the call ended first."""
        job = asyncio.ensure_future(self._answered(elicitation))
        stop = asyncio.ensure_future(call.stop.wait())
        try:
            await asyncio.wait((job, stop), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not job.done():
                job.cancel()
                job.add_done_callback(_forget)
        if job.done() and not job.cancelled():
            return job.result()
        return _STOPPED

    async def _answered(self, elicitation: Elicitation) -> Any:
        assert self.answer is not None  # a client without one declines first (``__call__``)
        if self._one_at_a_time is None:
            self._one_at_a_time = asyncio.Lock()
        async with self._one_at_a_time:
            if _is_async(self.answer):
                answer = self.answer(elicitation)
            else:
                answer = await asyncio.to_thread(self.answer, elicitation)
            return await answer if inspect.isawaitable(answer) else answer


def read_request(
    params: Any,
    label: str,
    tool: str | None,
    arguments: Mapping[str, Any] | None,
    key: str | None = None,
) -> Elicitation:
    """The SDK's request parameters as an ``Elicitation`` (of the call to ``tool``)."""
    mode: Literal["form", "url"] = "url" if getattr(params, "mode", "form") == "url" else "form"
    schema = getattr(params, "requested_schema", None)
    message = params.message if isinstance(params.message, str) else str(params.message)
    return Elicitation(
        message=message,
        schema=schema if isinstance(schema, Mapping) else {},
        server=label,
        tool=tool,
        arguments=arguments,
        mode=mode,
        url=getattr(params, "url", None) if mode == "url" else None,
        key=key,
    )


async def _until_stopped(request: Coroutine[Any, Any, Any], call: AskingCall) -> Any:
    """``request``'s result, unless asking fails the call first: then the request is cancelled
    (the SDK tells the server) and ``Unanswerable`` raised."""
    task = asyncio.ensure_future(request)
    stop = asyncio.ensure_future(call.stop.wait())
    try:
        await asyncio.wait((task, stop), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)  # its outcome read, never logged
    if task.cancelled() or call.failure is not None:
        raise Unanswerable(call.failure or "the call was stopped")
    return task.result()


def _is_async(answer: Any) -> bool:
    return inspect.iscoroutinefunction(answer) or inspect.iscoroutinefunction(
        getattr(answer, "__call__", None)  # noqa: B004 - an object with an async __call__
    )


def _forget(job: asyncio.Future[Any]) -> None:
    """An answer nobody waits for any more: whatever became of it is read, not logged."""
    if not job.cancelled() and job.exception() is not None:
        log.debug("on_elicit failed after its call ended: %s", job.exception())

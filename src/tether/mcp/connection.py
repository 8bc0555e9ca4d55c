"""One live connection to an MCP server, held by a task of its own.

The SDK's client must be entered and left in one task that stays alive in between; holding it in
a task of its own lets any run's task call through it, and lets a session close it from wherever
the session ends. The connection notices when the server's stream ends (the process died, the
HTTP session broke) so the next use can reconnect instead of failing, and checks each tool list
tool by tool on its way in (``ListingCheck``). It speaks MCP Tasks (``tasks``): the extension
declared, and 2025-11-25 task answers made readable to the SDK (``TaskAnswers``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

from .asking import MAX_ASKS
from .taskwire import TaskAnswers
from .wirecheck import ListingCheck

__all__ = ["Connection", "first_cause"]

log = logging.getLogger("tether.mcp")

Transport = Callable[[], AbstractAsyncContextManager[tuple[Any, Any]]]


class Notice(Protocol):
    """What hears of a server's changes besides its tools (``library.py``'s ``ServerLibrary``)."""

    def notice(self, message: Any) -> None:
        """A list-changed or resource-updated notification (or listen event)."""

    def dropped(self, kind: str, name: str, reason: str) -> None:
        """An entry of a ``kind`` listing was taken out: the SDK cannot read it."""

    def lost(self) -> None:
        """The server's stream ended while the connection was still wanted (it went away)."""


_NOTICES = (  # the notifications a ``Notice`` hears
    "ResourceListChangedNotification",
    "PromptListChangedNotification",
    "ResourceUpdatedNotification",
)
_CLOSE_WAIT = 10.0  # seconds a server may take to shut down before its task is cancelled


class Connection:
    """A client connected to one server, from ``open`` until ``close`` or the server goes away."""

    __slots__ = (
        "_check",
        "_elicitation",
        "_ended",
        "_notice",
        "_on_change",
        "_options",
        "_stop",
        "_task",
        "_tasks",
        "_transport",
        "client",
    )

    def __init__(
        self,
        transport: Transport,
        on_change: Callable[[], None],
        on_dropped: Callable[[str, str], None],
        *,
        elicitation: Any = None,
        notice: Notice | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        """``on_change()`` hears that the server's tool list changed; ``on_dropped(name,
        reason)`` of each tool taken out of a list because the SDK could not read it;
        ``elicitation`` is the SDK's elicitation callback (None: the client cannot answer, and
        says so). ``notice``, when given, hears of the server's other changes (resources,
        prompts) and of the entries taken out of their lists; ``options`` are the SDK
        ``Client``'s further keyword arguments (a sampling callback)."""
        self._transport = transport
        self._elicitation = elicitation
        self._on_change = on_change
        self._notice = notice
        self._options = dict(options or {})
        self._check = ListingCheck(
            self._version, on_dropped, None if notice is None else notice.dropped
        )
        self._tasks = TaskAnswers()
        self._stop = asyncio.Event()
        self._ended = False
        self._task: asyncio.Task[None] | None = None
        self.client: Any = None

    @property
    def alive(self) -> bool:
        """Connected, and the server's stream has not ended."""
        return self.client is not None and not self._ended

    async def open(self, limit: float) -> Any:
        """Connect (the protocol era negotiated); raises what stopped it, or ``TimeoutError``."""
        ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold(ready), name="tether-mcp-connection")
        try:
            async with asyncio.timeout(limit):
                self.client = await asyncio.shield(ready)
        except BaseException:
            await self.close(at_once=True)  # still connecting: nothing to shut down in order
            _abandon(ready)
            raise
        return self.client

    def lose(self) -> None:
        """The server ended this connection (its session expired): the next use reconnects."""
        self._ended = True

    async def close(self, *, at_once: bool = False) -> None:
        """Disconnect and wait for the server to be shut down (its process ended); the task is
        cancelled if that takes too long, or at once, or if the caller is cancelled meanwhile."""
        self._stop.set()
        task, self._task = self._task, None
        if task is None:
            return
        try:
            if not at_once:
                async with asyncio.timeout(_CLOSE_WAIT):
                    await asyncio.shield(task)
        except TimeoutError:
            pass
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def _hold(self, ready: asyncio.Future[Any]) -> None:
        from mcp import Client  # noqa: PLC0415 - the SDK loads with the first connection

        from .tasks import tasks_extension  # noqa: PLC0415

        try:
            transport = _watched(self._transport(), self._end, self._check, self._tasks)
            client = Client(
                transport,
                mode="auto",
                message_handler=self._message,
                **self._answering(),
                **self._options,
                extensions=[tasks_extension()],
            )
            async with client, _listening(client, self._on_change, self._notice):
                ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(first_cause(exc))
            elif not self._stop.is_set():
                log.debug("MCP connection ended: %s", first_cause(exc))
            if isinstance(exc, asyncio.CancelledError) and self._stop.is_set():
                return
            if not isinstance(exc, Exception):
                raise
        finally:
            self._end()

    def _end(self) -> None:
        if not self._ended and self._notice is not None and not self._stop.is_set():
            self._notice.lost()
        self._ended = True

    def _answering(self) -> dict[str, Any]:
        """The client's elicitation options: declared only when the application answers."""
        if self._elicitation is None:
            return {}
        # One round more than a call may ask, so that the cap a call meets is tether's own.
        return {
            "elicitation_callback": self._elicitation,
            "input_required_max_rounds": MAX_ASKS + 1,
        }

    def _version(self) -> str | None:
        try:
            version = self.client.protocol_version
        except Exception:  # not negotiated yet
            return None
        return version if isinstance(version, str) else None

    async def _message(self, message: Any) -> None:
        from mcp import types  # noqa: PLC0415

        if isinstance(message, types.ToolListChangedNotification):
            self._on_change()
        elif self._notice is not None and type(message).__name__ in _NOTICES:
            self._notice.notice(message)
        elif isinstance(message, Exception):
            log.debug("MCP server sent something unreadable: %s", message)


@asynccontextmanager
async def _listening(
    client: Any, on_change: Callable[[], None], notice: Notice | None
) -> AsyncIterator[None]:
    """In the stateless era a server tells of list changes only while a listen is open."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS  # noqa: PLC0415

    wanted = {
        f"{kind}_list_changed": True
        for kind in ("tools", "prompts", "resources")
        if (kind == "tools" or notice is not None)
        and getattr(getattr(client.server_capabilities, kind, None), "list_changed", False)
    }
    if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not wanted:
        yield
        return
    try:
        subscription = client.listen(**wanted)
        events = await subscription.__aenter__()
    except Exception as exc:  # the server refused: no change events, lists read each round
        log.debug("MCP listen refused: %s", exc)
        yield
        return
    drain = asyncio.create_task(_drain(events, on_change, notice))
    try:
        yield
    finally:
        drain.cancel()
        with contextlib.suppress(BaseException):
            await drain
        with contextlib.suppress(Exception):
            await subscription.__aexit__(None, None, None)


async def _drain(events: Any, on_change: Callable[[], None], notice: Notice | None) -> None:
    with contextlib.suppress(Exception):
        async for event in events:
            if notice is not None and type(event).__name__ != "ToolsListChanged":
                notice.notice(event)
            else:
                on_change()


@asynccontextmanager
async def _watched(
    transport: AbstractAsyncContextManager[tuple[Any, Any]],
    on_end: Callable[[], None],
    check: ListingCheck,
    tasks: TaskAnswers,
) -> AsyncIterator[tuple[Any, Any]]:
    def received(item: Any) -> None:
        check.received(item)
        tasks.received(item)

    def sent(item: Any) -> None:
        check.sent(item)
        tasks.sent(item)

    async with transport as (read, write):
        yield _Receiving(read, on_end, received), _Sending(write, sent)


class _Receiving:
    """The transport's receive stream, telling ``on_end`` when its reader lets go of it (the
    stream ended, or the connection is closing) and ``seen`` of each message read."""

    __slots__ = ("_on_end", "_seen", "_stream")

    def __init__(
        self, stream: Any, on_end: Callable[[], None], seen: Callable[[Any], None]
    ) -> None:
        self._stream = stream
        self._on_end = on_end
        self._seen = seen

    async def __aenter__(self) -> _Receiving:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        self._on_end()
        return await self._stream.__aexit__(*exc_info)

    def __aiter__(self) -> _Receiving:
        return self

    async def __anext__(self) -> Any:
        item = await self._stream.__anext__()
        self._seen(item)
        return item

    async def receive(self) -> Any:
        item = await self._stream.receive()
        self._seen(item)
        return item

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Sending:
    """The transport's send stream, telling ``seen`` of each message before it goes out."""

    __slots__ = ("_seen", "_stream")

    def __init__(self, stream: Any, seen: Callable[[Any], None]) -> None:
        self._stream = stream
        self._seen = seen

    async def __aenter__(self) -> _Sending:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self._stream.__aexit__(*exc_info)

    async def send(self, item: Any) -> None:
        self._seen(item)
        await self._stream.send(item)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _abandon(ready: asyncio.Future[Any]) -> None:
    """Nobody waits for ``ready`` any more: its outcome is read here, so that the collector
    does not log it as an exception never retrieved."""
    if not ready.done():
        ready.cancel()
    elif not ready.cancelled():
        ready.exception()


def first_cause(exc: BaseException) -> BaseException:
    """The first leaf of nested exception groups (the SDK's task groups wrap what failed)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc

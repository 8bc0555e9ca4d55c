"""``McpServer``: what ``McpStdio`` and ``McpStreamable`` share. Connecting (and reconnecting
after the server went away), the era-aware liveness probe, the tool list (a ``ToolCatalog``:
read again in the background when the server says it changed, never awaited past
``list_timeout``) and calls with a timeout, whose failures all reach the model as text with
every secret of the server's configuration blanked.

A call that was in flight when the server died is never sent again (it may have run); only the
next use reconnects, a bounded number of times.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import Any, Self

from ..base.interrupt import Overrun, within
from ..errors import TetherError
from ..messages import ToolResultBlock
from ..tools.progress import ProgressSink, progress_sink
from ..tools.tool import Tool
from .answers import Unanswerable
from .asking import Asker
from .catalog import ToolCatalog
from .connection import Connection, first_cause
from .content import result_content
from .deferral import checked_threshold, deferred_past
from .elicitation import OnElicit
from .library import ServerLibrary
from .listing import Listing, read_listing
from .pausing import input_required, needs_input, pausable_call, seeded
from .prefix import checked_name_prefix, prefix_of
from .prompts import Prompt
from .redact import scrub
from .resources import MAX_RESOURCE_BYTES, Resource, ResourceTemplate
from .sampling import Sampling, sampling_callback
from .subscriptions import OnUpdate, ResourceSubscription
from .tasks import call_tool
from .tool import McpTool

__all__ = ["McpError", "McpServer"]

log = logging.getLogger("tether.mcp")

_RECONNECT_DELAYS = (0.0, 0.5, 2.0)  # seconds before each reconnection attempt
_MAX_PAGES = 100  # tools/list pages read from one server
_MAX_TOOLS = 1_000
_MAX_PROGRESS_MESSAGE = 500  # characters of a progress message kept
_CONNECTION_CLOSED = -32000
_STALE_STATE = (
    "The call went on from the state it paused with, and the server no longer takes that state "
    "back: a server keeps it only within its ttl and under its key (one of its process's own, "
    "unless the server is given a key to share)."
)
_MISSING_CAPABILITY = -32021  # the 2026 era's "the client did not declare what I need"
_REQUEST_TIMEOUT = -32001
# What the SDK's HTTP transport says when the server refused a request outright (an expired
# session gives 404 or, from some servers, 400): the connection is dropped and made again.
_HTTP_FAILURES = frozenset(
    ((-32600, "Session terminated"), (-32603, "Server returned an error response"))
)


class McpError(TetherError):
    """An MCP server could not be reached, started, or answered a call (the text says which)."""


class McpServer:
    """A connection to one MCP server, usable as a tool source once entered (``async with``).

    ``prefix`` names the server's tools when their names collide with another source's (letters,
    digits, ``_`` and ``-`` only); ``timeout`` bounds every call, ``connect_timeout`` every
    (re)connection, ``list_timeout`` how long a caller waits for a tool list being read again
    before it gets the last one; past ``tool_search`` tools (``False``: never) they are offered
    behind a tool search (``Tool.deferred``). ``degraded`` says what is wrong with the tools
    offered, if anything. As padwan-ai's transports: ``tools`` (the current list as ``McpTool``
    definitions, one list refreshed in place), ``is_open``, ``label``, ``name_prefix``
    (when given, every tool is named ``{name_prefix}__{tool}``, colliding or not, and a session
    never prefixes them again) and ``auto_prefix`` (the prefix a session gives its tools when
    a name collides and there is no ``name_prefix``).

    ``on_elicit`` answers the server when it asks the user for input during a call (see
    ``Elicitation``); without one the client does not offer to answer. It may be set until the
    server is entered (a session lends its own to a server that has none).
    """

    def __init__(
        self,
        derived: str,
        timeout: float,
        connect_timeout: float,
        list_timeout: float = 5.0,
        *,
        name: str | None = None,
        name_prefix: str | None = None,
        tool_search: int | bool = 40,
        on_elicit: OnElicit | None = None,
        on_sampling: Sampling | None = None,
    ) -> None:
        """``derived`` is the prefix a kind of server makes of its command or URL: the
        ``auto_prefix`` unless ``name`` is given, the ``prefix`` unless ``name`` or
        ``name_prefix`` is. ``on_sampling`` answers the server's sampling requests
        (``sampling.py``); without it the client does not offer sampling."""
        if timeout <= 0 or connect_timeout <= 0 or list_timeout <= 0:
            raise ValueError("timeout, connect_timeout and list_timeout must be positive")
        if on_sampling is not None and not isinstance(on_sampling, Sampling):
            raise TypeError(
                "on_sampling= takes a tether.mcp.Sampling(model=..., consent=...), "
                f"got {on_sampling!r}"
            )
        self.on_sampling = on_sampling
        self._library = ServerLibrary(
            self._live, self._guarded, self.describe, self._own_name, McpError
        )
        self.name_prefix = checked_name_prefix(name_prefix)
        self.tool_search = checked_threshold(tool_search)
        own = derived if name is None else name
        self.prefix = prefix_of(own if name is not None or name_prefix is None else name_prefix)
        self._auto_prefix = prefix_of(own)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.revision = 0  # moves whenever the tool list may have changed
        self._connection: Connection | None = None
        self._definitions: list[McpTool] = []
        self._catalog = ToolCatalog(
            self._read_tools, list_timeout, self._settled, self.prefix, self._mirror
        )
        self._dropped: list[str] = []  # tools the connection took out of the list being read
        self._tasked: frozenset[str] = frozenset()  # tools callable only as tasks (2025-11-25)
        self._entered = False
        self._lock: asyncio.Lock | None = None
        if on_elicit is not None and not callable(on_elicit):
            raise TypeError(
                "on_elicit must be a function taking an Elicitation and returning a dict "
                f"(accept) or None (decline), got {type(on_elicit).__name__}"
            )
        self.on_elicit = on_elicit
        self._asker: Asker | None = None  # on_elicit's, as the connection made last uses it

    # -- what a kind of server defines ------------------------------------------------------------

    def _transport(self) -> AbstractAsyncContextManager[tuple[Any, Any]]:
        raise NotImplementedError

    def describe(self) -> str:
        """The server, in words, for error messages."""
        raise NotImplementedError

    def _secrets(self) -> Sequence[str]:
        """Values that must never appear in an error message."""
        return ()

    def _cause(self) -> McpError | None:
        """What the kind of server knows ended the connection, when it knows (an OAuth login
        that is needed again); said instead of only that the server went away."""
        return None

    def _tail(self) -> str:
        """What the server said on its way out (a stdio server's stderr), if anything."""
        return ""

    @property
    def label(self) -> str:
        """The server as configured, for people (logs, notices): a command line or a URL,
        with what looks like a credential left out."""
        raise NotImplementedError

    @property
    def auto_prefix(self) -> str:
        """padwan-ai's fallback prefix: the one a session puts before this server's tools
        (``{auto_prefix}__{tool}``) when one of their names is taken and the server has no
        ``name_prefix``. The ``name`` it was given, else derived from its command or its
        URL's host (letters, digits and ``_``); it never changes while the server runs."""
        return self._auto_prefix

    def _named_itself(self, name: str) -> None:
        """The server gave ``name`` as its own on connecting (a kind of server may use it)."""

    # -- entering and leaving ---------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._entered:
            raise RuntimeError(f"{self.describe()} is already open: leave it before entering again")
        self._catalog.reset()  # a new process or session may offer other tools
        await self._connect()
        self._entered = True
        try:
            await self._catalog.current()  # ``tools`` filled, waiting at most ``list_timeout``
        except BaseException:  # cancelled while listing: nothing is left open
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._entered = False
        await self._catalog.close()
        await self._library.close()
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    @property
    def is_open(self) -> bool:
        """Entered (``async with``) and not yet left."""
        return self._entered

    @property
    def tools(self) -> list[McpTool]:
        """The server's current tools as ``McpTool`` definitions (``name``, ``description``,
        ``input_schema``; ``await handler(args)`` calls the server and gives its
        ``ToolResultBlock``). Always the same list, refreshed in place after each listing and
        when the server says its list changed; empty until entered."""
        return self._definitions

    @property
    def connected(self) -> bool:
        """Entered, and the server still there."""
        return self._connection is not None and self._connection.alive

    async def ping(self) -> None:
        """Prove the server answers: ``ping`` in the handshake era, a fresh tool list after."""
        client = await self._live()
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS  # noqa: PLC0415

        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            self._catalog.accept(await self._read_tools())
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ping is deprecated, but it is the old era's probe
            await self._guarded(client.send_ping(), "ping")

    # -- tools ------------------------------------------------------------------------------------

    @property
    def degraded(self) -> str | None:
        """Why the tools offered may not be all the server's, or not its latest list (a
        listing that failed or is late, tools left out); None while nothing is wrong."""
        failure = self._catalog.failure
        return "; ".join([*([failure] if failure else ()), *self._catalog.problems]) or None

    async def list_tools(self) -> list[Tool]:
        """The server's tools: its last list, read again first when the server said it changed
        (waiting at most ``list_timeout`` for the answer, else the last list is kept)."""
        if not self._entered:
            raise McpError(f"{self.describe()} is not connected: enter it first (async with)")
        if not self.connected:
            self._catalog.invalidate()  # a server started again may offer other tools
        return await self._catalog.current()

    async def _read_tools(self) -> Listing:
        """Read the server's tool list now (raising ``McpError`` if it cannot be read)."""
        client = await self._live()
        self._dropped = []
        listed: list[Any] = []
        cursor = None
        for _ in range(_MAX_PAGES):
            page = await self._guarded(client.list_tools(cursor=cursor), "tools/list")
            listed.extend(page.tools)
            cursor = page.next_cursor
            if not cursor or len(listed) >= _MAX_TOOLS:
                break
        listing = read_listing(listed[:_MAX_TOOLS], self._caller)
        self._tasked = listing.tasked
        tools = deferred_past(self._prefixed(listing.tools), self.tool_search)
        return Listing(tools, (*self._dropped, *listing.problems))

    def _prefixed(self, tools: list[Tool]) -> list[Tool]:
        """``tools`` as offered: each named ``{name_prefix}__{name}`` when the server has a
        ``name_prefix`` (it is still called by its own name)."""
        if self.name_prefix is None:
            return tools
        return [dataclasses.replace(t, name=f"{self.name_prefix}__{t.name}") for t in tools]

    def _caller(self, name: str) -> Callable[..., Awaitable[ToolResultBlock]]:
        """The handler of the server's tool ``name``."""

        async def call(**arguments: Any) -> ToolResultBlock:
            return await self.call(name, arguments, progress_sink())

        return call

    def _drop(self, name: str, reason: str) -> None:
        self._dropped.append(f"tool {name!r} left out: {reason}")

    async def call(
        self, name: str, arguments: Mapping[str, Any], progress: ProgressSink | None = None
    ) -> ToolResultBlock:
        """Call tool ``name`` (its progress notifications to ``progress``, and a task's status
        when the server answers with one, ``tasks.py``); the server's own error results come
        back as error results, a failure to get any answer raises ``McpError``. A server that
        asks the user for input with no ``on_elicit`` to answer raises ``NeedsInput`` (a run
        pauses on it; ``Agent.resume``'s answers come back here)."""
        client = await self._live()
        callback = None if progress is None else _forwarding(progress)
        asker, seed, what = self._asker, seeded(), f"the call to {name!r}"
        args = dict(arguments)
        send = self._sender(client, name, args, callback, seed)
        request = call_tool(
            client, name, args, progress, callback, required=name in self._tasked, send=send
        )
        try:
            if asker is None:
                result = await self._guarded(request, what)
            else:
                result, failure = await asker.run(
                    name, arguments, request, lambda r: self._guarded(r, what)
                )
                if failure is not None:
                    return self._stopped(what, failure)
        except McpError as exc:
            if seed and "requestState" in str(exc):
                raise McpError(f"{exc}\n{_STALE_STATE}") from None
            raise
        if input_required(result):
            return self._paused(result, name, arguments, what)
        return ToolResultBlock("mcp", result_content(result), bool(result.is_error))

    def _sender(
        self, client: Any, name: str, args: dict[str, Any], callback: Any, seed: dict[str, Any]
    ) -> Callable[[], Awaitable[Any]]:
        """How the call is sent: as the client's own call when an answerer is at hand (or a
        resumed call carries its answers), else on the session, so that a question pauses."""
        if self._asker is None or self._asker.answer is not None:
            return partial(client.call_tool, name, args, progress_callback=callback, **seed)
        return partial(pausable_call, client, name, args, callback, seed)

    def _paused(
        self, result: Any, name: str, arguments: Mapping[str, Any], what: str
    ) -> ToolResultBlock:
        """Raise the pause an input-required ``result`` asks for (``NeedsInput``); the call's
        error result when its questions are past the caps."""
        try:
            raise needs_input(
                result,
                name,
                arguments,
                self.label,
                self.describe(),
                lambda: self._unanswered(what),
            )
        except Unanswerable as exc:
            return self._stopped(what, str(exc))

    def _stopped(self, what: str, failure: str) -> ToolResultBlock:
        return ToolResultBlock(
            "mcp", scrub(f"{what} was stopped: {failure}", self._secrets()), True
        )

    def _unanswered(self, what: str) -> str:
        return (
            f"{self.describe()} asked for the user's input during {what}, and nothing here "
            "answers it: give the server on_elicit= to answer it in this process (an Agent's "
            "run pauses on it instead, until Agent.resume(answers=) answers it; a durable run "
            "cannot pause on it)"
        )

    def _changed(self) -> None:
        self._catalog.invalidate()
        self._library.reset(lost=True)
        self.revision += 1

    def _announced(self) -> None:
        """The server said its tool list changed: read it again now, for ``tools``."""
        if self._entered:
            self.revision += 1
            self._catalog.refresh()
        else:
            self._changed()

    def _mirror(self, tools: list[Tool]) -> None:
        self._definitions[:] = [self._definition(t) for t in tools]

    def _definition(self, tool: Tool) -> McpTool:
        remote = getattr(tool, "remote", tool.name)

        async def call(args: dict[str, Any]) -> ToolResultBlock:
            return await self.call(remote, args)

        return McpTool(tool.name, tool.description, tool.schema or {}, call)

    def _settled(self) -> None:
        self.revision += 1  # a reading ended: a loop that cached the last list asks again

    # -- resources, prompts, sampling (library.py, sampling.py) -----------------------------------

    async def resources(self) -> list[Resource]:
        """The server's resources, listed (no content: ``read_resource`` reads one). The list
        is kept until the server says it changed, when it promises to (else read each time);
        entries it could not read are left out and named in ``listing_problems``."""
        return await self._library.resources()

    async def resource_templates(self) -> list[ResourceTemplate]:
        """The server's resource templates (URIs to fill in, then ``read_resource``)."""
        return await self._library.resource_templates()

    async def read_resource(self, uri: str, *, max_bytes: int = MAX_RESOURCE_BYTES) -> Resource:
        """Read the resource at ``uri`` (text as ``text``, binary as ``data``); more than
        ``max_bytes`` in all, or no answer within ``timeout``, raises ``McpError``."""
        return await self._library.read_resource(uri, max_bytes)

    async def prompts(self) -> list[Prompt]:
        """The server's prompts, listed with their arguments (kept as ``resources`` are)."""
        return await self._library.prompts()

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> Prompt:
        """The prompt ``name`` filled in with ``arguments`` (strings), its messages as tether
        ``Message``s; no answer within ``timeout`` raises ``McpError``."""
        return await self._library.get_prompt(name, arguments)

    async def subscribe(self, uri: str, on_update: OnUpdate | None = None) -> ResourceSubscription:
        """Follow the resource at ``uri``: the subscription yields its URI each time the server
        says it changed (and tells ``on_update``, if given); close it when done."""
        return await self._library.subscribe(uri, on_update, self.connect_timeout)

    @property
    def listing_problems(self) -> dict[str, tuple[str, ...]]:
        """What the last listing of each kind (``resources``, ``resource templates``,
        ``prompts``) left out or cut, in words; empty tuples when nothing."""
        return dict(self._library.problems)

    def _own_name(self) -> str:
        return self.prefix

    def _client_options(self) -> dict[str, Any]:
        """The SDK ``Client``'s keyword arguments for what this server was given."""
        if self.on_sampling is None:
            return {}
        return {"sampling_callback": sampling_callback(self.on_sampling, lambda: self.label)}

    # -- the connection ---------------------------------------------------------------------------

    async def _guarded(self, request: Coroutine[Any, Any, Any], what: str) -> Any:
        """Await one request within ``timeout`` (one timer shared by all requests; an overrun
        cancels it, and the SDK tells the server); failures become ``McpError``."""
        from mcp import MCPError  # noqa: PLC0415

        try:
            return await within(request, self.timeout)
        except Overrun:
            raise McpError(f"{what} timed out after {self.timeout:g} s") from None
        except MCPError as exc:
            if exc.code == _CONNECTION_CLOSED:
                self._changed()
                cause = self._cause()
                if cause is not None:
                    raise McpError(self._said(f"{self.describe()}: {cause}")) from None
                raise McpError(self._said(f"{self.describe()} went away during {what}")) from None
            if exc.code == _MISSING_CAPABILITY and self.on_elicit is None:
                raise McpError(
                    self._said(
                        f"{self.describe()} refused {what}: {exc.message}. It asks the user for "
                        "input: give the server on_elicit= to answer it"
                    )
                ) from None
            if exc.code == _REQUEST_TIMEOUT:
                raise McpError(f"{what} timed out after {self.timeout:g} s") from None
            if (exc.code, exc.message) in _HTTP_FAILURES:
                self._lose()  # e.g. the server restarted and forgot the session: reconnect
                raise McpError(
                    f"{self.describe()} answered {what} with an HTTP error "
                    f"({exc.message}); the next use reconnects"
                ) from None
            raise McpError(self._said(f"{self.describe()} refused {what}: {exc.message}")) from None
        except McpError:
            raise
        except Exception as exc:  # a malformed answer, or a failure inside the SDK
            raise McpError(
                self._said(f"{self.describe()} failed {what}: {type(exc).__name__}: {exc}")
            ) from None

    def _lose(self) -> None:
        self._changed()
        if self._connection is not None:
            self._connection.lose()

    async def _live(self) -> Any:
        """The connected client, reconnecting first if the server went away."""
        connection = self._connection
        if connection is not None and connection.alive:
            return connection.client
        if not self._entered:
            raise McpError(f"{self.describe()} is not connected: enter it first (async with)")
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # concurrent calls share one reconnection
            connection = self._connection
            if connection is not None and connection.alive:
                return connection.client
            return await self._reconnect()

    async def _reconnect(self) -> Any:
        old, self._connection = self._connection, None
        if old is not None:
            await old.close()
        failure: McpError | None = None
        for delay in _RECONNECT_DELAYS:
            await asyncio.sleep(delay)
            try:
                client = await self._connect()
            except McpError as exc:
                failure = exc
                continue
            if not self._entered:  # the server was left meanwhile: do not keep this connection
                connection, self._connection = self._connection, None
                if connection is not None:
                    await connection.close()
                raise McpError(f"{self.describe()} was closed")
            self._changed()  # a restarted server may offer other tools
            return client
        raise McpError(f"{failure} (gave up after {len(_RECONNECT_DELAYS)} reconnection attempts)")

    async def _connect(self) -> Any:
        self._asker = self._answerer()
        connection = Connection(
            self._transport,
            self._announced,
            self._drop,
            elicitation=self._asker,
            notice=self._library,
            options=self._client_options(),
        )
        try:
            client = await connection.open(self.connect_timeout)
        except TimeoutError:
            raise McpError(
                self._said(f"{self.describe()} did not answer within {self.connect_timeout:g} s")
            ) from None
        except Exception as exc:
            reason = first_cause(exc)
            if isinstance(reason, McpError):  # a transport's own words (an OAuth login needed)
                raise McpError(self._said(f"{self.describe()}: {reason}")) from None
            raise McpError(
                self._said(f"{self.describe()} failed to start: {type(reason).__name__}: {reason}")
            ) from None
        self._connection = connection
        try:
            name = client.server_info.name
        except Exception:  # an anonymous server, or a session that says nothing of it
            name = None
        if isinstance(name, str) and name.strip():
            self._named_itself(name)
        return client

    def _answerer(self) -> Asker:
        """What answers this server's elicitations on the next connection (without
        ``on_elicit``, a 2026-07-28 era question pauses the run: ``tether.mcp.pausing``)."""
        return Asker(self.on_elicit, lambda: self.label, self.describe, self._lose)

    def _said(self, message: str) -> str:
        """``message`` with the server's last words added and every secret blanked."""
        tail = self._tail()
        if tail:
            message = f"{message}. Its stderr ended with:\n{tail}"
        return scrub(message, self._secrets())


def _forwarding(sink: ProgressSink) -> Any:
    """The SDK's progress callback, passing a server's (untrusted) reports on, checked."""

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        if not isinstance(progress, int | float) or (
            total is not None and not isinstance(total, int | float)
        ):
            return
        said = message[:_MAX_PROGRESS_MESSAGE] if isinstance(message, str) else None
        sink(float(progress), None if total is None else float(total), said)

    return forward

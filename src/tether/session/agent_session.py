"""``AgentSession``: padwan-ai's stateful door. It configures the one engine (tools,
hooks as middleware, result truncation, round limit) and keeps the conversation between sends;
it never loops on its own."""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from contextlib import AsyncExitStack, aclosing, asynccontextmanager
from types import AsyncGeneratorType
from typing import Any, Literal, Self, TypeAlias, TypeVar, cast, overload

from ..agent import Agent
from ..context import Compaction, ContextStore, MemoryContextStore, SessionOpener, new_session_id
from ..errors import ConflictError, MaxIterationsError, OutputValidationError
from ..events import Error, IterationEnd, IterationStart, SessionEndEvent, StreamEvent, TextDelta
from ..loop import AgentStream, Approval, CompleteCalls, Limits
from ..mcp.elicitation import OnElicit
from ..mcp.sampling import Sampling
from ..messages import Message, ToolUseBlock
from ..tools.tool import Tool
from ..transports.base import ClosableTransport, CompletionTransport, TakesOptions
from ..types import ZERO_USAGE, Usage
from .chat import ChatClient, ChatClientTransport
from .hooks import ApproveTool, InFlight, OnTool, ToolHooks
from .library import SessionLibrary, check_answerers
from .parts import UserInput, user_message
from .replies import PadwanCalls, PadwanReplies, limit_text, raised_text
from .search import tool_selector
from .snapshot import ConversationStore, read_snapshot, read_usage, snapshot_of
from .state import ConversationState, usage_dict
from .tools import SessionTools

__all__ = ["AgentSession", "OutputValidationError", "ToolErrorFormatter"]

T = TypeVar("T")

ToolErrorFormatter = Callable[[Tool, Mapping[str, Any], BaseException], str]
_UNBOUNDED = sys.maxsize
# approved ids, denied ids: reasons, answers by call id (to questions by key)
Decided: TypeAlias = tuple[tuple[str, ...], dict[str, str], Mapping[str, Mapping[str, Any]]]


class AgentSession(SessionLibrary):
    """A conversation with a model and its tools, kept between ``send``/``stream`` calls.

    ``client`` is a transport, a model string (``"openai:gpt-4.1"``, ``"local"``, ...) or
    padwan-ai's kind of client (anything with ``stream_chat(messages, tools)``, see
    ``tether.session.chat``); ``mcp_tools`` takes ``McpTool`` definitions and MCP server
    transports. Use ``async with``: entering enters a ``stream_chat`` client that is an async
    context manager, then connects the servers; leaving closes them in reverse order.
    ``limits`` (``tether.Limits``) bounds each ``send``: past one it raises ``LimitExceeded``.
    ``approval`` (tool names, or a test of name and arguments) makes those calls wait for a
    person across processes: ``send`` raises ``RunPaused``, ``resume`` goes on (``approve_tool``
    is the in-process form, asked while the run waits). ``compaction`` (``tether.Compaction``)
    summarises the older part of a long conversation; the summary is stored with the session.
    ``tool_search`` (a number of tools) offers the model a search past that many tools instead of
    every schema; ``False`` offers every tool, even those a server defers (by default each MCP
    server defers its own past its ``tool_search``).
    ``on_elicit`` answers an MCP server that asks the user for input during a call
    (``tether.mcp.Elicitation``), for each server the session enters that has no answerer of
    its own.
    ``on_sampling`` (``tether.mcp.Sampling``) answers the sampling requests of every server the
    session opens that has no ``on_sampling`` of its own. Its servers' resources and prompts:
    ``resources()``, ``read_resource(uri)``, ``prompts()``, ``get_prompt(name, arguments)``,
    ``subscribe(uri)`` (each naming the server, by ``server=`` where that is not clear).

    In padwan-ai's words, as its users' code reads them: an empty reply is ``(no response)``;
    an unknown tool, arguments that are not JSON, a handler that raised (without
    ``on_tool_error``) and a denied call answer the model ``{"error": ...}``.
    """

    def __init__(
        self,
        client: CompletionTransport | ChatClient | str,
        system: str | None = None,
        mcp_tools: Sequence[Any] = (),
        max_tool_rounds: int | None = 5,
        max_tool_result_chars: int | None = 8_000,
        execution: Literal["sequential", "parallel"] = "sequential",
        on_tool: OnTool | None = None,
        on_tool_error: ToolErrorFormatter | None = None,
        approve_tool: ApproveTool | None = None,
        on_mcp_connect: Callable[[Any], Any] | None = None,
        session_id: str | None = None,
        store: SessionOpener | ConversationStore | None = None,
        *,
        output_retries: int = 2,
        start_tools_early: bool = False,
        limits: Limits | None = None,
        approval: Approval | None = None,
        compaction: Compaction | None = None,
        tool_search: int | bool | None = None,
        on_elicit: OnElicit | None = None,
        on_sampling: Sampling | None = None,
    ) -> None:
        if max_tool_rounds is not None and max_tool_rounds < 1:
            raise ValueError(f"max_tool_rounds must be at least 1 or None, got {max_tool_rounds}")
        if execution not in ("sequential", "parallel"):
            raise ValueError(f"execution must be 'sequential' or 'parallel', got {execution!r}")
        self.client = _transport(client)
        self._owns_client = isinstance(client, str)  # made here from a model string: closed here
        # padwan's clients live with the session; a transport given is left to its owner
        self._client_scope: Any = (
            client
            if isinstance(self.client, ChatClientTransport) and _is_async_scope(client)
            else None
        )
        self.system = system
        self.max_tool_rounds = max_tool_rounds
        self.output_retries = output_retries
        self.on_mcp_connect = on_mcp_connect
        self.session_id = session_id if session_id is not None else new_session_id()
        self.store = store
        self.last_usage: Usage = ZERO_USAGE
        self.total_usage: Usage = ZERO_USAGE
        check_answerers(on_elicit, on_sampling)
        lent = {"on_elicit": on_elicit, "on_sampling": on_sampling}
        self._tools = SessionTools(mcp_tools, lent)  # the user's list, read each round
        self._context: ContextStore = MemoryContextStore(session_id=self.session_id)
        self._messages: list[Message] = []
        self._pending: Awaitable[None] | None = None  # restoring what an async store gives
        self._exits: AsyncExitStack | None = None
        self._in_flight = InFlight()
        self._hooks = ToolHooks(on_tool, approve_tool) if on_tool or approve_tool else None
        # Sequential calls are asked about while the answer streams; parallel ones start then.
        self._ask_early = (
            start_tools_early and approve_tool is not None and execution == "sequential"
        )
        # a tether store is opened on entering (or first use)
        self._opened = not isinstance(store, SessionOpener)
        self._limited = False  # the last run stopped at the round limit
        self._stale = False  # another writer moved the stored session on: reload it first
        self._one_run = asyncio.Lock()  # one run at a time; a left stream ends before the next
        # held, not weakly: a stream dropped half-read must be closed by the next turn, never
        # by the event loop's finalizer in a task of its own while that turn runs
        self._streams: set[AsyncGeneratorType[str, None]] = set()
        self._final = ""  # the last run's answer
        self._output: Any = None  # and its value, for a typed run
        self._agent = Agent(
            system or "",
            _cache_keyed(self.client, self.session_id),
            tools=[self._tools],
            max_iterations=_UNBOUNDED if max_tool_rounds is None else max_tool_rounds,
            execution=execution,
            max_tool_result_chars=max_tool_result_chars,
            format_tool_error=raised_text
            if on_tool_error is None
            else self._error_text(on_tool_error),
            middleware=[
                PadwanReplies(),
                *([] if self._hooks is None else [self._hooks]),
                PadwanCalls(),
                self._in_flight,
            ],
            start_tools_early=start_tools_early,
            output_retries=output_retries,
            limits=limits,
            approval=approval,
            context_policy=compaction,
            selector=tool_selector(tool_search),
        )

    # -- resuming ---------------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        *,
        store: SessionOpener | ConversationStore,
        session_id: str | None = None,
        model: str | None = None,
        client: CompletionTransport | ChatClient | str | None = None,
        **options: Any,
    ) -> AgentSession:
        """A session resumed from ``store`` (its system prompt, which wins over ``system=``, and
        whole history; a snapshot padwan-ai saved is read too, its ``total_usage`` restored);
        without a ``session_id``, or with one the store does not know (its ``load`` raises
        ``KeyError``, another ``LookupError`` or ``FileNotFoundError``), a fresh session under
        that id, wired to ``store``. Any other error of the store's propagates."""
        given = client if client is not None else model
        if given is None or (model is not None and client is not None):
            raise ValueError("AgentSession.load takes exactly one of model= or client=")
        session = cls(given, store=store, session_id=session_id, **options)
        if (
            session_id is not None
            and isinstance(store, ConversationStore)
            and not isinstance(store, SessionOpener)
        ):
            try:
                loaded = store.load(session_id)
            except _UNKNOWN:
                return session
            if inspect.isawaitable(loaded):
                session._pending = session._resume(loaded)
            else:
                session._restore(loaded)
        return session

    async def _resume(self, loaded: Awaitable[Any]) -> None:
        """Restore what an async store gives, once it gives it (nothing if it has no such id)."""
        try:
            data = await loaded
        except _UNKNOWN:
            return
        self._restore(data)

    def _restore(self, data: Any) -> None:
        system, messages = read_snapshot(data, self.session_id)
        usage = read_usage(data, self.session_id)  # padwan-ai's snapshots keep a total
        if usage is not None:
            self.total_usage = usage
        if system is not None:  # the snapshot's prompt is the conversation's, as in padwan-ai
            self.system = system
            self._agent.system = system
        self._messages = messages
        self._context = MemoryContextStore(messages, session_id=self.session_id)

    # -- entering and leaving ---------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        exits = AsyncExitStack()
        await exits.__aenter__()
        try:
            if self._client_scope is not None:
                await exits.enter_async_context(self._client_scope)
            await self._tools.enter(exits, self.on_mcp_connect)
            await self._open_store()
        except BaseException:
            try:
                await exits.aclose()
            finally:
                await self._close_client()
            raise
        self._exits = exits
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        async with self._turn():  # a stream left open ends (and stores) before servers close
            pass
        exits, self._exits = self._exits, None
        try:
            if exits is not None:
                await exits.aclose()
        finally:
            await self._close_client()

    async def _close_client(self) -> None:
        if self._owns_client and isinstance(self.client, ClosableTransport):
            await self.client.aclose()

    async def _open_store(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            await pending
        if not self._opened or self._stale:
            # only a store that opens sessions is left unopened or goes stale
            self._context = await cast(SessionOpener, self.store).open(self.session_id)
            self._messages = await self._context.get_history()
            self._opened, self._stale = True, False

    # -- talking ----------------------------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """The whole conversation (tool calls and full results included), oldest first."""
        return list(self._messages)

    @property
    def state(self) -> ConversationState:
        """The system prompt, the whole conversation and its usage, as a copy."""
        last = None if self.last_usage == ZERO_USAGE else usage_dict(self.last_usage)
        return ConversationState(
            self.system, list(self._messages), usage_dict(self.total_usage), last
        )

    @overload
    async def send(self, user_input: UserInput, *, output: None = None) -> str: ...
    @overload
    async def send(self, user_input: UserInput, *, output: type[T]) -> T: ...

    async def send(self, user_input: UserInput, *, output: type[T] | None = None) -> Any:
        """Send a message (text, a ``Message`` or a list of OpenAI content parts, see
        ``tether.session.parts``); the model's final answer (or the round-limit message). With
        ``output=T`` the answer is validated as a ``T``: an invalid one goes back to the model
        ``output_retries`` times, then ``OutputValidationError``."""
        message = user_message(user_input)
        if output is None:
            return await self._answer(message)
        answer = await self._answer(message, output)
        if self._limited:
            raise OutputValidationError(f"no typed answer: {answer}", text=answer, errors=[])
        return self._output

    def stream(self, user_input: UserInput) -> AsyncGenerator[str, None]:
        """Send a message (as ``send`` takes it); the answer's text as it arrives (tool calls
        are silent). Leaving early (``break``) stops the run there, its history kept valid; the
        next ``send`` or ``stream`` starts once that is done (and ends a stream left open but
        still held). Input that cannot be read is refused here, before any run."""
        chunks = self._chunks(user_message(user_input))
        self._streams.add(cast(AsyncGeneratorType[str, None], chunks))
        return chunks

    async def _chunks(self, user_input: str | Message) -> AsyncGenerator[str, None]:
        async with self._turn(), aclosing(self._run(user_input)) as events:
            async for event in events:
                if type(event) is TextDelta:
                    yield event.delta
                elif type(event) is str:
                    yield event

    @asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """Hold the session for one run: streams left suspended are closed first (their
        cleanup stores what they had), and a run still going elsewhere is waited for."""
        for left in list(self._streams):
            if not left.ag_running:  # a running one is this turn's own stream
                self._streams.discard(left)
                await left.aclose()
        async with self._one_run:
            yield

    def cancel_tool_call(self, call_id: str) -> bool:
        """Cancel one running tool call (its id is in ``on_tool``'s context): it answers "Tool
        call cancelled." and the turn goes on. False if no such call is running."""
        return self._in_flight.cancel(call_id)

    def save(self) -> Awaitable[None] | None:
        """Save the conversation to ``store`` (awaitable if the store's ``save`` is). A tether
        store keeps every message as it is appended: nothing is left to do."""
        if self.store is None:
            raise ValueError("this session has no store to save to (pass store=)")
        if isinstance(self.store, SessionOpener):
            return None
        snapshot = snapshot_of(self.session_id, self.system, self._messages)
        done = self.store.save(self.session_id, snapshot)
        return done if inspect.isawaitable(done) else None

    # -- the run ----------------------------------------------------------------------------------

    async def resume(
        self,
        approve: Iterable[str] = (),
        deny: Mapping[str, str] | None = None,
        *,
        answers: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> str:
        """Go on from a ``send`` that paused (``RunPaused``), in this process or any other on
        the same store: the calls in ``approve`` run with their stored arguments, those in
        ``deny`` get "Tool call denied: <reason>", a call that waits for the user's input runs
        again with ``answers[call id][question key]`` (a dict, or None to decline; as
        ``Agent.resume``); the answer, as ``send`` gives it."""
        return await self._answer(None, decisions=(tuple(approve), dict(deny or {}), answers or {}))

    async def _answer(
        self,
        user_input: str | Message | None,
        output: Any = None,
        decisions: Decided | None = None,
    ) -> str:
        answer = ""
        run = self._run(user_input, output, decisions)
        async with self._turn(), aclosing(run) as events:
            async for event in events:
                if type(event) is str:
                    answer = event
                elif type(event) is SessionEndEvent and event.error is None:
                    answer = self._final
        return answer

    async def _run(
        self,
        user_input: str | Message | None,
        output: Any = None,
        decisions: Decided | None = None,
    ) -> AsyncGenerator[StreamEvent | str, None]:
        """One run's events (a typed run's value kept in ``_output``); the round-limit message
        comes as a plain string."""
        await self._ready()
        self._limited, self._final = False, ""
        failure: BaseException | None = None
        watch = CompleteCalls() if self._ask_early else None
        try:
            before = self.total_usage  # a run's own total (sub-agents' included) replaces its sum
            async with self._stream(user_input, output, decisions) as run:
                async for event in run:
                    if watch is not None:
                        watch = self._watch_calls(watch, event)
                    if type(event) is Error:
                        failure = self._failure(event.exception)
                        if failure is None:
                            yield self._limit_text()
                        continue
                    self._count_usage(event, before)
                    if type(event) is SessionEndEvent and event.error is None:
                        self._final = await run.get_final_text()
                        self._output = await run.get_output()
                    yield event
        except ConflictError:
            self._stale = True
            raise
        finally:
            if self._hooks is not None:
                self._hooks.forget()
            self._messages = await self._context.get_history()
        if failure is not None:
            raise failure

    async def _ready(self) -> None:
        """Refuse a session not entered; (re)open the store when it is not open or went stale."""
        if self._exits is None and self._tools.unopened:
            raise RuntimeError("enter the session first: `async with AgentSession(...) as s`")
        if self._pending is not None or not self._opened or self._stale:
            await self._open_store()

    def _watch_calls(self, watch: CompleteCalls, event: StreamEvent) -> CompleteCalls:
        """Ask early about each call whose arguments ``event`` completes; each turn's calls are
        its own, so a new iteration starts a new watch."""
        if type(event) is IterationStart:
            watch = CompleteCalls()
            self._hooks.forget()  # type: ignore[union-attr]
        self._approve_early(watch.see(event))
        return watch

    def _failure(self, exc: BaseException) -> BaseException | None:
        """The error a run's ``Error`` event raises at its end, or None when the round limit
        stopped it (a message instead); a conflict marks the history stale."""
        self._stale = self._stale or isinstance(exc, ConflictError)
        if isinstance(exc, MaxIterationsError):
            self._limited = True
            return None
        return exc

    def _count_usage(self, event: StreamEvent, before: Usage) -> None:
        """The usage of the last reply and of the session, from a run's events."""
        if type(event) is IterationEnd:
            self.last_usage = event.usage
            self.total_usage = self.total_usage + event.usage
        elif type(event) is SessionEndEvent:
            self.total_usage = before + event.total_usage

    def _stream(
        self, user_input: str | Message | None, output: Any, decisions: Decided | None
    ) -> AgentStream:
        if decisions is None:
            return self._agent.run_stream(user_input, self._context, output=output)
        approve, deny, answers = decisions
        return self._agent.resume_stream(
            self._context, approve, deny, answers=answers or None, output=output
        )

    def _approve_early(self, blocks: list[ToolUseBlock]) -> None:
        assert self._hooks is not None
        for block in blocks:
            tool = self._tools.offered(block.name)
            if tool is not None:
                self._hooks.ask_early(tool, block)

    def _limit_text(self) -> str:
        return limit_text(self.max_tool_rounds)

    def _error_text(self, format_error: ToolErrorFormatter) -> Callable[..., str]:
        def text(name: str, args: Mapping[str, Any], exc: BaseException) -> str:
            tool = self._tools.offered(name)
            if tool is None:  # the session's own tool search
                return raised_text(name, args, exc)
            return format_error(tool, args, exc)

        return text


_UNKNOWN = (LookupError, FileNotFoundError)  # a snapshot store's load, of an id it does not know


def _cache_keyed(transport: CompletionTransport, session_id: str) -> CompletionTransport:
    """The transport asking OpenAI to keep this session's prompt prefix under its id
    (``prompt_cache_key``), unless it names a key of its own. Only on OpenAI's own host: a
    compatible server may refuse a field it does not know."""
    if (
        isinstance(transport, TakesOptions)
        and getattr(transport, "provider", None) == "openai"
        and getattr(transport, "base_url", None) == getattr(transport, "default_base_url", "")
        and transport.options.prompt_cache_key is None
    ):
        return transport.with_options(prompt_cache_key=session_id)
    return transport


def _transport(client: CompletionTransport | ChatClient | str) -> CompletionTransport:
    if isinstance(client, str):
        from ..providers import transport  # noqa: PLC0415 - a door loads on demand

        return transport(client)
    if callable(getattr(client, "stream_chat", None)):
        return ChatClientTransport(cast(ChatClient, client))
    if not callable(getattr(client, "stream", None)):
        raise TypeError(
            "client must be a transport (with .stream), a client with .stream_chat or a model "
            f"string, got {client!r}"
        )
    return cast(CompletionTransport, client)


def _is_async_scope(client: Any) -> bool:
    """Whether ``client`` is an async context manager (a chat client is entered with the
    session)."""
    kind = type(client)
    return hasattr(kind, "__aenter__") and hasattr(kind, "__aexit__")

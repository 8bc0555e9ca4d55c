"""The engine seam: ``Middleware`` wraps every run, and every model call and tool call in it.

It is the one mechanism for what brackets or replaces a call (tracing spans, a session's
``on_tool``, durable activities, caching, rate limits). The first middleware in the list is the
outermost. An agent without middleware calls the transport and the tools directly.
"""

from __future__ import annotations

from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from ..context import ContextStore
from ..events import StreamEvent
from ..messages import Message, ToolResultBlock, ToolUseBlock
from ..tools.tool import Tool
from ..transports.base import CompletionTransport
from ..types import ToolSpec

__all__ = [
    "Middleware",
    "ModelHandler",
    "ModelRequest",
    "RunHandler",
    "RunRequest",
    "ToolHandler",
    "ToolRequest",
    "as_generator",
    "call_transport",
    "model_chain",
    "run_chain",
    "tool_chain",
]


@dataclass(frozen=True, slots=True, eq=False)
class RunRequest:
    """One run of an agent. Its model and tool requests point back to it (``request.run``), so
    one middleware object can keep per-run state for runs going on at once."""

    agent: Any  # the AgentConfig (typed loosely: the config module imports this one)
    context: ContextStore
    user_message: Any  # what the run starts with (text, blocks, a Message, or None)

    @property
    def session_id(self) -> str | None:
        """The stored session's id, when the context has one."""
        found = getattr(self.context, "session_id", None)
        return found if isinstance(found, str) else None


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model call (one attempt; retries call the chain again with ``attempt`` + 1).

    ``messages`` is the run's history as sent, not a copy: read it, never change it, and copy it
    to keep it past the call (the run goes on appending to it). ``purpose`` is "compaction" for
    the call that summarises the history (``Compaction``), "reply" for the run's own replies.
    """

    messages: Sequence[Message]
    tools: Sequence[ToolSpec]
    system: str
    iteration: int
    transport: CompletionTransport
    attempt: int = 1
    run: RunRequest | None = None
    purpose: Literal["reply", "compaction"] = "reply"


@dataclass(frozen=True, slots=True)
class ToolRequest:
    """One tool call: the model's block and the tool it names (None when no such tool exists)."""

    block: ToolUseBlock
    tool: Tool | None
    iteration: int
    run: RunRequest | None = None

    @property
    def id(self) -> str:
        """The call's id."""
        return self.block.id

    @property
    def name(self) -> str:
        """The tool name the model used."""
        return self.block.name

    @property
    def input(self) -> Mapping[str, Any]:
        """The arguments the model sent (after JSON repair)."""
        return self.block.input


def call_transport(request: ModelRequest) -> AsyncIterator[StreamEvent]:
    """The model call itself: the innermost handler of a model-call chain."""
    return request.transport.stream(request.messages, request.tools, request.system)


H = TypeVar("H")

RunHandler = Callable[[RunRequest], AsyncIterator[StreamEvent]]
"""Makes one run: its events, ending with ``SessionEndEvent``."""

ModelHandler = Callable[[ModelRequest], AsyncIterator[StreamEvent]]
"""Makes one model call: the events of one reply, ending with ``IterationEnd``."""

ToolHandler = Callable[[ToolRequest], Awaitable[ToolResultBlock]]
"""Makes one tool call: its result (failures included, as error results)."""


class Middleware:
    """Wraps runs and calls; override any method (the defaults pass it on unchanged).

    ``wrap_run`` returns the run's events and ``wrap_model_call`` a reply's events (write them as
    async generators, and close what ``call_next`` returned when done: ``contextlib.aclosing``);
    ``wrap_tool_call`` returns the call's result. A call wrapper may call ``call_next`` (once, or
    again to retry), change the request first, or not call it at all and answer itself.
    """

    def wrap_run(self, run: RunRequest, call_next: RunHandler) -> AsyncIterator[StreamEvent]:
        """The events of one run."""
        return call_next(run)

    def wrap_model_call(
        self, request: ModelRequest, call_next: ModelHandler
    ) -> AsyncIterator[StreamEvent]:
        """The events of one model call."""
        return call_next(request)

    async def wrap_tool_call(self, call: ToolRequest, call_next: ToolHandler) -> ToolResultBlock:
        """The result of one tool call."""
        return await call_next(call)


def _overrides(middleware: object, name: str) -> bool:
    own = getattr(type(middleware), name, None)
    return own is not None and own is not getattr(Middleware, name)


def _chain(
    middleware: Sequence[object], method: str, innermost: H, link: Callable[[Any, H], H]
) -> H | None:
    """``innermost`` wrapped by each middleware that overrides ``method``, the first outermost."""
    wrappers = [m for m in middleware if _overrides(m, method)]
    if not wrappers:
        return None
    handler = innermost
    for m in reversed(wrappers):
        handler = link(m, handler)
    return handler


def run_chain(middleware: Sequence[object], innermost: RunHandler) -> RunHandler | None:
    """``innermost`` wrapped by every middleware that wraps runs; None if none does."""
    return _chain(middleware, "wrap_run", innermost, lambda m, n: _events_link(m.wrap_run, n))


def model_chain(middleware: Sequence[object], innermost: ModelHandler) -> ModelHandler | None:
    """``innermost`` wrapped by every middleware that wraps model calls; None if none does."""
    return _chain(
        middleware, "wrap_model_call", innermost, lambda m, n: _events_link(m.wrap_model_call, n)
    )


def _events_link(wrap: Any, call_next: Any) -> Any:
    """A handler giving ``wrap(request, call_next)``: a run's or a model call's events."""

    def handler(request: Any) -> AsyncIterator[StreamEvent]:
        events: AsyncIterator[StreamEvent] = wrap(request, call_next)
        return events

    return handler


def tool_chain(middleware: Sequence[object], innermost: ToolHandler) -> ToolHandler | None:
    """``innermost`` wrapped by every middleware that wraps tool calls; None if none does."""
    return _chain(middleware, "wrap_tool_call", innermost, _tool_link)


def _tool_link(middleware: Any, call_next: ToolHandler) -> ToolHandler:
    wrap = middleware.wrap_tool_call

    async def handler(call: ToolRequest) -> ToolResultBlock:
        result: ToolResultBlock = await wrap(call, call_next)
        return result

    return handler


def check_middleware(middleware: Sequence[object]) -> None:
    """Refuse entries that wrap nothing (a likely mistake, e.g. a class instead of an object)."""
    for m in middleware:
        if isinstance(m, type):
            raise TypeError(f"middleware {m.__name__} is a class; pass an instance: {m.__name__}()")
        kind = type(m)
        if not any(hasattr(kind, name) for name in _METHODS):
            raise TypeError(
                f"middleware {m!r}: its class defines none of wrap_run, wrap_model_call, "
                "wrap_tool_call"
            )


_METHODS = ("wrap_run", "wrap_model_call", "wrap_tool_call")


def as_generator(events: AsyncIterator[StreamEvent]) -> AsyncGenerator[StreamEvent, None]:
    """``events`` as an async generator (what a wrapper returned may be any async iterator), so
    it can be closed with ``aclose``."""
    if isinstance(events, AsyncGenerator):
        return events
    return _generator(events)


async def _generator(events: AsyncIterator[StreamEvent]) -> AsyncGenerator[StreamEvent, None]:
    async for event in events:
        yield event

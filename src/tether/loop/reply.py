"""One model reply: open the stream (retrying failures before the first event), collect its events
into the assistant message and the tool calls it asks for (``ReplyStream``, which the loop reads
directly, and ``ReplyBuilder``)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from ..base.clock import Clock
from ..base.interrupt import Interrupt
from ..errors import RunCancelled, StreamContractError
from ..events import (
    Error,
    IterationEnd,
    ReasoningDelta,
    Retrying,
    StreamEvent,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
)
from ..messages import (
    ContentBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolUseBlock,
    text_message,
)
from ..tools.repair import parse_arguments
from ..tools.results import describe_exception
from ..transports.base import CompletionTransport
from ..transports.retry import RetryPolicy
from ..types import ToolSpec
from .middleware import ModelHandler, ModelRequest, RunRequest
from .output import DONE

if TYPE_CHECKING:
    from .control import CancellationToken

__all__ = [
    "ModelSettings",
    "ReplyBuilder",
    "ReplySource",
    "ReplyStream",
    "StreamedCall",
    "Watch",
    "interruptible",
    "tool_use",
]


class _Reasoning:
    __slots__ = ("id", "parts", "provider", "redacted", "signature")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.signature: str | None = None
        self.redacted = False
        self.id: str | None = None
        self.provider: str | None = None

    def take(self, event: ReasoningDelta) -> None:
        """Add one delta: its text, its piece of the signature, and what it says of the block."""
        if event.delta:
            self.parts.append(event.delta)
        if event.signature is not None:
            self.signature = (self.signature or "") + event.signature
        self.redacted = self.redacted or event.redacted
        if event.id is not None:
            self.id = event.id
        if event.provider is not None:
            self.provider = event.provider


class StreamedCall:
    """A tool call as it streams: its id, name and the pieces of its arguments so far."""

    __slots__ = ("id", "name", "parts")

    def __init__(self, id: str, name: str) -> None:
        self.id = id
        self.name = name
        self.parts: list[str] = []


class ReplyBuilder:
    """Accumulates one reply's events; ``build()`` gives the assistant message and its tool
    calls."""

    __slots__ = ("calls", "end", "reasoning", "texts")

    def __init__(self) -> None:
        self.texts: dict[int, list[str]] = {}
        self.reasoning: dict[int, _Reasoning] = {}
        self.calls: dict[int, StreamedCall] = {}
        self.end: IterationEnd | None = None

    def add(self, event: StreamEvent) -> None:
        """Take any model event of the reply (``stream_reply`` inlines the text branch: it runs
        once per delta)."""
        kind = type(event)
        if kind is TextDelta:
            assert isinstance(event, TextDelta)
            parts = self.texts.get(event.index)
            if parts is None:
                self.texts[event.index] = [event.delta]
            else:
                parts.append(event.delta)
        elif kind is IterationEnd:
            assert isinstance(event, IterationEnd)
            self.end = event
        else:
            self.feed(event)

    def feed(self, event: StreamEvent) -> None:
        """Take a non-text model event (other event kinds are ignored). An ``Error`` is how a
        transport written for axio reports a failed stream: the reply fails with it."""
        kind = type(event)
        if kind is Error:
            assert isinstance(event, Error)
            raise event.exception
        if kind is ToolInputDelta:
            assert isinstance(event, ToolInputDelta)
            call = self.calls.get(event.index)
            if call is None:  # a lenient reading of a stream that skipped ToolUseStart
                call = self.calls[event.index] = StreamedCall(event.tool_use_id, "")
            call.parts.append(event.partial_json)
        elif kind is ToolUseStart:
            assert isinstance(event, ToolUseStart)
            self.calls[event.index] = StreamedCall(event.tool_use_id, event.name)
        elif kind is ReasoningDelta:
            assert isinstance(event, ReasoningDelta)
            r = self.reasoning.get(event.index)
            if r is None:
                r = self.reasoning[event.index] = _Reasoning()
            r.take(event)

    def text(self) -> str:
        """The answer text so far, blocks in index order."""
        if len(self.texts) < 2:
            for parts in self.texts.values():  # the lone block
                return "".join(parts)
            return ""
        return "".join("".join(self.texts[i]) for i in sorted(self.texts))

    def build(self) -> tuple[Message | None, list[ToolUseBlock]]:
        """The assistant message (None when the model said nothing) and its tool calls in order."""
        if not self.calls and not self.reasoning and len(self.texts) == 1:  # text alone
            (parts,) = self.texts.values()
            text = "".join(parts)
            return (text_message("assistant", text) if text else None), []
        blocks: list[tuple[int, ContentBlock]] = []
        for i, parts in self.texts.items():
            text = "".join(parts)
            if text:
                blocks.append((i, TextBlock(text)))
        for i, r in self.reasoning.items():
            thought = ReasoningBlock("".join(r.parts), r.signature, r.redacted, r.id, r.provider)
            blocks.append((i, thought))
        calls = self._call_blocks(blocks)
        if not blocks:
            return None, calls
        if len(blocks) == 1:
            return Message("assistant", (blocks[0][1],)), calls
        blocks.sort(key=_index)
        if len(calls) > 1:
            calls = [b for _, b in blocks if type(b) is ToolUseBlock]
        return Message("assistant", tuple([b for _, b in blocks])), calls

    def _call_blocks(self, blocks: list[tuple[int, ContentBlock]]) -> list[ToolUseBlock]:
        """The reply's calls as blocks in stream order, each also added to ``blocks`` at its
        index; ids checked first where two may clash or one may be empty."""
        if _ids_to_check(self.calls):
            _unique_ids(self.calls.values())
        calls: list[ToolUseBlock] = []
        for i, c in self.calls.items():
            block = tool_use(c)
            calls.append(block)
            blocks.append((i, block))
        return calls


def _ids_to_check(calls: dict[int, StreamedCall]) -> bool:
    """Whether a response's call ids may repeat or be empty (a lone call with an id cannot)."""
    if len(calls) > 1:
        return True
    for call in calls.values():  # the lone call
        return not call.id
    return False


def _unique_ids(calls: Iterable[StreamedCall]) -> None:
    """Give every call of one response its own id (providers reject repeats and empty ones):
    a repeated or empty id gets a numbered suffix, sent back the same way in the results."""
    seen: set[str] = set()
    for c in calls:
        if c.id and c.id not in seen:
            seen.add(c.id)
            continue
        base, n = c.id or "call", 2
        while f"{base}_{n}" in seen:
            n += 1
        c.id = f"{base}_{n}"
        seen.add(c.id)


def _index(item: tuple[int, Any]) -> int:
    return item[0]


def tool_use(call: StreamedCall) -> ToolUseBlock:
    """A call's block, its arguments read (and repaired) from what streamed."""
    raw = "".join(call.parts)
    parsed = parse_arguments(raw)
    if parsed.value is None:
        return ToolUseBlock(call.id, call.name, {}, raw, parsed.error or "unreadable arguments")
    keep_raw = None if parsed.strategy in ("direct", "empty") else raw
    return ToolUseBlock(call.id, call.name, parsed.value, keep_raw)


async def _close(stream: AsyncIterator[StreamEvent]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


async def _interruptible(stream: AsyncIterator[StreamEvent], interrupt: Interrupt) -> StreamEvent:
    """The next event, unless the run's cancellation token fires while it is awaited."""
    if interrupt.requested:  # fired while the consumer had the event
        raise RunCancelled("the run was cancelled while the model was answering")
    outside = interrupt.task.cancelling()  # cancel requests that are not the token's
    interrupt.inside = True
    try:
        event = await stream.__anext__()
    except BaseException:  # however the await ended, it is no longer one the token may cut
        if interrupt.settle() and interrupt.task.cancelling() <= outside:
            raise RunCancelled("the run was cancelled while the model was answering") from None
        raise
    interrupt.settle()
    return event


async def interruptible(
    stream: AsyncIterator[StreamEvent], cancel: CancellationToken | None
) -> AsyncGenerator[StreamEvent, None]:
    """``stream``'s events until ``cancel`` fires (then ``RunCancelled``, at once, even inside
    an await): a model call made outside a reply (a summary, say) stops as a reply does."""
    if cancel is None:
        async for event in stream:
            yield event
        return
    interrupt = cancel.watch()
    if interrupt is None:
        raise RunCancelled("the run was cancelled")
    try:
        while True:
            try:
                event = await _interruptible(stream, interrupt)
            except StopAsyncIteration:
                return
            yield event
    finally:
        cancel.unwatch(interrupt)


class ModelSettings(Protocol):
    """The agent's model settings a reply reads (``AgentConfig`` is one)."""

    @property
    def transport(self) -> CompletionTransport: ...
    @property
    def system(self) -> str: ...
    @property
    def retry(self) -> RetryPolicy: ...
    @property
    def clock(self) -> Clock: ...


class ReplySource(Protocol):
    """The run a reply belongs to (the loop's ``Run`` is one): its model settings (the agent's,
    or a typed run's), cancellation token, model middleware (None: none) and the run as
    middleware sees it."""

    @property
    def model(self) -> ModelSettings: ...
    @property
    def cancel(self) -> CancellationToken | None: ...
    @property
    def model_chain(self) -> ModelHandler | None: ...
    @property
    def request(self) -> RunRequest | None: ...


def _retry_delay(agent: ModelSettings, exc: BaseException, attempt: int) -> float | None:
    """How long to wait before retrying the attempt that failed with ``exc``; None when it is
    not retried (cancellation, or the policy says no)."""
    if not isinstance(exc, Exception) or isinstance(exc, RunCancelled):
        return None
    if not agent.retry.should_retry(exc, attempt):
        return None
    return agent.retry.delay(attempt, exc, agent.clock.random)


async def _wait_to_retry(source: ReplySource, delay: float, exc: BaseException) -> None:
    """Wait ``delay`` on the agent's clock, unless the run is cancelled meanwhile."""
    clock = source.model.clock
    if source.cancel is None:
        await clock.sleep(delay)
    elif await source.cancel.sleep(delay, clock):
        raise RunCancelled("the run was cancelled while waiting to retry") from exc


Watch: TypeAlias = Callable[[AsyncIterator[StreamEvent]], AsyncIterator[StreamEvent]]
"""What follows a reply's stream as the loop reads it (calls that start early: ``CallStart``)."""


class ReplyStream:
    """One model reply of ``source``'s run, read by the loop itself, with no generator between
    the transport's stream and the run's: ``next()`` gives the reply's events in order (into
    ``reply``), ``finish`` takes its ``IterationEnd``, ``close`` lets the stream go.

    The first ``next()`` opens the stream (through the model middleware, if any); a failure
    before the first event is retried per the agent's ``retry``, each retry a ``Retrying``
    event, after which ``next()`` waits and opens it again. Then ``next`` is the stream's own
    ``__anext__`` (interruptible by the run's cancellation token, if it has one): it raises
    ``StopAsyncIteration`` at the stream's end, which before an ``IterationEnd`` breaks the
    stream contract (the loop says so). What stays the same all run is read from ``source``."""

    __slots__ = (
        "attempt",
        "interrupt",
        "iteration",
        "messages",
        "next",
        "reply",
        "source",
        "stream",
        "tools",
        "watch",
    )

    def __init__(
        self,
        source: ReplySource,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        iteration: int,
        watch: Watch | None,
    ) -> None:
        self.source, self.messages, self.tools, self.iteration = source, messages, tools, iteration
        self.watch = watch
        self.reply = ReplyBuilder()
        self.attempt = 0
        self.stream: AsyncIterator[StreamEvent] | None = None
        self.interrupt: Interrupt | None = None
        self.next: Callable[[], Awaitable[StreamEvent]] = self._first

    async def _first(self) -> StreamEvent:
        """The reply's first event (from then on ``next`` reads the stream), or a ``Retrying``
        (then ``next`` waits and tries again)."""
        cancel = self.source.cancel
        if cancel is not None and self.attempt == 0:
            self.interrupt = cancel.watch()
            if self.interrupt is None:
                raise RunCancelled("the run was cancelled")
        self.attempt += 1
        stream = self.stream = self._open()
        interrupt = self.interrupt
        try:
            event = await (
                stream.__anext__() if interrupt is None else _interruptible(stream, interrupt)
            )
        except StopAsyncIteration:
            raise StreamContractError("the transport's stream ended before any event") from None
        except BaseException as exc:
            return await self._failed(exc)
        self.next = (
            stream.__anext__ if interrupt is None else partial(_interruptible, stream, interrupt)
        )
        return event

    def _open(self) -> AsyncIterator[StreamEvent]:
        """One attempt's stream: the transport's, through the model middleware (if any)."""
        agent, chain = self.source.model, self.source.model_chain
        stream = (
            agent.transport.stream(self.messages, self.tools, agent.system)
            if chain is None
            else chain(
                _model_request(self.source, self.messages, self.tools, self.iteration, self.attempt)
            )
        )
        return stream if self.watch is None else self.watch(stream)

    async def _failed(self, exc: BaseException) -> Retrying:
        """The attempt failed before its first event: the ``Retrying`` event, if it is retried
        (else ``exc`` goes on)."""
        stream, self.stream = self.stream, None
        assert stream is not None
        await _close(stream)
        delay = _retry_delay(self.source.model, exc, self.attempt)
        if delay is None:
            raise exc
        self.next = partial(self._again, delay, exc)
        return Retrying(self.attempt, delay, describe_exception(exc))

    async def _again(self, delay: float, exc: BaseException) -> StreamEvent:
        """Wait ``delay``, then try again."""
        await _wait_to_retry(self.source, delay, exc)
        return await self._first()

    async def finish(self, end: IterationEnd) -> None:
        """Take the reply's ``IterationEnd``; read on to the stream's end, so wrappers around it
        (middleware) finish too (the run then lets it go: ``close``)."""
        self.reply.end = end
        try:
            extra = await self.next()
        except StopAsyncIteration:
            return
        raise StreamContractError(f"the transport's stream went on after IterationEnd: {extra!r}")

    def close(self) -> Awaitable[None]:
        """Let the stream go (closed, and no longer watched by the cancellation token); once."""
        stream, self.stream = self.stream, None
        if self.interrupt is not None:
            return self._unwatched(stream)
        aclose = None if stream is None else getattr(stream, "aclose", None)
        return DONE if aclose is None else aclose()

    async def _unwatched(self, stream: AsyncIterator[StreamEvent] | None) -> None:
        interrupt, self.interrupt = self.interrupt, None
        try:
            if stream is not None:
                await _close(stream)
        finally:
            assert self.source.cancel is not None and interrupt is not None
            self.source.cancel.unwatch(interrupt)


def _model_request(
    source: ReplySource,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    iteration: int,
    attempt: int,
) -> ModelRequest:
    """The middleware's view of one attempt at a reply."""
    agent = source.model
    return ModelRequest(
        messages, tools, agent.system, iteration, agent.transport, attempt, source.request
    )

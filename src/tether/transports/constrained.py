"""Constrained tool calls (``Agent(constrained_calls=...)``): a transport over another that
holds each reply with tools on offer to the JSON format of ``constrained_format``.

The tools go into the system prompt and the reply's schema into the request's response format
(llama.cpp, vLLM and Ollama turn it into a grammar), instead of the request's ``tools``; the
reply is read back (``constrained_decode``) into the events every transport gives: the
answer's text as it streams, or one ``ToolUseStart``/``ToolInputDelta`` per call and an
``IterationEnd`` whose stop reason is ``TOOL_USE``. The loop, the stores and tracing see
ordinary tool calls. A request with no tools on offer passes through unchanged.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ..events import IterationEnd, StreamEvent, TextDelta, ToolInputDelta, ToolUseStart
from ..messages import Message
from ..types import StopReason, ToolSpec
from .base import ClosableTransport, CompletionTransport, PhaseListener, ReportsProgress
from .constrained_decode import ListedCall, ReplyReader
from .constrained_format import reply_format, shown_history, told_system

__all__ = ["ConstrainedCalls", "ConstrainsCalls", "unconstrained", "with_constrained_calls"]


@runtime_checkable
class ConstrainsCalls(Protocol):
    """A transport that says what it does with constrained calls: ``True``, on by default (the
    local model's chat wire); ``False``, it cannot; ``None``, it can when asked."""

    @property
    def constrains_calls(self) -> bool | None: ...


def with_constrained_calls(
    transport: CompletionTransport, wanted: bool | None
) -> CompletionTransport:
    """The transport an agent uses under ``constrained_calls=wanted`` (None: the transport's own
    default). Asking for them of a transport that cannot hold a reply to a JSON schema is a
    ``ValueError`` naming it."""
    if wanted is not None and type(wanted) is not bool:
        raise TypeError(f"constrained_calls must be True, False or None; got {wanted!r}")
    if type(transport) is ConstrainedCalls:
        return transport.inner if wanted is False else transport
    says: bool | None = getattr(transport, "constrains_calls", None)  # ConstrainsCalls, or None
    if not (says if wanted is None else wanted):
        return transport
    if says is False or not callable(getattr(transport, "with_response_format", None)):
        named = (
            repr(transport) if " object at 0x" not in repr(transport) else type(transport).__name__
        )
        raise ValueError(
            f"constrained_calls=True needs a transport that can hold the model's reply to a JSON"
            f" schema (a response format), such as an OpenAI-compatible server's: llama.cpp,"
            f" vLLM, Ollama, or the local model's chat wire; {named} cannot."
            " Leave constrained_calls unset, or pass False."
        )
    return ConstrainedCalls(transport)


def unconstrained(transport: CompletionTransport) -> CompletionTransport:
    """``transport`` without constrained calls (a typed run's turns ask in their own way)."""
    return transport.inner if type(transport) is ConstrainedCalls else transport


class ConstrainedCalls:
    """``inner`` with each reply that may call tools held to an answer or a list of calls.

    ``inner`` must take a response format (``with_response_format``, or ``with_options``).
    A copy asking for a response format of its own (typed output) is ``inner``'s: the two
    formats cannot both hold one reply.
    """

    __slots__ = ("_held", "inner")

    def __init__(self, inner: CompletionTransport) -> None:
        self.inner = inner
        self._held: tuple[Sequence[ToolSpec], str, str, CompletionTransport] | None = None

    def __repr__(self) -> str:
        return f"ConstrainedCalls({self.inner!r})"

    @property
    def model(self) -> str:
        """The inner transport's model name (traces name their spans after it)."""
        return str(getattr(self.inner, "model", ""))

    @property
    def provider(self) -> str:
        """The inner transport's provider (``gen_ai.provider.name``)."""
        return str(getattr(self.inner, "provider", ""))

    def on_phase(self, listener: PhaseListener) -> Callable[[], None]:
        """Hear the inner transport's phases (a local model starting), if it reports any."""
        if isinstance(self.inner, ReportsProgress):
            return self.inner.on_phase(listener)
        return _nothing

    async def aclose(self) -> None:
        """Close the inner transport (if it holds connections)."""
        if isinstance(self.inner, ClosableTransport):
            await self.inner.aclose()

    def with_options(self, **changes: Any) -> CompletionTransport:
        """The inner transport with ``changes``, still constrained unless they ask for a
        response format of their own or for no tool calls."""
        own = "response_format" in changes or changes.get("tool_choice") == "none"
        options = getattr(self.inner, "with_options", None)
        if options is None:
            if set(changes) == {"response_format"}:
                return self.with_response_format(changes["response_format"])
            raise TypeError(f"{self.inner!r} takes no options")
        changed: CompletionTransport = options(**changes)
        return changed if own else ConstrainedCalls(changed)

    def with_response_format(self, response_format: Mapping[str, Any]) -> CompletionTransport:
        """The inner transport asking for ``response_format`` (typed output), unconstrained."""
        made: CompletionTransport = self.inner.with_response_format(response_format)  # type: ignore[attr-defined]
        return made

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        if not tools:
            return self.inner.stream(messages, tools, system)
        held, told = self._holding(tools, system)
        return _read(held.stream(shown_history(messages), (), told))

    def _holding(self, tools: Sequence[ToolSpec], system: str) -> tuple[CompletionTransport, str]:
        """The inner transport held to the reply format for ``tools``, and the system prompt
        that describes them; made again only when the tools or the prompt change."""
        held = self._held
        if held is not None and held[1] == system and _same(held[0], tools):
            return held[3], held[2]
        form = reply_format(tools)
        options = getattr(self.inner, "with_options", None)
        if options is not None:
            transport = options(response_format=form)
        else:
            transport = self.inner.with_response_format(form)  # type: ignore[attr-defined]
        told = told_system(system, tools)
        self._held = (tuple(tools), system, told, transport)
        return transport, told


def _same(a: Sequence[ToolSpec], b: Sequence[ToolSpec]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _nothing() -> None:
    """Stops listening to a transport that reports nothing."""


async def _read(events: AsyncIterator[StreamEvent]) -> AsyncIterator[StreamEvent]:
    """The inner stream's events with the reply's JSON read back into text or calls."""
    reader = ReplyReader()
    index: int | None = None  # the block the reply's text came in
    try:
        async for event in events:
            kind = type(event)
            if kind is TextDelta:
                assert isinstance(event, TextDelta)
                index = event.index if index is None else index
                piece = reader.feed(event.delta)
                if piece:
                    yield TextDelta(index, piece)
            elif kind is IterationEnd:
                assert isinstance(event, IterationEnd)
                for out in _ending(reader, 0 if index is None else index, event):
                    yield out
            else:
                yield event
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


def _ending(reader: ReplyReader, index: int, end: IterationEnd) -> list[StreamEvent]:
    """The reply's last events: the rest of its answer, or its calls; then its end."""
    rest, calls = reader.finish()
    out: list[StreamEvent] = [TextDelta(index, rest)] if rest else []
    for offset, call in enumerate(calls):
        out.extend(_call_events(index + offset, call))
    if calls:
        end = dataclasses.replace(end, stop_reason=StopReason.TOOL_USE)
    out.append(end)
    return out


def _call_events(index: int, call: ListedCall) -> list[StreamEvent]:
    call_id = f"call_{uuid.uuid4().hex[:24]}"
    events: list[StreamEvent] = [ToolUseStart(index, call_id, call.name)]
    if call.arguments:
        events.append(ToolInputDelta(index, call_id, call.arguments))
    return events

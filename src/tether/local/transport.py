"""A transport for the offline model that starts it on first use (``tether.transport("local")``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

from ..events import StreamEvent
from ..messages import Message
from ..transports.base import ClosableTransport, CompletionTransport, PhaseListener
from ..types import ToolSpec
from .model import LocalModel
from .phases import PhaseRelay

if TYPE_CHECKING:
    from ..transports.base import TakesOptions

__all__ = ["LocalOptions", "LocalTransport", "local_transport"]

Wire = Literal["chat", "responses", "anthropic"]
_WIRES = ("chat", "responses", "anthropic")


class LocalTransport:
    """Speaks one wire format to a ``LocalModel`` that it starts lazily and owns.

    The first ``stream()`` fetches the weights if needed (with a progress bar) and starts the
    server; ``aclose()`` stops it. Options are the transport's (``temperature``, ``max_tokens``,
    ``stream``, …). It is a ``ReportsProgress``: ``on_phase`` listeners hear what the start is
    doing (checking, fetching or loading the weights), which the CLI and the chat page show.
    """

    def __init__(
        self, wire: Wire = "chat", *, model: LocalModel | None = None, **options: Any
    ) -> None:
        if wire not in _WIRES:
            raise ValueError(f"local wire format must be one of {', '.join(_WIRES)}; got {wire!r}")
        self.wire = wire
        self.local = model or LocalModel()
        self._options = options
        self._inner: CompletionTransport | None = None
        self._lock = asyncio.Lock()
        self._phases = PhaseRelay()

    provider = "local"  # what traces name as gen_ai.provider.name

    @property
    def model(self) -> str:
        """The local model's name (traces name it as the requested model)."""
        return self.local.model

    @property
    def constrains_calls(self) -> bool | None:
        """Constrained tool calls (``ConstrainsCalls``): the chat wire takes them when asked
        (None: not by default: on BFCL's non-live items they gained 31 points, but with them on
        example 01's 1.5B model called its tool again after every result until its iteration
        limit); the other wires cannot hold a reply to the schema they need (False)."""
        return None if self.wire == "chat" else False

    def __repr__(self) -> str:
        return f"LocalTransport({self.wire!r}, {self.local!r})"

    def on_phase(self, listener: PhaseListener) -> Callable[[], None]:
        """Tell ``listener`` each phase of the model's start from now on (on the event loop's
        thread; the phase under way first); the call returned stops that."""
        return self._phases.subscribe(listener)

    async def ready(self) -> CompletionTransport:
        """Start the model (once) and return the transport pointed at it."""
        async with self._lock:
            if self._inner is None:
                # Nobody listening: none, so the weights' own lines and bar show a download.
                progress = self._phases.reporter() if self._phases.listening else None
                await self.local.start(progress=progress)
                make = getattr(self.local, f"{self.wire}_transport")
                self._inner = make(**self._options)
            return self._inner

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        return _relay(self.ready, messages, tools, system)

    def with_options(self, **changes: Any) -> LocalOptions:
        """This transport with ``changes`` to its options (a typed run's response format, say),
        sharing its model and HTTP client."""
        return LocalOptions(self, changes)

    def with_response_format(self, response_format: Mapping[str, Any]) -> LocalOptions:
        """This transport asking for ``response_format`` (typed output)."""
        return LocalOptions(self, {"response_format": response_format})

    async def aclose(self) -> None:
        """Close the HTTP client and stop the model."""
        inner, self._inner = self._inner, None
        if isinstance(inner, ClosableTransport):
            await inner.aclose()
        await self.local.stop()

    async def __aenter__(self) -> LocalTransport:
        await self.ready()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class LocalOptions:
    """A ``LocalTransport`` with some options changed: it starts its base's model when first
    used and shares the base's HTTP client; closing it leaves both to the base.

    llama.cpp's Anthropic endpoint drops ``tool_choice``, so on that wire ``"none"`` is sent as
    no tools on offer (its conversion needs no definitions for the calls in the history)."""

    provider = "local"

    def __init__(self, base: LocalTransport, changes: Mapping[str, Any]) -> None:
        self.base = base
        self.changes = dict(changes)
        self._inner: CompletionTransport | None = None

    @property
    def model(self) -> str:
        """The local model's name."""
        return self.base.model

    @property
    def constrains_calls(self) -> bool | None:
        """As the base's (``LocalTransport.constrains_calls``)."""
        return self.base.constrains_calls

    def __repr__(self) -> str:
        return f"{self.base!r}.with_options({', '.join(sorted(self.changes))})"

    def on_phase(self, listener: PhaseListener) -> Callable[[], None]:
        """Hear the base's start (see ``LocalTransport.on_phase``)."""
        return self.base.on_phase(listener)

    def with_options(self, **changes: Any) -> LocalOptions:
        """The base with these changes and ``changes`` on top."""
        return LocalOptions(self.base, {**self.changes, **changes})

    def with_response_format(self, response_format: Mapping[str, Any]) -> LocalOptions:
        """The same, asking for ``response_format`` too."""
        return self.with_options(response_format=response_format)

    async def ready(self) -> CompletionTransport:
        """Start the base's model (once) and return its transport with the changes."""
        if self._inner is None:
            inner = await self.base.ready()
            self._inner = cast("TakesOptions", inner).with_options(**self.changes)
        return self._inner

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        if self.base.wire == "anthropic" and self.changes.get("tool_choice") == "none":
            tools = ()
        return _relay(self.ready, messages, tools, system)


async def _relay(
    ready: Callable[[], Awaitable[CompletionTransport]],
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    system: str,
) -> AsyncIterator[StreamEvent]:
    """The events of the transport ``ready`` gives, closing its stream whatever happens."""
    inner = await ready()
    events = inner.stream(messages, tools, system)
    try:
        async for event in events:
            yield event
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


def local_transport(wire: str = "chat", **options: Any) -> LocalTransport:
    """``tether.transport("local")`` / ``("local:responses")`` / ``("local:anthropic")``."""
    if wire not in _WIRES:
        raise ValueError(
            f"unknown local wire format {wire!r}; use local, local:responses or local:anthropic"
        )
    return LocalTransport(wire, **options)  # type: ignore[arg-type]

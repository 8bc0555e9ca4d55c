"""The seam between a wire format and the HTTP transport: ``WireCodec`` and ``StreamDecoder``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ...events import StreamEvent
from ...messages import Message
from ...types import ToolSpec
from ..options import ModelOptions
from ..sse import SSEEvent

__all__ = ["StreamDecoder", "WireCodec"]


class StreamDecoder(Protocol):
    """Turns one response's server-sent events into tether events."""

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        """Events completed by this SSE event (raise a ``TransportError`` for an error event)."""
        ...

    def finish(self) -> list[StreamEvent]:
        """The stream ended: the final events (the ``IterationEnd``), or raise if incomplete."""
        ...


class WireCodec(Protocol):
    """One provider wire format: request bodies out, events in. No I/O."""

    path: str

    def headers(self, api_key: str | None) -> dict[str, str]:
        """Authentication and version headers."""
        ...

    def encode(
        self,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        system: str,
        options: ModelOptions,
        stream: bool,
    ) -> dict[str, Any]:
        """The JSON request body."""
        ...

    def decoder(self) -> StreamDecoder:
        """A fresh decoder for one streamed response."""
        ...

    def parse(self, body: Any) -> list[StreamEvent]:
        """A whole (non-streamed) response as the events a stream would have given."""
        ...

"""The one seam between the loop and a model: ``CompletionTransport.stream``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..events import StreamEvent
from ..messages import Message
from ..types import ToolSpec

if TYPE_CHECKING:
    from .options import ModelOptions

__all__ = [
    "ClosableTransport",
    "CompletionTransport",
    "NamesModel",
    "NamesProvider",
    "TakesResponseFormat",
]


@runtime_checkable
class CompletionTransport(Protocol):
    """Streams one model reply.

    ``messages`` is the history to send (read it, never mutate it); ``tools`` the specs the model
    may call; ``system`` the system prompt. The stream yields ``TextDelta``/``ReasoningDelta``/
    ``ToolUseStart``/``ToolInputDelta`` events (each content block with its own ``index``) and ends
    with exactly one ``IterationEnd``. Failing before the first event lets the agent retry.
    """

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        """Start one model reply and yield its events."""
        ...


@runtime_checkable
class NamesModel(Protocol):
    """A transport that says which model it calls (traces name their spans after it)."""

    model: str


@runtime_checkable
class NamesProvider(Protocol):
    """A transport that says whose model it calls (``gen_ai.provider.name`` in traces)."""

    provider: str


@runtime_checkable
class ClosableTransport(Protocol):
    """A transport holding connections: whoever made it closes it with ``aclose``."""

    async def aclose(self) -> None:
        """Release what the transport holds."""
        ...


@runtime_checkable
class TakesOptions(Protocol):
    """A transport with ``ModelOptions`` that can be copied with some of them changed."""

    @property
    def options(self) -> ModelOptions: ...

    def with_options(self, **changes: Any) -> CompletionTransport:
        """This transport, sharing its connections, with ``changes`` to its options."""
        ...


@runtime_checkable
class TakesResponseFormat(Protocol):
    """A transport whose wire format can ask for JSON matching a schema (typed output)."""

    def with_response_format(self, response_format: Mapping[str, Any]) -> CompletionTransport:
        """This transport, sharing its connections, asking for ``response_format``."""
        ...

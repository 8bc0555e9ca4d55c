"""The one seam between the loop and a model: ``CompletionTransport.stream``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from ..events import StreamEvent
from ..messages import Message
from ..types import ToolSpec

if TYPE_CHECKING:
    from .options import ModelOptions

__all__ = [
    "FIRST_TOKEN",
    "ClosableTransport",
    "CompletionTransport",
    "NamesModel",
    "NamesProvider",
    "Phase",
    "PhaseListener",
    "ReportsProgress",
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


@dataclass(frozen=True, slots=True)
class Phase:
    """What a model is doing before it can answer (a local model starting): ``name`` for
    programs (``"loading_model"``), ``text`` for people (``"loading the model"``); reported once
    when it starts and again with ``done=True`` when it is over."""

    name: str
    text: str
    done: bool = False

    def over(self) -> Phase:
        """This phase, reported as over."""
        return Phase(self.name, self.text, done=True)


FIRST_TOKEN = Phase("first_token", "waiting for the first token")
"""The wait a caller shows itself: from a model call's start to its first event."""

PhaseListener: TypeAlias = Callable[[Phase], None]
"""Told each phase as it starts and ends (on the event loop's thread)."""


@runtime_checkable
class ReportsProgress(Protocol):
    """A transport that says what it is doing before its first event, which may take long (the
    local model fetches its weights and loads them on first use); the CLI and ``tether serve``
    show it."""

    def on_phase(self, listener: PhaseListener) -> Callable[[], None]:
        """Tell ``listener`` every phase from now on (first the one under way, if any), on the
        event loop's thread; the call returned stops that."""
        ...

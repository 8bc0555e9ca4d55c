"""The turn engine's data contracts (§14.7): options, provider state, snapshots, the model
boundary, tool requests and results. Plain frozen values; ``to_dict`` gives the camelCase JSON
the conformance vectors and journals use."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..messages import PromptMessage
from ..serial import JsonShape

__all__ = [
    "ContextState",
    "DelegatedStateRef",
    "Portability",
    "Reconciliation",
    "TurnError",
    "TurnModelRequest",
    "TurnModelResponse",
    "TurnOptions",
    "TurnSnapshot",
    "TurnStatus",
    "TurnToolRequest",
    "TurnToolResult",
]

Portability: TypeAlias = Literal["portable", "delegated", "opaque"]
"""portable: all model-visible state is local; delegated: it names provider-held state;
opaque: provider state that cannot be reconstructed for re-execution."""

TurnStatus: TypeAlias = Literal["success", "cancelled", "error", "reconciliation_required"]

_PORTABILITY = frozenset(("portable", "delegated", "opaque"))


@dataclass(frozen=True, slots=True)
class DelegatedStateRef(JsonShape):
    """A piece of provider-held state a later invocation depends on (e.g. a previous response)."""

    provider: str
    kind: str
    id: str


@dataclass(frozen=True, slots=True)
class ContextState(JsonShape):
    """How portable an invocation's context is, and the provider state it references."""

    portability: Portability = "portable"
    delegated_state: tuple[DelegatedStateRef, ...] = ()

    def __post_init__(self) -> None:
        if self.portability not in _PORTABILITY:
            raise ValueError(f"unknown portability {self.portability!r}")
        object.__setattr__(self, "delegated_state", tuple(self.delegated_state))


@dataclass(frozen=True, slots=True)
class TurnOptions(JsonShape):
    """Per-turn execution options. ``max_iterations`` counts model invocations (retries of one
    invocation are attempts, not iterations). ``parallel_tool_calls=True`` is refused: durable
    parallel batches need a contract the engine does not have yet, and it is never downgraded."""

    max_iterations: int = 10
    parallel_tool_calls: bool = False

    def problem(self) -> str | None:
        """Why these options cannot run a turn, or None."""
        if isinstance(self.max_iterations, bool) or not isinstance(self.max_iterations, int):
            return "TurnOptions.max_iterations must be an integer"
        if self.max_iterations < 1:
            return "TurnOptions.max_iterations must be >= 1"
        if self.parallel_tool_calls:
            return (
                "TurnOptions.parallel_tool_calls=true is not supported: tool calls run in "
                "request order, and the request is not downgraded silently"
            )
        return None


@dataclass(frozen=True, slots=True)
class TurnSnapshot(JsonShape):
    """The immutable context of one model invocation; every attempt of it reuses this."""

    id: str
    invocation_id: str
    iteration: int
    messages: tuple[PromptMessage, ...]
    stable_prefix_messages: int
    context_state: ContextState
    tool_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TurnToolRequest(JsonShape):
    """A tool call the model asked for: its id (``request_id``), the engine's stable
    ``execution_id`` (the effect's idempotency key), the tool and its arguments."""

    request_id: str
    execution_id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TurnToolResult(JsonShape):
    """A tool call's model-visible result; ``error_kind`` says why it failed
    (``permission_denied``, ``exception``, ``invalid_arguments``, ``tool_error``, ``not_run``)."""

    request_id: str
    execution_id: str
    name: str
    success: bool
    output: str
    error_kind: str | None = None


@dataclass(frozen=True, slots=True)
class TurnModelRequest(JsonShape):
    """One model invocation as the engine made it: its identity and its snapshot."""

    session_id: str
    turn_id: str
    invocation_id: str
    iteration: int
    attempt: int
    snapshot: TurnSnapshot


@dataclass(frozen=True, slots=True)
class TurnModelResponse(JsonShape):
    """What one invocation answered: assistant messages, tool requests in the model's order, the
    final output (None while tools were asked for) and the provider-state transition, if any."""

    invocation_id: str
    assistant: tuple[PromptMessage, ...] = ()
    tool_requests: tuple[TurnToolRequest, ...] = ()
    output: str | None = None
    stop_reason: str = "end_turn"
    next_state: ContextState | None = None


@dataclass(frozen=True, slots=True)
class Reconciliation(JsonShape):
    """An effect whose outcome is unknown: ``kind`` model or tool, ``id`` the invocation or
    execution id to query the provider or tool host with, and the error that left it unknown."""

    kind: Literal["model", "tool"]
    id: str
    error: str
    attempt: int = 1


@dataclass(frozen=True, slots=True)
class TurnError(JsonShape):
    """Why a turn did not succeed: ``kind`` (validation, max_iterations, unknown_tool, model,
    durability, reconciliation, internal) and a message."""

    kind: str
    message: str

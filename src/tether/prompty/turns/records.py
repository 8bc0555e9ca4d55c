"""What a turn writes and returns: its semantic events, its checkpoints, and the request and
result of one turn (§14.7 ``RunTurnRequest`` / ``RunTurnResult``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..messages import PromptMessage
from ..serial import JsonShape
from .data import (
    ContextState,
    Reconciliation,
    TurnError,
    TurnModelResponse,
    TurnOptions,
    TurnSnapshot,
    TurnStatus,
    TurnToolRequest,
    TurnToolResult,
)

__all__ = ["RunTurnRequest", "RunTurnResult", "TurnCheckpoint", "TurnEvent"]


@dataclass(frozen=True, slots=True)
class TurnEvent(JsonShape):
    """One event of a turn's semantic stream; ``sequence`` is monotonic across the journal and
    ``iteration`` the model round it belongs to (on terminal events: the rounds completed)."""

    sequence: int
    kind: str
    session_id: str
    turn_id: str
    iteration: int
    timestamp: str
    payload: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TurnCheckpoint(JsonShape):
    """The turn's state after a semantic boundary, enough to resume without repeating effects.

    ``boundary`` is model_response, tool_result, tool_round or reconciliation; ``last_sequence``
    the last event its state includes (its ``checkpoint_created`` event follows). ``messages`` is
    the conversation committed so far (``stable_prefix_messages`` of it cache-stable);
    ``pending_response`` the model response whose effects are not committed yet, with
    ``pending_tool_requests`` its remaining calls in order; ``tool_results`` every result the turn
    has, in request order.
    """

    id: str
    session_id: str
    turn_id: str
    run_id: str
    boundary: str
    iteration: int
    last_sequence: int
    messages: tuple[PromptMessage, ...]
    stable_prefix_messages: int
    context_state: ContextState
    completed_iterations: int
    active_invocation_id: str | None = None
    pending_response: TurnModelResponse | None = None
    pending_tool_requests: tuple[TurnToolRequest, ...] = ()
    tool_results: tuple[TurnToolResult, ...] = ()
    final_output_ready: bool = False
    reconciliation: Reconciliation | None = None
    _json_keys = (..., "reconciliation_required", "reconciliation")

    @property
    def reconciliation_required(self) -> bool:
        """True when an effect's outcome is unknown: resuming must not invoke anything first."""
        return self.reconciliation is not None


@dataclass(frozen=True, slots=True)
class RunTurnRequest:
    """One turn to run: its identity, the conversation so far, the inputs (recorded) and options.
    ``last_sequence`` is the durable journal's tail; the turn's events are numbered after it."""

    session_id: str
    turn_id: str
    messages: Sequence[PromptMessage] = ()
    inputs: Mapping[str, Any] = field(default_factory=dict)
    options: TurnOptions = field(default_factory=TurnOptions)
    last_sequence: int = 0

    def __post_init__(self) -> None:
        for name in ("session_id", "turn_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"RunTurnRequest.{name} must be a non-empty string")
        if isinstance(self.last_sequence, bool) or not isinstance(self.last_sequence, int):
            raise ValueError("RunTurnRequest.last_sequence must be an integer")
        if self.last_sequence < 0:
            raise ValueError("RunTurnRequest.last_sequence must be >= 0")
        object.__setattr__(self, "messages", tuple(self.messages))


@dataclass(frozen=True, slots=True)
class RunTurnResult(JsonShape):
    """How a turn ended: status, output, the snapshots of its invocations, its tool results in
    request order, its events (one monotonic sequence), the conversation and the last checkpoint
    (on a journal failure: the one that could not be written, as recovery state). ``warnings``
    is non-fatal recovery information (a post-commit journaling failure)."""

    status: TurnStatus
    session_id: str
    turn_id: str
    run_id: str
    output: str | None
    iterations: int
    snapshots: tuple[TurnSnapshot, ...]
    tool_results: tuple[TurnToolResult, ...]
    events: tuple[TurnEvent, ...]
    messages: tuple[PromptMessage, ...]
    context_state: ContextState
    checkpoint: TurnCheckpoint | None = None
    error: TurnError | None = None
    reconciliation: Reconciliation | None = None
    warnings: tuple[str, ...] = ()
    _json_keys = (..., "last_sequence")

    @property
    def last_sequence(self) -> int:
        """The sequence number of the turn's last written event (0 when none was)."""
        return self.events[-1].sequence if self.events else 0

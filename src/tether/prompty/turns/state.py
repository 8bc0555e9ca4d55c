"""``TurnState``: what one turn has so far (committed conversation, snapshots, the pending
response and its round's results, committed results) and the checkpoints made of it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ...messages import Message, ToolResultBlock
from ..messages import PromptMessage, from_tether
from .data import (
    ContextState,
    Reconciliation,
    TurnModelRequest,
    TurnModelResponse,
    TurnSnapshot,
    TurnToolRequest,
    TurnToolResult,
)
from .ports import IdGenerator
from .records import TurnCheckpoint

__all__ = ["TurnState"]


class TurnState:
    """One turn's state. A response is *pending* from its journaling until its effects commit:
    its tool results when the loop stores the round, its output at the final commit."""

    __slots__ = (
        "active",
        "checkpoint",
        "committed",
        "completed",
        "context_state",
        "halted",
        "ids",
        "pending",
        "results",
        "round_results",
        "run_id",
        "session_id",
        "snapshots",
        "stable_prefix",
        "turn_id",
    )

    def __init__(
        self,
        session_id: str,
        turn_id: str,
        run_id: str,
        ids: IdGenerator,
        messages: Sequence[Message],
    ) -> None:
        self.session_id = session_id
        self.turn_id = turn_id
        self.run_id = run_id
        self.ids = ids
        self.committed: tuple[PromptMessage, ...] = tuple(from_tether(messages))
        self.stable_prefix = len(self.committed)  # what the turn was given stays cache-stable
        self.context_state = ContextState()
        self.snapshots: list[TurnSnapshot] = []
        self.completed = 0  # model invocations answered
        self.active: TurnModelRequest | None = None
        self.pending: TurnModelResponse | None = None
        self.round_results: dict[str, TurnToolResult] = {}
        self.results: list[TurnToolResult] = []  # committed, in request order
        self.checkpoint: TurnCheckpoint | None = None
        self.halted = False

    def answered(self, response: TurnModelResponse) -> None:
        """A model invocation answered: its response is now pending."""
        if response.next_state is not None:
            self.context_state = response.next_state
        self.completed += 1
        self.pending, self.round_results = response, {}

    def requested(self, call_id: str) -> TurnToolRequest | None:
        """The pending response's request with this call id, if any."""
        pending = self.pending
        if pending is None:
            return None
        return next((r for r in pending.tool_requests if r.request_id == call_id), None)

    def remaining(self) -> tuple[TurnToolRequest, ...]:
        """The pending response's requests without a result yet, in request order."""
        pending = self.pending
        if pending is None:
            return ()
        return tuple(r for r in pending.tool_requests if r.request_id not in self.round_results)

    def commit_round(
        self, results: Sequence[ToolResultBlock], cancelled: bool, conversation: Sequence[Message]
    ) -> list[TurnToolResult] | None:
        """The loop stored ``results``: the pending round's results in request order, now
        committed; None when they are not the pending round's, or cancellation left some call
        unrun (the round then stays pending, as its last checkpoint says)."""
        pending = self.pending
        blocks: Mapping[str, ToolResultBlock] = {b.tool_use_id: b for b in results}
        if self.halted or pending is None:
            return None
        if not any(r.request_id in blocks for r in pending.tool_requests):
            return None
        missing = self.remaining()
        if missing and cancelled:
            return None
        for r in missing:  # calls the loop answered without dispatching them
            block = blocks.get(r.request_id)
            text = block.text if block is not None else ""
            self.round_results[r.request_id] = TurnToolResult(
                r.request_id, r.execution_id, r.name, False, text, "not_run"
            )
        ordered = [self.round_results[r.request_id] for r in pending.tool_requests]
        self.results.extend(ordered)
        self.pending, self.round_results = None, {}
        self.committed = tuple(from_tether(conversation))
        return ordered

    def tool_results(self) -> tuple[TurnToolResult, ...]:
        """Every result of the turn so far in request order, the pending round's included."""
        pending = self.pending
        if pending is None:
            return tuple(self.results)
        done = [
            self.round_results[r.request_id]
            for r in pending.tool_requests
            if r.request_id in self.round_results
        ]
        return (*self.results, *done)

    def checkpoint_at(
        self, boundary: str, iteration: int, reconciliation: Reconciliation | None = None
    ) -> Callable[[int], TurnCheckpoint]:
        """Makes the checkpoint of the state as it is when the journal numbers it."""

        def build(last_sequence: int) -> TurnCheckpoint:
            pending = self.pending
            self.checkpoint = TurnCheckpoint(
                self.ids.next_id("checkpoint"),
                self.session_id,
                self.turn_id,
                self.run_id,
                boundary,
                iteration,
                last_sequence,
                self.committed,
                self.stable_prefix,
                self.context_state,
                self.completed,
                None if pending is None else pending.invocation_id,
                pending,
                self.remaining(),
                self.tool_results(),
                pending is not None and not pending.tool_requests,
                reconciliation,
            )
            return self.checkpoint

        return build

"""``TurnRecorder``: the turn engine's view of one ordinary tether run.

Nothing here loops or calls anything on its own. Fitted to the ``Agent`` a turn configures, it
watches the engine's own seams and writes the turn's semantic events and checkpoints:

- as the middleware around each model call: the invocation's snapshot (made once, reused by
  retries), its start, failure or completion, and the model-response checkpoint;
- as the agent's guard: the permission request and decision before each tool runs;
- as the middleware around each tool call: its completion and the tool-result checkpoint;
- as the conversation store: the round's results committed in request order when the loop
  stores them, then the conversation update and the round's checkpoint.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

from ...context import MemoryContextStore
from ...events import IterationEnd, StreamEvent
from ...loop import (
    CancellationToken,
    Middleware,
    ModelHandler,
    ModelRequest,
    ReplyBuilder,
    ToolHandler,
    ToolRequest,
    as_generator,
)
from ...messages import Message, ToolResultBlock
from ...tools.decisions import Deny, GuardDecision
from ...tools.results import default_error_text, describe_exception
from ...tools.tool import ToolCall
from ..errors import IndeterminateOutcome
from ..messages import from_tether
from .data import (
    Reconciliation,
    TurnModelRequest,
    TurnModelResponse,
    TurnSnapshot,
    TurnToolRequest,
    TurnToolResult,
)
from .journal import EventLog
from .ports import (
    PermissionDecision,
    PermissionPort,
    PermissionRequest,
    ProviderStatePort,
    resolved,
)
from .state import TurnState
from .tools import HostToolRequest, running_tool

__all__ = ["TurnConversation", "TurnHalted", "TurnRecorder"]


class TurnHalted(BaseException):
    """Ends the run from inside it when a tool's outcome is unknown. A ``BaseException`` so the
    loop does not turn it into a tool result; the engine catches it."""

    def __init__(self, reconciliation: Reconciliation) -> None:
        super().__init__(f"{reconciliation.kind} {reconciliation.id}: outcome unknown")
        self.reconciliation = reconciliation


@dataclass(slots=True)
class _Call:
    """What the turn knows of one tool call while it is dispatched."""

    request: TurnToolRequest
    iteration: int
    executed: bool = False
    denied: bool = False
    skipped: bool = False
    error: BaseException | None = None
    parse_error: bool = False


_CALL: ContextVar[_Call | None] = ContextVar("tether_prompty_turn_call", default=None)


class TurnConversation(MemoryContextStore):
    """The run's conversation store; reports each stored round of tool results."""

    __slots__ = ("_on_results",)

    def __init__(
        self, messages: Sequence[Message], on_results: Callable[[Message], Awaitable[None]]
    ) -> None:
        super().__init__(messages)
        self._on_results = on_results

    async def append(self, message: Message) -> None:
        await super().append(message)
        if message.tool_results:
            await self._on_results(message)


class TurnRecorder(Middleware):
    """Projects one run into the turn's event stream, snapshots and checkpoints."""

    def __init__(
        self,
        *,
        state: TurnState,
        log: EventLog,
        permissions: PermissionPort,
        provider_state: ProviderStatePort | None,
        cancel: CancellationToken,
        messages: Sequence[Message],
    ) -> None:
        self.turn = state
        self.log = log
        self.permissions = permissions
        self.provider_state = provider_state
        self.cancel = cancel
        self.store = TurnConversation(messages, self._on_results)

    # -- model invocations ------------------------------------------------------------------------

    async def wrap_model_call(
        self, request: ModelRequest, call_next: ModelHandler
    ) -> AsyncGenerator[StreamEvent, None]:
        index = request.iteration - 1
        snapshot = await self._snapshot(request, index)
        invocation = TurnModelRequest(
            self.log.session_id,
            self.log.turn_id,
            snapshot.invocation_id,
            index,
            request.attempt,
            snapshot,
        )
        self.turn.active = invocation
        await self.log.emit("model_invocation_started", index, _invocation(invocation))
        builder, answered = ReplyBuilder(), False
        try:
            async with aclosing(as_generator(call_next(request))) as events:
                async for event in events:
                    builder.add(event)
                    if type(event) is IterationEnd:
                        answered = True
                        await self._answered(invocation, builder)
                    yield event
        except Exception as exc:
            if not answered:
                failed = {**_invocation(invocation), "error": describe_exception(exc)}
                await self.log.emit("model_invocation_failed", index, failed)
            raise

    async def _snapshot(self, request: ModelRequest, index: int) -> TurnSnapshot:
        """The invocation's snapshot: made on its first attempt, the same one on every retry."""
        turn = self.turn
        if turn.snapshots and turn.snapshots[-1].iteration == index:
            return turn.snapshots[-1]
        snapshot = TurnSnapshot(
            turn.ids.next_id("snapshot"),
            turn.ids.next_id("invocation"),
            index,
            tuple(from_tether(request.messages)),
            turn.stable_prefix,
            turn.context_state,
            tuple(t.name for t in request.tools),
        )
        turn.snapshots.append(snapshot)
        prepared = {
            "snapshotId": snapshot.id,
            "invocationId": snapshot.invocation_id,
            "messageCount": len(snapshot.messages),
            "stablePrefixMessages": snapshot.stable_prefix_messages,
            "portability": snapshot.context_state.portability,
        }
        await self.log.emit("context_prepared", index, prepared)
        return snapshot

    async def _answered(self, invocation: TurnModelRequest, builder: ReplyBuilder) -> None:
        """Journal the response with its checkpoint: assistant message, provider-state
        transition, the pending tool batch (each call given its stable execution id), output."""
        message, calls = builder.build()
        end = builder.end
        assert end is not None
        ids = self.turn.ids
        requests = tuple(
            TurnToolRequest(c.id, ids.next_id("exec"), c.name, dict(c.input)) for c in calls
        )
        response = TurnModelResponse(
            invocation.invocation_id,
            tuple(from_tether([message])) if message is not None else (),
            requests,
            None if requests else builder.text(),
            end.stop_reason.value,
        )
        if self.provider_state is not None:
            state = await resolved(self.provider_state.next_state(invocation, response))
            if state is not None:
                response = replace(response, next_state=state)
        self.turn.answered(response)
        completed = {
            **_invocation(invocation),
            "stopReason": response.stop_reason,
            "toolRequests": [r.request_id for r in requests],
            "final": not requests,
        }
        await self.log.emit_checkpointed(
            [("model_invocation_completed", completed)],
            invocation.iteration,
            self.turn.checkpoint_at("model_response", invocation.iteration),
        )

    # -- tool calls -------------------------------------------------------------------------------

    async def wrap_tool_call(self, call: ToolRequest, call_next: ToolHandler) -> ToolResultBlock:
        request = self.turn.requested(call.id)
        if request is None:  # not a call of the pending response: nothing to record
            return await call_next(call)
        index = call.iteration - 1
        state = _Call(request, index, parse_error=call.block.parse_error is not None)
        state.skipped = self.cancel.cancelled  # the loop will not run it
        host = HostToolRequest(
            request.execution_id,
            request.request_id,
            request.name,
            self.log.session_id,
            self.log.turn_id,
            index,
            request.arguments,
        )
        token = _CALL.set(state)
        try:
            with running_tool(host):
                result = await call_next(call)
        finally:
            _CALL.reset(token)
        await self._finished(state, result)
        return result

    async def permission_guard(self, call: ToolCall) -> GuardDecision:
        """The agent's guard: ask the permission port, then let the call run or deny it (the
        denial is the model-visible result)."""
        state = _CALL.get()
        if state is None or state.request.request_id != call.id:
            return None
        request, index = state.request, state.iteration
        asked = PermissionRequest(
            f"{request.execution_id}-permission",
            request.execution_id,
            request.request_id,
            request.name,
            dict(call.arguments),
            self.log.session_id,
            self.log.turn_id,
            index,
        )
        await self.log.emit("permission_requested", index, _permission(asked))
        decision = await self._decide(asked)
        resolved_payload = {
            "permissionId": asked.id,
            "approved": decision.approved,
            "reason": decision.reason,
        }
        await self.log.emit("permission_resolved", index, resolved_payload)
        if not decision.approved:
            state.denied = True
            return Deny(decision.reason or "permission denied")
        if self.cancel.cancelled:
            state.skipped = True
            return Deny("the run was cancelled before the tool ran")
        state.executed = True
        await self.log.emit("tool_execution_started", index, _tool(request))
        return None

    async def _decide(self, asked: PermissionRequest) -> PermissionDecision:
        """The port's decision; a failing or malformed answer is a denial."""
        try:
            decision = await resolved(self.permissions.decide(asked))
        except Exception as exc:
            return PermissionDecision(False, f"the permission check failed: {exc!r}")
        if not isinstance(decision, PermissionDecision):
            return PermissionDecision(False, f"the permission port answered {decision!r}")
        return decision

    def format_tool_error(self, name: str, arguments: Mapping[str, Any], exc: BaseException) -> str:
        """The agent's error text for a raising tool; notes the exception on the call."""
        state = _CALL.get()
        if state is not None:
            state.error = exc
        return default_error_text(name, arguments, exc)

    async def _finished(self, state: _Call, result: ToolResultBlock) -> None:
        """Journal a finished call (completion, if it ran) with its checkpoint; halt the run if
        its outcome is unknown."""
        if state.skipped:
            return
        if isinstance(state.error, IndeterminateOutcome):
            await self._halt(state)
        request = state.request
        outcome = TurnToolResult(
            request.request_id,
            request.execution_id,
            request.name,
            not result.is_error,
            result.text,
            _error_kind(state, result),
        )
        self.turn.round_results[request.request_id] = outcome
        items = [("tool_execution_completed", _result(outcome))] if state.executed else []
        await self.log.emit_checkpointed(
            items, state.iteration, self.turn.checkpoint_at("tool_result", state.iteration)
        )

    async def _halt(self, state: _Call) -> None:
        assert state.error is not None
        found = Reconciliation("tool", state.request.execution_id, describe_exception(state.error))
        await self.reconcile(found, state.iteration, "tool_reconciliation_required")
        raise TurnHalted(found)

    async def reconcile(self, found: Reconciliation, iteration: int, kind: str) -> None:
        """Journal an effect of unknown outcome with a checkpoint that says so."""
        self.turn.halted = True
        checkpoint = self.turn.checkpoint_at("reconciliation", iteration, found)
        await self.log.emit_checkpointed([(kind, found.to_dict())], iteration, checkpoint)

    # -- the round's commit -----------------------------------------------------------------------

    async def _on_results(self, message: Message) -> None:
        """The loop stored a round's results: commit them in request order with the
        conversation update and the round's checkpoint."""
        if self.log.failed is not None:  # the run is on its way out: nothing commits
            return
        turn = self.turn
        cancelled = self.cancel.cancelled
        ordered = turn.commit_round(message.tool_results, cancelled, self.store.messages)
        if ordered is None:
            return
        index = turn.snapshots[-1].iteration
        items: list[tuple[str, Mapping[str, Any]]] = [
            ("tool_result_committed", _result(r)) for r in ordered
        ]
        items.append(("conversation_updated", {"messageCount": len(turn.committed)}))
        await self.log.emit_checkpointed(items, index, turn.checkpoint_at("tool_round", index))


def _error_kind(state: _Call, result: ToolResultBlock) -> str | None:
    if not result.is_error:
        return None
    if state.denied:
        return "permission_denied"
    if state.error is not None:
        return "exception"
    if state.parse_error:
        return "invalid_arguments"
    return "tool_error"


def _invocation(request: TurnModelRequest) -> dict[str, Any]:
    return {
        "invocationId": request.invocation_id,
        "snapshotId": request.snapshot.id,
        "attempt": request.attempt,
    }


def _permission(request: PermissionRequest) -> dict[str, Any]:
    return {
        "permissionId": request.id,
        "executionId": request.execution_id,
        "requestId": request.request_id,
        "toolName": request.tool_name,
    }


def _tool(request: TurnToolRequest) -> dict[str, Any]:
    return {
        "executionId": request.execution_id,
        "requestId": request.request_id,
        "toolName": request.name,
    }


def _result(result: TurnToolResult) -> dict[str, Any]:
    return {
        "executionId": result.execution_id,
        "requestId": result.request_id,
        "toolName": result.name,
        "success": result.success,
        "errorKind": result.error_kind,
    }

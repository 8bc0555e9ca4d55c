"""The Prompty turn engine (turn-engine.md, §14.7) as a configuration of tether's one loop.

``TurnEngine.run_turn`` starts the turn, configures an ordinary ``Agent`` (the model port is a
``CompletionTransport``, tools are ``Tool``s, permission is the agent's guard, a
``TurnRecorder`` watches every call), runs it, and commits the outcome: success (then the
post-commit effects), cancellation, failure, or reconciliation when an effect's outcome is unknown.
Every event goes through one ``EventLog`` and the durability port.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ...agent import Agent
from ...base.clock import SYSTEM_CLOCK, Clock
from ...errors import (
    MaxIterationsError,
    ModelStopError,
    RunCancelled,
    StreamContractError,
    ToolNotFoundError,
    TransportError,
)
from ...events import SessionEndEvent
from ...loop import CancellationToken, Middleware
from ...tools.results import describe_exception
from ...tools.tool import Tool
from ...transports.base import CompletionTransport
from ...transports.retry import RetryPolicy
from ...types import StopReason
from ..errors import IndeterminateOutcome
from ..messages import PromptMessage, from_tether, to_tether
from .data import Reconciliation, TurnError, TurnOptions, TurnStatus
from .journal import DurabilityPort, EventLog, EventSink, JournalFailed, MemoryJournal
from .ports import (
    AllowAllPermissions,
    IdGenerator,
    PermissionPort,
    PostCommitEffect,
    PostCommitRequest,
    ProviderStatePort,
    SequentialIds,
    TurnClock,
    UtcClock,
    post_commit_id,
    resolved,
)
from .recorder import TurnHalted, TurnRecorder
from .records import RunTurnRequest, RunTurnResult, TurnCheckpoint
from .state import TurnState

__all__ = ["TurnEngine", "run_turn"]


class TurnEngine:
    """Runs Prompty turns on tether's loop, with the host's bindings.

    - ``transport``: the model port; ``tools``: what the model may call (``host_tools`` makes
      tools that a ``HostToolExecutor`` runs with each call's stable identity).
    - ``permissions``: resolved before every tool execution (default: allow all).
    - ``journal``: the durability port (default: a ``MemoryJournal``, kept as ``.journal``).
    - ``clock`` stamps events; ``ids`` names runs, snapshots, invocations, checkpoints and
      executions (default: a fresh ``SequentialIds`` per turn, so ids are unique per turn).
    - ``provider_state``: classifies the provider state each response leaves.
    - ``post_commit``: idempotent effects after a successful commit.
    - ``on_event``: sees every written event; ``retry``/``retry_clock``: model attempts and
      their waits; ``concurrent_tools``: run a response's calls at once (results still commit
      in request order); ``middleware``: more of tether's middleware, inside the recorder.
    """

    __slots__ = (
        "clock",
        "concurrent_tools",
        "ids",
        "journal",
        "middleware",
        "on_event",
        "permissions",
        "post_commit",
        "provider_state",
        "retry",
        "retry_clock",
        "tools",
        "transport",
    )

    def __init__(
        self,
        transport: CompletionTransport,
        tools: Sequence[Tool] = (),
        *,
        permissions: PermissionPort | None = None,
        journal: DurabilityPort | None = None,
        clock: TurnClock | None = None,
        ids: IdGenerator | None = None,
        provider_state: ProviderStatePort | None = None,
        post_commit: Sequence[PostCommitEffect] = (),
        on_event: EventSink | None = None,
        retry: RetryPolicy | None = None,
        retry_clock: Clock = SYSTEM_CLOCK,
        concurrent_tools: bool = False,
        middleware: Sequence[Middleware] = (),
    ) -> None:
        self.transport = transport
        self.tools = tuple(tools)
        self.permissions: PermissionPort = permissions or AllowAllPermissions()
        self.journal: DurabilityPort = journal if journal is not None else MemoryJournal()
        self.clock: TurnClock = clock or UtcClock()
        self.ids = ids
        self.provider_state = provider_state
        self.post_commit = tuple(post_commit)
        self.on_event = on_event
        self.retry = _never_retry_unknown(retry or RetryPolicy())
        self.retry_clock = retry_clock
        self.concurrent_tools = concurrent_tools
        self.middleware = tuple(middleware)

    async def run_turn(
        self, request: RunTurnRequest, *, cancel: CancellationToken | None = None
    ) -> RunTurnResult:
        """Run one turn to its end. Its failures come back in the result (status ``error``,
        ``cancelled`` or ``reconciliation_required``); a journal write failure comes back as
        ``reconciliation_required`` with the unwritten checkpoint as recovery state. Raises
        ``ValueError`` only for messages the engine cannot send (before any event)."""
        messages = to_tether(request.messages)
        ids = self.ids if self.ids is not None else SequentialIds()
        log = EventLog(
            request.session_id,
            request.turn_id,
            self.journal,
            self.clock,
            self.on_event,
            request.last_sequence,
        )
        state = TurnState(request.session_id, request.turn_id, ids.next_id("run"), ids, messages)
        recorder = TurnRecorder(
            state=state,
            log=log,
            permissions=self.permissions,
            provider_state=self.provider_state,
            cancel=cancel if cancel is not None else CancellationToken(),
            messages=messages,
        )
        try:
            return await self._turn(recorder, request)
        except JournalFailed as failure:
            first = log.failed or failure  # what later writes refused is the same failure
            error = TurnError("durability", describe_exception(first.cause))
            checkpoint = first.checkpoint or state.checkpoint
            return _result(recorder, "reconciliation_required", error=error, checkpoint=checkpoint)

    async def _turn(self, recorder: TurnRecorder, request: RunTurnRequest) -> RunTurnResult:
        started = {
            "runId": recorder.turn.run_id,
            "inputs": dict(request.inputs),
            "options": request.options.to_dict(),
            "messageCount": len(request.messages),
        }
        await recorder.log.emit("turn_started", 0, started)
        problem = request.options.problem()
        if problem is not None:
            return await _fail(recorder, TurnError("validation", problem))
        try:
            end = await self._run(recorder, request.options)
        except TurnHalted as halted:
            return await _unknown(recorder, halted.reconciliation)
        return await self._finish(recorder, end)

    async def _run(self, recorder: TurnRecorder, options: TurnOptions) -> SessionEndEvent:
        """The turn's run of the one loop, to its end."""
        agent = Agent(
            system="",
            transport=self.transport,
            tools=list(self.tools),
            max_iterations=options.max_iterations,
            execution="parallel" if self.concurrent_tools else "sequential",
            guards=(recorder.permission_guard,),
            retry=self.retry,
            unknown_tool="raise",
            format_tool_error=recorder.format_tool_error,
            middleware=(recorder, *self.middleware),
            tool_timeout=None,
            clock=self.retry_clock,
            name="prompty-turn",
        )
        stream = agent.run_stream(None, recorder.store, cancel=recorder.cancel)
        return await stream.get_session_end()

    async def _finish(self, recorder: TurnRecorder, end: SessionEndEvent) -> RunTurnResult:
        """Commit what ended the run."""
        error = end.error
        if error is None and end.stop_reason is not StopReason.CANCELLED:
            if recorder.cancel.cancelled:  # checked once more before the final commit
                return await _cancelled(recorder, "cancelled before the final commit")
            return await self._commit(recorder)
        if error is None or isinstance(error, RunCancelled):
            return await _cancelled(recorder, "cancelled" if error is None else str(error))
        if isinstance(error, IndeterminateOutcome):
            active = recorder.turn.active
            found = Reconciliation(
                "model",
                active.invocation_id if active is not None else "",
                describe_exception(error),
                active.attempt if active is not None else 1,
            )
            done = recorder.turn.completed
            await recorder.reconcile(found, done, "model_reconciliation_required")
            return await _unknown(recorder, found)
        return await _fail(recorder, TurnError(_error_kind(error), describe_exception(error)))

    async def _commit(self, recorder: TurnRecorder) -> RunTurnResult:
        turn = recorder.turn
        pending = turn.pending
        output = pending.output if pending is not None and pending.output is not None else ""
        committed = {
            "output": output,
            "iterations": turn.completed,
            "portability": turn.context_state.portability,
        }
        await recorder.log.emit("turn_committed", turn.completed, committed)
        turn.pending = None
        messages = tuple(from_tether(recorder.store.messages))
        warnings = await self._post_commit(recorder, output, messages)
        return _result(recorder, "success", output=output, messages=messages, warnings=warnings)

    async def _post_commit(
        self, recorder: TurnRecorder, output: str, messages: tuple[PromptMessage, ...]
    ) -> tuple[str, ...]:
        """Run the post-commit effects; their journaling failures are warnings, not failures."""
        log = recorder.log
        effect_id = post_commit_id(log.session_id, log.turn_id)
        done = recorder.turn.completed
        try:
            await log.emit("post_commit_started", done, {"effectId": effect_id})
        except JournalFailed as failed:
            return (f"post-commit effects not run: their start was not journaled ({failed})",)
        request = PostCommitRequest(effect_id, log.session_id, log.turn_id, output, messages)
        errors = []
        for effect in self.post_commit:
            try:
                await resolved(effect(request))
            except Exception as exc:
                errors.append(describe_exception(exc))
        kind = "post_commit_failed" if errors else "post_commit_completed"
        payload: dict[str, Any] = {"effectId": effect_id}
        if errors:
            payload["errors"] = errors
        warnings = [f"post-commit effect failed: {e}" for e in errors]
        try:
            await log.emit(kind, done, payload)
        except JournalFailed as failed:
            warnings.append(f"post-commit {kind} was not journaled ({failed})")
        return tuple(warnings)


async def run_turn(
    request: RunTurnRequest,
    transport: CompletionTransport,
    tools: Sequence[Tool] = (),
    *,
    cancel: CancellationToken | None = None,
    **bindings: Any,
) -> RunTurnResult:
    """Run one turn with a ``TurnEngine`` made of ``transport``, ``tools`` and ``bindings``."""
    return await TurnEngine(transport, tools, **bindings).run_turn(request, cancel=cancel)


def _never_retry_unknown(policy: RetryPolicy) -> RetryPolicy:
    """``policy``, except that an indeterminate outcome is never retried."""
    base = policy.retry_on
    return replace(
        policy, retry_on=lambda exc: not isinstance(exc, IndeterminateOutcome) and base(exc)
    )


def _error_kind(error: BaseException) -> str:
    if isinstance(error, MaxIterationsError):
        return "max_iterations"
    if isinstance(error, ToolNotFoundError):
        return "unknown_tool"
    if isinstance(error, TransportError | StreamContractError | ModelStopError):
        return "model"
    return "internal"


async def _cancelled(recorder: TurnRecorder, reason: str) -> RunTurnResult:
    await recorder.log.emit("turn_cancelled", recorder.turn.completed, {"reason": reason})
    return _result(recorder, "cancelled")


async def _fail(recorder: TurnRecorder, error: TurnError) -> RunTurnResult:
    failed = {"errorKind": error.kind, "message": error.message}
    await recorder.log.emit("turn_failed", recorder.turn.completed, failed)
    return _result(recorder, "error", error=error)


async def _unknown(recorder: TurnRecorder, found: Reconciliation) -> RunTurnResult:
    done = recorder.turn.completed
    await recorder.log.emit("turn_reconciliation_required", done, found.to_dict())
    message = f"the outcome of {found.kind} {found.id} is unknown: {found.error}"
    return _result(
        recorder,
        "reconciliation_required",
        error=TurnError("reconciliation", message),
        reconciliation=found,
    )


def _result(
    recorder: TurnRecorder,
    status: TurnStatus,
    *,
    output: str | None = None,
    messages: tuple[PromptMessage, ...] | None = None,
    error: TurnError | None = None,
    reconciliation: Reconciliation | None = None,
    checkpoint: TurnCheckpoint | None = None,
    warnings: tuple[str, ...] = (),
) -> RunTurnResult:
    """The turn's result; a turn that did not succeed returns its committed conversation."""
    turn = recorder.turn
    return RunTurnResult(
        status,
        turn.session_id,
        turn.turn_id,
        turn.run_id,
        output,
        turn.completed,
        tuple(turn.snapshots),
        turn.tool_results(),
        tuple(recorder.log.events),
        turn.committed if messages is None else messages,
        turn.context_state,
        checkpoint if checkpoint is not None else turn.checkpoint,
        error,
        reconciliation,
        warnings,
    )

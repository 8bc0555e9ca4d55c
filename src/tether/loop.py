"""The agent loop: the one implementation of "call the model, dispatch tools, append, repeat".

Every front door configures ``Agent`` and runs this. The loop reads the history once per run and
then only appends, so an iteration costs the same at message 10 and at message 10,000.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from .context import ContextStore
from .dispatch import (
    ToolDispatcher,
    interrupted_result,
    not_run_result,
    tools_by_name,
    truncate_result,
)
from .errors import (
    GuardrailError,
    MaxIterationsError,
    ModelStopError,
    RunCancelled,
    TetherError,
    ToolNotFoundError,
)
from .events import (
    ContextTrimmed,
    Error,
    IterationEnd,
    IterationStart,
    SessionEndEvent,
    SteeringInjected,
    StreamEvent,
    ToolDispatch,
    ToolResult,
)
from .messages import ContentBlock, Message, ToolResultBlock, ToolUseBlock
from .tools.guards import Allow, Deny, GuardDecision
from .tools.tool import Tool
from .turn import TurnBuilder, stream_turn
from .types import ZERO_USAGE, StopReason, Usage

if TYPE_CHECKING:
    from .agent import Agent
    from .budget import Trim
    from .control import CancellationToken, Steering

__all__ = ["InputGuardrail", "OutputGuardrail", "RunState", "UserInput", "run_loop"]

UserInput: TypeAlias = str | Message | Sequence[ContentBlock] | None
InputGuardrail: TypeAlias = Callable[[Sequence[Message]], GuardDecision | Awaitable[GuardDecision]]
OutputGuardrail: TypeAlias = Callable[[Message], GuardDecision | Awaitable[GuardDecision]]

_DISPATCHABLE = frozenset((StopReason.TOOL_USE, StopReason.END_TURN, StopReason.PAUSE_TURN))
_ANSWERS = frozenset(
    (StopReason.END_TURN, StopReason.TOOL_USE, StopReason.REFUSAL, StopReason.UNKNOWN)
)


@dataclass(slots=True)
class RunState:
    """What a run has produced so far; ``AgentStream`` reads it."""

    context: ContextStore
    final_text: str = ""
    stop_reason: StopReason | None = None
    usage: Usage = ZERO_USAGE
    error: BaseException | None = None
    iterations: int = 0
    done: bool = False


def _user_message(value: str | Message | Sequence[ContentBlock]) -> Message:
    if isinstance(value, Message):
        return value
    return Message("user", value)


async def _check(guardrail: Callable[[Any], Any], subject: Any, where: str) -> None:
    decision = guardrail(subject)
    if inspect.isawaitable(decision):
        decision = await decision
    if decision is None or type(decision) is Allow:
        return
    if type(decision) is Deny:
        raise GuardrailError(f"{where} guardrail denied: {decision.reason}")
    raise TypeError(f"{where} guardrail returned {decision!r}; expected Allow or Deny")


def _stop_error(reason: StopReason, text: str) -> TetherError:
    if reason is StopReason.CANCELLED:
        return RunCancelled("the provider reported the turn as cancelled")
    what = {
        StopReason.MAX_TOKENS: "the response was cut off at the output token limit (max_tokens)",
        StopReason.CONTEXT_WINDOW_EXCEEDED: "the conversation no longer fits the context window",
    }.get(reason, f"the model stopped with {reason.value!r}")
    return ModelStopError(what, stop_reason=reason.value, partial_text=text)


async def _offered_tools(
    agent: Agent, history: list[Message]
) -> tuple[list[Tool], dict[str, Tool]]:
    """This iteration's tools: sources read again, then trimmed by the selector."""
    tools = agent.current_tools()
    if agent.selector is not None:
        tools = list(await agent.selector.select(history, tools))
    return tools, tools_by_name(tools)


async def _messages_to_send(
    agent: Agent, history: list[Message], iteration: int
) -> tuple[Sequence[Message], Trim | None]:
    """What this model call sends: the context policy's view, the last-iteration note, checked
    by the input guardrails."""
    sent: Sequence[Message] = history
    trim = agent.context_policy.apply(history) if agent.context_policy is not None else None
    if trim is not None:
        sent = trim.messages
    if iteration == agent.max_iterations and agent.last_iteration_message is not None:
        sent = [*sent, agent.last_iteration_message]
    for guardrail in agent.input_guardrails:
        await _check(guardrail, sent, "input")
    return sent, trim


async def run_loop(
    agent: Agent,
    user_message: UserInput,
    state: RunState,
    cancel: CancellationToken | None,
    steering: Steering | None,
) -> AsyncGenerator[StreamEvent, None]:
    """The run, as events. Ends with ``SessionEndEvent`` (or raises, per the agent's policies)."""
    store = state.context
    limit = agent.max_tool_result_chars
    total = ZERO_USAGE
    stop = StopReason.END_TURN
    error: BaseException | None = None
    iteration = 0
    try:
        history = await store.get_history()
        if limit is not None:
            history = [_model_view(m, limit) for m in history]
        if user_message is not None:
            first = _user_message(user_message)
            await store.append(first)
            history.append(first)
        while True:
            if iteration >= agent.max_iterations:
                raise MaxIterationsError(
                    f"the agent reached max_iterations={agent.max_iterations} while the model "
                    "was still calling tools"
                )
            if cancel is not None and cancel.cancelled:
                raise RunCancelled("the run was cancelled")
            iteration += 1
            state.iterations = iteration
            if steering is not None and steering.has_pending:
                injected = steering.drain()
                for m in injected:
                    await store.append(m)
                    history.append(m)
                yield SteeringInjected(tuple(injected))
            yield IterationStart(iteration)

            tools, table = await _offered_tools(agent, history)
            sent, trim = await _messages_to_send(agent, history, iteration)
            if trim is not None:
                yield ContextTrimmed(trim.removed, len(sent))
            if cancel is not None and cancel.cancelled:
                raise RunCancelled("the run was cancelled")

            turn = TurnBuilder()
            model_events = stream_turn(
                agent.transport,
                sent,
                [t.spec for t in tools],
                agent.system,
                agent.retry,
                cancel,
                turn,
            )
            try:
                try:
                    async for event in model_events:
                        yield event
                finally:  # as contextlib.aclosing, without its object held for the whole turn
                    await model_events.aclose()
            except BaseException:
                # A failed or cancelled turn keeps what the model already said (text only).
                partial = turn.text()
                if partial:
                    said = Message("assistant", partial)
                    await store.append(said)
                    history.append(said)
                raise
            end = turn.end
            assert end is not None
            total = total + end.usage
            state.usage = total
            message, calls = turn.build()
            if message is not None:
                for out_guardrail in agent.output_guardrails:
                    await _check(out_guardrail, message, "output")
                await store.append(message)
                history.append(message)
            state.final_text = text = turn.text()
            reason = end.stop_reason
            try:
                yield IterationEnd(iteration, reason, end.usage, end.raw_stop_reason, end.model)
            except BaseException:
                if calls:  # closed before dispatch began: the stored calls still need results
                    await _append_results(
                        store, history, [interrupted_result(b) for b in calls], limit
                    )
                raise

            if calls and reason in _DISPATCHABLE:
                unknown: list[str] = []
                dispatcher = ToolDispatcher(
                    table,
                    agent.guards,
                    iteration,
                    agent.format_tool_error,
                    cancel,
                    unknown,
                )
                async with aclosing(
                    _dispatch(
                        dispatcher, calls, agent.execution == "parallel", store, history, limit
                    )
                ) as events:
                    async for event in events:
                        yield event
                if unknown and agent.unknown_tool == "raise":
                    raise ToolNotFoundError(
                        f"the model called unknown tool(s): {', '.join(unknown)}"
                    )
                continue
            if calls:
                why = f"the response ended with {reason.value!r} before the call was complete."
                skipped = [not_run_result(b, why) for b in calls]
                await _append_results(store, history, skipped, limit)
                for block, result in zip(calls, skipped, strict=True):
                    yield ToolResult(block.id, block.name, True, result.content)
                if reason is StopReason.MAX_TOKENS:
                    continue
            elif reason is StopReason.PAUSE_TURN:
                continue
            if reason in _ANSWERS:
                stop = StopReason.END_TURN if reason is StopReason.TOOL_USE else reason
                break
            stop = reason
            raise _stop_error(reason, text)
    except MaxIterationsError as exc:
        if agent.on_max_iterations == "raise":
            state.stop_reason, state.error, state.done = StopReason.ERROR, exc, True
            raise
        error, stop = exc, StopReason.ERROR
        state.done = True
    except RunCancelled as exc:
        error, stop = exc, StopReason.CANCELLED
        state.done = True
    except Exception as exc:
        error = exc
        if stop not in (StopReason.MAX_TOKENS, StopReason.CONTEXT_WINDOW_EXCEEDED):
            stop = StopReason.ERROR
        state.done = True
    else:
        state.done = True
    finally:
        if not state.done:  # closed or cancelled from outside
            state.stop_reason, state.done = StopReason.CANCELLED, True
    state.stop_reason, state.error = stop, error
    if error is not None:
        yield Error(error)
    yield SessionEndEvent(stop, total, error, iteration)


def _model_view(message: Message, limit: int) -> Message:
    results = [b for b in message.content if type(b) is ToolResultBlock]
    if not results:
        return message
    return Message(
        message.role,
        tuple(
            truncate_result(b, limit) if type(b) is ToolResultBlock else b for b in message.content
        ),
    )


async def _append_results(
    store: ContextStore, history: list[Message], results: list[ToolResultBlock], limit: int | None
) -> None:
    """Store the full results; the history sent to the model gets the truncated copy."""
    full = Message("user", tuple(results))
    await store.append(full)
    history.append(full if limit is None else _model_view(full, limit))


async def _dispatch(
    dispatcher: ToolDispatcher,
    calls: list[ToolUseBlock],
    parallel: bool,
    store: ContextStore,
    history: list[Message],
    limit: int | None,
) -> AsyncGenerator[StreamEvent, None]:
    """Run the calls, yield their events; whatever happens, every call gets a stored result."""
    results: list[ToolResultBlock | None] = [None] * len(calls)
    try:
        if not parallel or len(calls) == 1:
            for i, block in enumerate(calls):
                yield ToolDispatch(block.id, block.name, block.input)
                result = results[i] = await dispatcher.execute(block)
                yield ToolResult(block.id, block.name, result.is_error, result.content)
        else:
            for block in calls:
                yield ToolDispatch(block.id, block.name, block.input)
            async with aclosing(_run_concurrently(dispatcher, calls, results)) as finished:
                async for i, result in finished:
                    yield ToolResult(calls[i].id, calls[i].name, result.is_error, result.content)
    finally:
        final = [
            r if r is not None else interrupted_result(b)
            for r, b in zip(results, calls, strict=True)
        ]
        await _append_results(store, history, final, limit)


async def _run_concurrently(
    dispatcher: ToolDispatcher, calls: list[ToolUseBlock], results: list[ToolResultBlock | None]
) -> AsyncGenerator[tuple[int, ToolResultBlock], None]:
    """Start every call at once; yield (position, result) as each finishes; fill ``results``."""
    tasks: dict[asyncio.Future[ToolResultBlock], int] = {
        asyncio.ensure_future(dispatcher.execute(b)): i for i, b in enumerate(calls)
    }
    pending = set(tasks)
    try:
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(done, key=tasks.__getitem__):
                i = tasks[task]
                result = results[i] = task.result()
                yield i, result
    finally:
        if pending:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            for task in pending:
                if not task.cancelled() and task.exception() is None:
                    results[tasks[task]] = task.result()

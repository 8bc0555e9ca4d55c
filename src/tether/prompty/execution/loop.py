"""The Prompty agent loop (§9, §13) as a configuration of tether's one engine, whose loop is the
only one: ``agent_loop`` builds an ``Agent`` whose settings say what the spec says
(MAX_ITERATIONS tool rounds, MAX_LLM_RETRIES with ``min(2^n + jitter, 60)`` backoff, §9.9's error
text, sequential or parallel tools, guardrails, steering, a character budget) and translates the
run's events and errors into the spec's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...agent import Agent
from ...base.clock import SYSTEM_CLOCK, Clock
from ...context import CharBudget
from ...errors import GuardrailError as EngineGuardrailError
from ...errors import (
    LimitExceeded,
    MaxIterationsError,
    RunCancelled,
    ToolNotFoundError,
    TransportError,
)
from ...events import SteeringInjected
from ...loop import CancellationToken, Limits, Middleware, Steering
from ...messages import Message
from ...tools.decisions import Allow, Deny, GuardDecision
from ...tools.tool import Tool, ToolCall
from ...transports.base import CompletionTransport
from ...transports.retry import RetryPolicy, is_retryable
from ...types import StopReason
from ..errors import (
    ExecuteError,
    IterationLimitError,
    ModelRefusedError,
    ToolNotRegisteredError,
    TurnCancelled,
    TurnGuardrailError,
    TurnLimitExceeded,
)
from ..messages import PromptMessage, from_tether, to_tether
from .events import EventCallback, PromptyEvents, ToolResultsWatch

__all__ = [
    "MAX_ITERATIONS",
    "MAX_LLM_RETRIES",
    "GuardrailResult",
    "Guardrails",
    "LoopOptions",
    "LoopOutcome",
    "agent_loop",
]

MAX_ITERATIONS = 10
MAX_LLM_RETRIES = 3
SUMMARY_PREFIX = "[Summary of earlier conversation] "


@dataclass(frozen=True, slots=True)
class GuardrailResult:
    """A guardrail's verdict; a denial needs a reason."""

    allowed: bool
    reason: str | None = None


GuardrailHook = Callable[..., "GuardrailResult | Awaitable[GuardrailResult]"]


@dataclass(frozen=True, slots=True)
class Guardrails:
    """§13.4's hooks: ``input(messages)``, ``output(message)``, ``tool(name, arguments)``."""

    input: GuardrailHook | None = None
    output: GuardrailHook | None = None
    tool: GuardrailHook | None = None


@dataclass(frozen=True, slots=True)
class LoopOptions:
    """§13.7's keyword options of ``turn``, plus tether's own (clock, middleware, streaming,
    ``limits``: the run's ``tether.Limits``)."""

    max_iterations: int = MAX_ITERATIONS
    max_llm_retries: int = MAX_LLM_RETRIES
    on_event: EventCallback | None = None
    cancel: CancellationToken | None = None
    context_budget: int | None = None
    guardrails: Guardrails | None = None
    steering: Steering | None = None
    parallel_tool_calls: bool = False
    stream: bool = False
    clock: Clock = SYSTEM_CLOCK
    middleware: Sequence[Middleware] = ()
    name: str = "prompty"
    limits: Limits | None = None

    def __post_init__(self) -> None:
        if self.max_iterations < 1:
            raise ValueError("max_iterations must be >= 1")
        if self.max_llm_retries < 1:
            raise ValueError("max_llm_retries must be >= 1")
        if self.context_budget is not None and self.context_budget < 1:
            raise ValueError("context_budget must be a positive number of characters")


@dataclass(slots=True)
class LoopOutcome:
    """What a finished loop returns: the answer and the whole conversation, Prompty-shaped."""

    result: str
    messages: list[PromptMessage] = field(default_factory=list)
    model_calls: int = 0


@dataclass(frozen=True, slots=True)
class PromptyRetry(RetryPolicy):
    """§9.10's backoff: ``min(2^n + jitter, 60)`` seconds after failure ``n``, jitter in [0, 1)."""

    def backoff(self, attempt: int, rand: Callable[[], float]) -> float:
        return min(2.0**attempt + rand(), self.max_delay)


async def _verdict(hook: GuardrailHook, *args: Any) -> GuardDecision:
    result = hook(*args)
    if isinstance(result, Awaitable):
        result = await result
    if not isinstance(result, GuardrailResult):
        raise TypeError(f"a guardrail returned {result!r}; expected a GuardrailResult")
    return Allow() if result.allowed else Deny(result.reason or "denied")


def _engine_guardrails(guardrails: Guardrails | None, events: PromptyEvents) -> dict[str, Any]:
    """The agent settings that run Prompty's three hooks at the engine's check points."""
    if guardrails is None:
        return {}
    settings: dict[str, Any] = {}
    if guardrails.input is not None:
        hook_in = guardrails.input

        async def input_guardrail(sent: Sequence[Message]) -> GuardDecision:
            return await _verdict(hook_in, [m.to_dict() for m in from_tether(sent)])

        settings["input_guardrails"] = (input_guardrail,)
    if guardrails.output is not None:
        hook_out = guardrails.output

        async def output_guardrail(message: Message) -> GuardDecision:
            return await _verdict(hook_out, from_tether([message])[0].to_dict())

        settings["output_guardrails"] = (output_guardrail,)
    if guardrails.tool is not None:
        hook_tool = guardrails.tool

        async def tool_guardrail(call: ToolCall) -> GuardDecision:
            decision = await _verdict(hook_tool, call.name, dict(call.arguments))
            if isinstance(decision, Deny):
                events.denied.add(call.id)
            return decision

        settings["guards"] = (tool_guardrail,)
    return settings


def _budget(chars: int | None) -> CharBudget | None:
    """§13.3's budget as the vectors show it: system messages kept, the digest a system
    message after them, what is kept starting at a user message."""
    if chars is None:
        return None
    return CharBudget(chars, summary_role="system", summary_format=SUMMARY_PREFIX + "{}")


def build_agent(
    transport: CompletionTransport,
    tools: Sequence[Tool],
    options: LoopOptions,
    events: PromptyEvents,
) -> Agent:
    """The engine's agent for one Prompty loop."""
    return Agent(
        system="",
        transport=transport,
        tools=list(tools),
        max_iterations=options.max_iterations + 1,  # N tool rounds, then the answer
        execution="parallel" if options.parallel_tool_calls else "sequential",
        context_policy=_budget(options.context_budget),
        retry=PromptyRetry(max_attempts=options.max_llm_retries, retry_on=is_retryable),
        unknown_tool="raise",
        clock=options.clock,
        middleware=options.middleware,
        name=options.name,
        tool_timeout=None,
        limits=options.limits,
        **_engine_guardrails(options.guardrails, events),
    )


def _cancel_reason(events: PromptyEvents, during_round: bool) -> str:
    if during_round:
        return "Cancellation requested after tool execution"
    if events.model_calls == 0:
        return "Cancellation requested before first iteration"
    return f"Cancellation requested before iteration {events.model_calls + 1}"


def _translate(
    error: BaseException,
    events: PromptyEvents,
    options: LoopOptions,
    during_round: bool,
    messages: Sequence[PromptMessage],
) -> BaseException:
    """The spec's error for what ended the engine's run."""
    if isinstance(error, RunCancelled):
        reason = _cancel_reason(events, during_round)
        events.emit("cancelled", {"reason": reason})
        return TurnCancelled(reason, messages)
    if isinstance(error, MaxIterationsError):
        limit = f"Agent loop exceeded {options.max_iterations} iterations"
        return IterationLimitError(limit, messages)
    if isinstance(error, ToolNotFoundError):
        name = events.unknown[0] if events.unknown else "?"
        return ToolNotRegisteredError(f"Tool not registered: {name}", messages)
    if isinstance(error, EngineGuardrailError):
        events.emit("error", {"message": str(error)})
        return TurnGuardrailError(str(error), error.reason, messages)
    if isinstance(error, TransportError):
        return ExecuteError(str(error), messages)
    if isinstance(error, LimitExceeded):
        return TurnLimitExceeded(error.limit, error.value, error.maximum, messages)
    return error


async def agent_loop(
    messages: Sequence[PromptMessage],
    transport: CompletionTransport,
    tools: Sequence[Tool],
    options: LoopOptions | None = None,
) -> LoopOutcome:
    """Run the loop from ``messages`` until the model answers; raise the spec's errors."""
    options = options or LoopOptions()
    cancel = options.cancel

    def cancelled() -> bool:
        return cancel is not None and cancel.cancelled

    events = PromptyEvents(options.on_event, stream=options.stream, cancelled=cancelled)
    events.known = frozenset(t.name for t in tools)
    store = ToolResultsWatch(to_tether(messages), events, cancelled)
    agent = build_agent(transport, tools, options, events)
    stream = agent.run_stream(None, store, cancel=cancel, steering=options.steering)
    async for event in stream:
        events.see(event)
        if type(event) is SteeringInjected:
            store.steered()
    try:
        answer = await stream.get_final_text()
    except Exception as error:
        conversation = from_tether(store.messages)
        raise _translate(error, events, options, events.in_round, conversation) from error
    conversation = from_tether(store.messages)
    if events.stop_reason is StopReason.REFUSAL:
        raise ModelRefusedError(answer, conversation)
    events.emit("done", {"response": answer, "messages": [m.to_dict() for m in conversation]})
    return LoopOutcome(answer, conversation, events.model_calls)

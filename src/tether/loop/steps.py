"""Small pieces of the loop that hold no run state: guardrail checks, the model's view of a
history and what an iteration sends of it, the tools on offer, which stops dispatch or answer,
stop errors, open calls and the events of calls that ran."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from ..errors import (
    GuardrailError,
    LimitExceeded,
    MaxIterationsError,
    ModelStopError,
    RunCancelled,
    TetherError,
)
from ..events import Compacted, CompactionFailed, ContextTrimmed, StreamEvent
from ..messages import ContentBlock, Message, ToolResultBlock, ToolUseBlock, text_message
from ..tools.decisions import Allow, Deny
from ..tools.results import truncate_result
from ..tools.tool import Tool
from ..types import StopReason, ToolSpec
from .dispatch import finished, started, tools_by_name

if TYPE_CHECKING:
    from ..context import Trim
    from .config import AgentConfig
    from .control import CancellationToken
    from .state import RunState

__all__ = [
    "ANSWERS",
    "DISPATCHABLE",
    "Told",
    "check_guardrail",
    "dispatched",
    "failure_stop",
    "message_of",
    "messages_to_send",
    "model_view",
    "next_iteration",
    "offer",
    "ran",
    "stop_error",
    "unanswered",
]

DISPATCHABLE = frozenset((StopReason.TOOL_USE, StopReason.END_TURN, StopReason.PAUSE_TURN))
"""The stops of a reply whose calls are complete: they go to dispatch."""
ANSWERS = frozenset(
    (StopReason.END_TURN, StopReason.TOOL_USE, StopReason.REFUSAL, StopReason.UNKNOWN)
)
"""The stops of a reply without calls to run that answer the run."""
Told: TypeAlias = ContextTrimmed | Compacted | CompactionFailed
"""What the context policy did before a model call, told as an event."""
_KEPT_STOPS = frozenset((StopReason.MAX_TOKENS, StopReason.CONTEXT_WINDOW_EXCEEDED))


async def check_guardrail(guardrail: Callable[[Any], Any], subject: Any, where: str) -> None:
    """Raise ``GuardrailError`` if ``guardrail`` denies ``subject``."""
    decision = guardrail(subject)
    if inspect.isawaitable(decision):
        decision = await decision
    if decision is None or type(decision) is Allow:
        return
    if type(decision) is Deny:
        raise GuardrailError(f"{where} guardrail denied: {decision.reason}", decision.reason)
    raise TypeError(f"{where} guardrail returned {decision!r}; expected Allow or Deny")


def stop_error(reason: StopReason, text: str) -> TetherError:
    """The error for a turn that stopped for a reason that is not an answer."""
    if reason is StopReason.CANCELLED:
        return RunCancelled("the provider reported the turn as cancelled")
    what = {
        StopReason.MAX_TOKENS: "the response was cut off at the output token limit (max_tokens)",
        StopReason.CONTEXT_WINDOW_EXCEEDED: "the conversation no longer fits the context window",
    }.get(reason, f"the model stopped with {reason.value!r}")
    return ModelStopError(what, stop_reason=reason.value, partial_text=text)


def model_view(message: Message, limit: int) -> Message:
    """``message`` as the model sees it: tool results cut to ``limit`` characters."""
    if not any(type(b) is ToolResultBlock for b in message.content):
        return message
    return Message(
        message.role,
        tuple(
            truncate_result(b, limit) if type(b) is ToolResultBlock else b for b in message.content
        ),
    )


def unanswered(history: Sequence[Message], calls: Iterable[ToolUseBlock]) -> set[str]:
    """The ids of ``calls`` that have no result after the message that made them."""
    wanted = {c.id for c in calls}
    answered: set[str] = set()
    for message in reversed(history):
        if any(b.id in wanted for b in message.tool_uses):
            break
        answered.update(r.tool_use_id for r in message.tool_results)
    return wanted - answered


def next_iteration(state: RunState, agent: AgentConfig, cancel: CancellationToken | None) -> int:
    """The number of the iteration about to start; past ``max_iterations`` or after a cancel
    the run ends instead."""
    if state.iterations >= agent.max_iterations:
        raise MaxIterationsError(
            f"the agent reached max_iterations={agent.max_iterations} while the model "
            "was still calling tools"
        )
    if cancel is not None and cancel.cancelled:
        raise RunCancelled("the run was cancelled")
    state.iterations += 1
    return state.iterations


def messages_to_send(
    agent: AgentConfig, history: Sequence[Message], iteration: int
) -> tuple[Sequence[Message], Trim | None]:
    """What ``iteration`` sends: the context policy's view of ``history`` (and the ``Trim``
    that made it, if the policy cut it), with the last-iteration note on the last one."""
    sent = history
    trim = agent.context_policy.apply(sent) if agent.context_policy is not None else None
    if trim is not None:
        sent = trim.messages
    if iteration == agent.max_iterations and agent.last_iteration_message is not None:
        sent = [*sent, agent.last_iteration_message]
    return sent, trim


def offer(tools: list[Tool]) -> tuple[dict[str, Tool], list[ToolSpec]]:
    """The tools by name (two with one name are an error) and as sent to the model; a plain
    loop, as a comprehension costs a call of its own."""
    table: dict[str, Tool] = {}
    specs: list[ToolSpec] = []
    for tool in tools:
        table[tool.name] = tool
        specs.append(tool.spec)
    if len(table) != len(tools):
        tools_by_name(tools)  # raises, naming the tools that share a name
    return table, specs


def dispatched(calls: list[ToolUseBlock], reason: StopReason) -> bool:
    """Whether a reply's calls go to dispatch: it has some, and stopped where they are complete."""
    return bool(calls) and reason in DISPATCHABLE


def message_of(user_message: Message | str | Sequence[ContentBlock]) -> Message:
    """The user's input as a message (plain text by the cheaper ``text_message``)."""
    if type(user_message) is str:
        return text_message("user", user_message)
    return user_message if isinstance(user_message, Message) else Message("user", user_message)


def failure_stop(error: BaseException) -> StopReason:
    """The stop reason a run ended by ``error`` reports."""
    if isinstance(error, RunCancelled):
        return StopReason.CANCELLED
    if isinstance(error, LimitExceeded) and error.limit == "repeated_calls":
        return StopReason.REPEATED_CALLS
    if isinstance(error, ModelStopError) and error.stop_reason in _KEPT_STOPS:
        return StopReason(error.stop_reason)
    return StopReason.ERROR


def ran(
    calls: Sequence[ToolUseBlock], results: Sequence[ToolResultBlock | None]
) -> tuple[StreamEvent, ...]:
    """The events of calls that ran outside an iteration (a resume's approved calls): each
    one's dispatch, then its result."""
    events: list[StreamEvent] = []
    for call, result in zip(calls, results, strict=True):
        assert result is not None
        events += (started(call), finished(call, result))
    return tuple(events)

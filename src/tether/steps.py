"""Small pieces of the loop that hold no run state: guardrail checks, the model's view of a
history, stop errors and open calls."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .errors import GuardrailError, ModelStopError, RunCancelled, TetherError
from .messages import Message, ToolResultBlock, ToolUseBlock
from .results import truncate_result
from .tools.decisions import Allow, Deny
from .types import StopReason

__all__ = [
    "check_guardrail",
    "model_view",
    "stop_error",
    "unanswered",
    "unanswered_at_end",
]


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


def unanswered_at_end(history: Sequence[Message]) -> list[ToolUseBlock]:
    """The tool calls of a history's last message when it is an assistant's: no result follows."""
    if not history or history[-1].role != "assistant":
        return []
    return history[-1].tool_uses


def unanswered(history: Sequence[Message], calls: Iterable[ToolUseBlock]) -> set[str]:
    """The ids of ``calls`` that have no result after the message that made them."""
    wanted = {c.id for c in calls}
    answered: set[str] = set()
    for message in reversed(history):
        if any(b.id in wanted for b in message.tool_uses):
            break
        answered.update(r.tool_use_id for r in message.tool_results)
    return wanted - answered

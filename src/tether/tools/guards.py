"""Guards: an ordered chain of checks a tool call passes before it runs.

A guard is any callable taking a ``ToolCall`` and returning (or awaiting to) ``Allow``,
``Deny(reason)``, ``Rewrite(arguments)`` or ``None`` (same as allow). A denial's reason is what
the model sees; a rewrite replaces the arguments the rest of the chain and the handler get.
The same decision types serve the agent's input and output guardrails.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from .tool import Tool

__all__ = ["Allow", "Deny", "Guard", "GuardDecision", "Rewrite", "ToolCall", "run_guards"]


@dataclass(frozen=True, slots=True)
class Allow:
    """Let the call (or the run) go on unchanged."""


@dataclass(frozen=True, slots=True)
class Deny:
    """Refuse; ``reason`` is shown to the model (tool guards) or raised (guardrails)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Rewrite:
    """Go on with these arguments instead."""

    arguments: Mapping[str, Any]


GuardDecision: TypeAlias = Allow | Deny | Rewrite | None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as a guard sees it."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    tool: Tool
    iteration: int


Guard: TypeAlias = Callable[[ToolCall], GuardDecision | Awaitable[GuardDecision]]


async def run_guards(guards: Iterable[Guard], call: ToolCall) -> ToolCall | Deny:
    """Run ``guards`` in order; return the (possibly rewritten) call, or the first ``Deny``."""
    for guard in guards:
        decision = guard(call)
        if inspect.isawaitable(decision):
            decision = await decision
        if decision is None or type(decision) is Allow:
            continue
        if type(decision) is Deny:
            return decision
        if type(decision) is Rewrite:
            call = ToolCall(call.id, call.name, dict(decision.arguments), call.tool, call.iteration)
            continue
        raise TypeError(f"guard {guard!r} returned {decision!r}; expected Allow, Deny or Rewrite")
    return call

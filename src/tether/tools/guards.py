"""Guards: an ordered chain of checks a tool call passes before it runs.

A guard is any callable taking a ``ToolCall`` and returning (or awaiting to) ``Allow``,
``Deny(reason)``, ``Rewrite(arguments)`` or ``None`` (same as allow); or, as in axio, an object
whose ``check(tool, **arguments)`` returns the arguments to use and raises to deny
(``PermissionGuard`` is that kind's base class, for axio code that subclasses it). A denial's
reason is what the model sees; a rewrite replaces the arguments the rest of the chain and the
handler get. The same decision types serve the agent's input and output guardrails.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any

from .decisions import Allow, Deny, GuardDecision, Rewrite
from .tool import CheckGuard, Guard, Tool, ToolCall

__all__ = [
    "Allow",
    "CheckGuard",
    "Deny",
    "Guard",
    "GuardDecision",
    "PermissionGuard",
    "Rewrite",
    "ToolCall",
    "run_guards",
]


class PermissionGuard(ABC):
    """Base of axio-style guards: define ``async check(tool, **kwargs)`` to return the arguments
    the call goes on with (changed or not; None keeps them) and to raise to deny it, the
    exception's text then being the model's error result ("Tool call denied: ...").

    A subclass works wherever a tether guard does (``Tool(guards=...)``, ``Agent(guards=...)``),
    and calling it with a ``ToolCall`` gives the tether decision (``Deny``, ``Rewrite``, None).
    """

    __slots__ = ()

    @abstractmethod
    async def check(self, tool: Tool, **kwargs: Any) -> Mapping[str, Any] | None:
        """The arguments to go on with; raise to deny the call."""

    async def __call__(self, call: ToolCall) -> GuardDecision:
        return await _check_style(self.check, call)


async def run_guards(guards: Iterable[Guard], call: ToolCall) -> ToolCall | Deny:
    """Run ``guards`` in order; return the (possibly rewritten) call, or the first ``Deny``."""
    for guard in guards:
        check = getattr(guard, "check", None)
        decision: Any
        if check is not None and callable(check):
            decision = await _check_style(check, call)
        else:
            assert callable(guard)
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


async def _check_style(check: Any, call: ToolCall) -> GuardDecision:
    """An axio-style ``check(tool, **arguments)``: what it returns is the arguments to use; an
    exception it raises is a denial, its message the reason."""
    try:
        arguments = check(call.tool, **call.arguments)
        if inspect.isawaitable(arguments):
            arguments = await arguments
    except Exception as exc:
        return Deny(str(exc) or type(exc).__name__)
    if arguments is None:
        return None
    if not isinstance(arguments, Mapping):
        raise TypeError(f"guard check() returned {arguments!r}; expected the arguments (a dict)")
    return None if arguments == call.arguments else Rewrite(arguments)

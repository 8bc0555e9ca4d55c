"""Guards: an ordered chain of checks a tool call passes before it runs.

A guard is any callable taking a ``ToolCall`` and returning (or awaiting to) ``Allow``,
``Deny(reason)``, ``Rewrite(arguments)`` or ``None`` (same as allow); or, as in axio, an object
whose ``check(tool, **arguments)`` returns the arguments to use and raises to deny
(``PermissionGuard`` is that kind's base class, for axio code that subclasses it, and is called
as axio calls it, ``guard(tool, **arguments)``: see ``permission.py``). A denial's
reason is what the model sees; a rewrite replaces the arguments the rest of the chain and the
handler get. The same decision types serve the agent's input and output guardrails.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

from .decisions import Allow, Deny, GuardDecision, Rewrite
from .permission import (
    AllowAllGuard,
    ConcurrentGuard,
    DenyAllGuard,
    GuardError,
    PermissionGuard,
    check_style,
)
from .tool import CheckGuard, Guard, ToolCall

__all__ = [
    "Allow",
    "AllowAllGuard",
    "CheckGuard",
    "ConcurrentGuard",
    "Deny",
    "DenyAllGuard",
    "Guard",
    "GuardDecision",
    "GuardError",
    "PermissionGuard",
    "Rewrite",
    "ToolCall",
    "run_guards",
]


async def run_guards(guards: Iterable[Guard], call: ToolCall) -> ToolCall | Deny:
    """Run ``guards`` in order; return the (possibly rewritten) call, or the first ``Deny``."""
    for guard in guards:
        # a PermissionGuard is called as axio's Tool calls it, through its own __call__
        check = guard if isinstance(guard, PermissionGuard) else getattr(guard, "check", None)
        decision: Any
        if check is not None and callable(check):
            decision = await check_style(check, call)
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

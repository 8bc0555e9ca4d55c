"""axio's permission guards: ``PermissionGuard`` and the stock ``AllowAllGuard``,
``DenyAllGuard`` and ``ConcurrentGuard``.

axio calls a guard as ``await guard(tool, **arguments)``: it returns the arguments the call goes
on with and raises to deny. tether's dispatcher calls these guards the same way, so a subclass
that wraps ``__call__`` (to audit, or to serialise checks) is run through its wrapper; called
with a ``ToolCall`` instead, a guard gives tether's decision (``Deny``, ``Rewrite`` or None).
"""

from __future__ import annotations

import asyncio
import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ..errors import GuardError
from .decisions import Deny, GuardDecision, Rewrite
from .tool import Tool, ToolCall

__all__ = [
    "AllowAllGuard",
    "ConcurrentGuard",
    "DenyAllGuard",
    "GuardError",
    "PermissionGuard",
    "check_style",
]


class PermissionGuard(ABC):
    """Base of axio-style guards: define ``async check(tool, **kwargs)`` to return the arguments
    the call goes on with (changed or not; None keeps them) and to raise to deny it, the
    exception's text then being the model's error result ("Tool call denied: ...").

    A subclass works wherever a tether guard does (``Tool(guards=...)``, ``Agent(guards=...)``).
    """

    __slots__ = ()

    @abstractmethod
    async def check(self, tool: Tool, **kwargs: Any) -> Mapping[str, Any] | None:
        """The arguments to go on with; raise to deny the call."""

    async def __call__(self, tool: Tool | ToolCall, /, **kwargs: Any) -> Any:
        """axio's call, ``guard(tool, **arguments)``: the arguments to use, or raise. tether's,
        ``guard(call)``: the decision for that ``ToolCall``."""
        if isinstance(tool, ToolCall):
            if kwargs:
                raise TypeError("a guard called with a ToolCall takes no keyword arguments")
            return await check_style(self, tool)
        return await self.check(tool, **kwargs)


class ConcurrentGuard(PermissionGuard, ABC):
    """A guard that runs at most ``concurrency`` checks at a time (a class attribute, 1 unless a
    subclass sets it): for checks that ask a person or a rate-limited service."""

    concurrency: ClassVar[int] = 1

    def __init__(self) -> None:
        self._semaphore = asyncio.Semaphore(self.concurrency)

    async def __call__(self, tool: Tool | ToolCall, /, **kwargs: Any) -> Any:
        if isinstance(tool, ToolCall):
            return await super().__call__(tool, **kwargs)
        async with self._semaphore:
            return await self.check(tool, **kwargs)


class AllowAllGuard(PermissionGuard):
    """Lets every call through with its arguments unchanged."""

    __slots__ = ()

    async def check(self, tool: Tool, **kwargs: Any) -> dict[str, Any]:
        return dict(kwargs)


class DenyAllGuard(PermissionGuard):
    """Denies every call (``GuardError("denied")``)."""

    __slots__ = ()

    async def check(self, tool: Tool, **kwargs: Any) -> dict[str, Any]:
        raise GuardError("denied")


async def check_style(check: Callable[..., Any], call: ToolCall) -> GuardDecision:
    """Run an axio-style ``check(tool, **arguments)`` (a guard's ``check``, or a
    ``PermissionGuard`` itself) on ``call``: what it returns is the arguments to use; an
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

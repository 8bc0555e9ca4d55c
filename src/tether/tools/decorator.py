"""``@tool``: turn a plain (sync or async) function into a ``Tool`` with a pydantic-built schema."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

from .signature import default_name, from_signature
from .tool import Guard, Tool

__all__ = ["make_tool", "tool"]

_Decorator = Callable[[Callable[..., Any]], Tool]


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    fn: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    guards: Sequence[Guard] = (),
    concurrency: int | None = None,
    bindings: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    thread: bool = False,
    idempotent: bool = False,
) -> Tool: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    guards: Sequence[Guard] = (),
    concurrency: int | None = None,
    bindings: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    thread: bool = False,
    idempotent: bool = False,
) -> _Decorator: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    guards: Sequence[Guard] = (),
    concurrency: int | None = None,
    bindings: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    thread: bool = False,
    idempotent: bool = False,
) -> Tool | _Decorator:
    """Make a ``Tool`` from ``fn``: schema from its signature, descriptions from its docstring.

    Use bare (``@tool``), with options (``@tool(name=...)``) or directly (``tool(fn, ...)``).
    """
    caller_locals = sys._getframe(1).f_locals  # resolves annotations naming local classes
    options = _Options(
        name, description, guards, concurrency, bindings, timeout, thread, idempotent
    )

    def build(func: Callable[..., Any]) -> Tool:
        return make_tool(func, caller_locals, options)

    return build if fn is None else build(fn)


@dataclass(frozen=True, slots=True)
class _Options:
    """``@tool``'s options, as given."""

    name: str | None = None
    description: str | None = None
    guards: Sequence[Guard] = ()
    concurrency: int | None = None
    bindings: Mapping[str, Any] | None = None
    timeout: float | None = None
    thread: bool = False
    idempotent: bool = False


_PLAIN = _Options()


def make_tool(
    func: Callable[..., Any], local_ns: Mapping[str, Any], options: _Options = _PLAIN
) -> Tool:
    """``func`` as a ``Tool``, the one way ``@tool`` and a plain function in ``Agent(tools=)``
    are made one; ``local_ns`` resolves annotations that name the caller's local classes."""
    if isinstance(func, Tool):
        raise TypeError(f"@tool: {func.name!r} is already a Tool")
    if not callable(func):
        raise TypeError(f"@tool: expected a function, got {type(func).__name__}")
    tool_name = options.name if options.name is not None else default_name(func)
    try:
        summary, schema, validator = from_signature(func, tool_name, local_ns)
    except TypeError as exc:
        raise TypeError(f"@{exc}") from None
    return Tool(
        name=tool_name,
        handler=func,
        description=options.description if options.description is not None else summary,
        schema=schema,
        guards=options.guards,
        concurrency=options.concurrency,
        bindings=dict(options.bindings) if options.bindings else {},
        validator=validator,
        timeout=options.timeout,
        thread=options.thread,
        idempotent=options.idempotent,
    )

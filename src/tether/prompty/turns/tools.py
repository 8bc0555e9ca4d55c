"""Host tools: tether ``Tool``s whose calls go to a ``HostToolExecutor`` with the call's stable
identity (execution id, model call id, session, turn), which a plain handler never sees.

The turn engine marks the call being run (``active_tool_request``) around each dispatch; the
tool's handler reads it, so host tools run through the engine's one dispatch path (permission,
validation, error results) like any other tool.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ...tools.tool import Tool
from ...types import ToolSpec
from .ports import resolved

__all__ = [
    "HostToolExecutor",
    "HostToolRequest",
    "active_tool_request",
    "host_tools",
    "running_tool",
]

_OPEN_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}, "additionalProperties": True}


@dataclass(frozen=True, slots=True)
class HostToolRequest:
    """One tool execution: ``execution_id`` is its idempotency key, ``request_id`` the model's
    call id; ``arguments`` are those the call runs with (after permission and bindings)."""

    execution_id: str
    request_id: str
    tool_name: str
    session_id: str
    turn_id: str
    iteration: int
    arguments: Mapping[str, Any] = field(default_factory=dict)


class HostToolExecutor(Protocol):
    """Runs tools for the host; what it returns is the result (raising is a failed result)."""

    def execute(self, request: HostToolRequest) -> Any | Awaitable[Any]:
        """Run one call."""
        ...


_ACTIVE: ContextVar[HostToolRequest | None] = ContextVar("tether_prompty_tool", default=None)


def active_tool_request() -> HostToolRequest | None:
    """The turn engine's call being run in this context, if any."""
    return _ACTIVE.get()


@contextmanager
def running_tool(request: HostToolRequest) -> Iterator[None]:
    """Mark ``request`` as the call being run while the block runs (the engine does this)."""
    token = _ACTIVE.set(request)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def host_tools(executor: HostToolExecutor, specs: Iterable[ToolSpec | str]) -> list[Tool]:
    """Tools (by spec, or by bare name with an open schema) whose calls ``executor`` runs."""
    tools = []
    for given in specs:
        spec = ToolSpec(given, "", dict(_OPEN_SCHEMA)) if isinstance(given, str) else given
        tools.append(
            Tool(spec.name, _handler(executor, spec.name), spec.description, dict(spec.schema))
        )
    return tools


def _handler(executor: HostToolExecutor, name: str) -> Any:
    async def run(**arguments: Any) -> Any:
        active = _ACTIVE.get()
        if active is None or active.tool_name != name:
            raise RuntimeError(f"host tool {name!r} runs only inside a TurnEngine turn")
        return await resolved(executor.execute(replace(active, arguments=arguments)))

    return run

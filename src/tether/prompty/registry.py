"""§11's process-wide registries: tools by name, tool handlers by kind, connections by name.

Each is a lock-guarded dictionary; reading takes the lock too, so a handler registered on one
thread is seen whole on every other.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = [
    "BUILTIN_KINDS",
    "NameTable",
    "clear_connections",
    "clear_tool_handlers",
    "clear_tools",
    "get_connection",
    "get_tool",
    "get_tool_handler",
    "register_connection",
    "register_tool",
    "register_tool_handler",
]

V = TypeVar("V")


class NameTable(Generic[V]):
    """A thread-safe name → value table (one per registry)."""

    __slots__ = ("_items", "_lock", "_what")

    def __init__(self, what: str) -> None:
        self._items: dict[str, V] = {}
        self._lock = threading.Lock()
        self._what = what

    def put(self, name: str, value: V) -> None:
        """Store ``value`` under ``name``, replacing any earlier one."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self._what} needs a non-empty string name, got {name!r}")
        with self._lock:
            self._items[name] = value

    def get(self, name: str) -> V | None:
        """The value under ``name``, or None."""
        with self._lock:
            return self._items.get(name)

    def remove(self, name: str) -> None:
        """Forget ``name`` (no error if absent)."""
        with self._lock:
            self._items.pop(name, None)

    def clear(self) -> None:
        """Forget everything (for tests)."""
        with self._lock:
            self._items.clear()


ToolHandler = Callable[..., Any]
"""A name-registry handler: ``handler(args)`` with the arguments as one dict when its one
parameter is not a declared one (the spec's style), else with them as keywords."""
KindHandler = Callable[..., Any]
"""A kind handler: ``handler(tool_def, args, agent, inputs)``, sync or async."""

BUILTIN_KINDS = ("prompty", "mcp", "openapi")
"""The tool kinds the door handles itself when the application registers no handler."""

TOOLS: NameTable[ToolHandler] = NameTable("tool")
TOOL_HANDLERS: NameTable[KindHandler] = NameTable("tool kind handler")
CONNECTIONS: NameTable[Any] = NameTable("connection")


def register_tool(name: str, handler: ToolHandler) -> None:
    """Handle every call of tool ``name`` with ``handler`` (first in the dispatch order)."""
    if not callable(handler):
        raise TypeError(f"the handler for tool {name!r} is not callable: {handler!r}")
    TOOLS.put(name, handler)


def get_tool(name: str) -> ToolHandler | None:
    """The handler registered for tool ``name``, or None."""
    return TOOLS.get(name)


def clear_tools() -> None:
    """Forget every name-registered tool."""
    TOOLS.clear()


def register_tool_handler(kind: str, handler: KindHandler) -> None:
    """Handle tools of ``kind`` (``"*"`` for custom kinds) with ``handler``."""
    if not callable(handler):
        raise TypeError(f"the handler for tool kind {kind!r} is not callable: {handler!r}")
    TOOL_HANDLERS.put(kind, handler)


def get_tool_handler(kind: str) -> KindHandler | None:
    """The handler registered for tool kind ``kind``, or None. A built-in kind with none gets
    its default handler first: the kind handlers sit above the operations that look them up
    (a ``prompty`` tool runs a turn), so they are found by module name, not imported."""
    handler = TOOL_HANDLERS.get(kind)
    if handler is None and kind in BUILTIN_KINDS:
        importlib.import_module(f"{__package__}.kinds.builtin").ensure_builtin_kinds()
        handler = TOOL_HANDLERS.get(kind)
    return handler


def clear_tool_handlers() -> None:
    """Forget every kind handler, built-in ones included (their defaults return on the next
    lookup)."""
    TOOL_HANDLERS.clear()


def register_connection(name: str, client: Any) -> None:
    """Keep a configured client (a tether transport) for ``kind: reference`` connections."""
    CONNECTIONS.put(name, client)


def get_connection(name: str) -> Any | None:
    """The client registered as ``name``, or None."""
    return CONNECTIONS.get(name)


def clear_connections() -> None:
    """Forget every registered connection."""
    CONNECTIONS.clear()

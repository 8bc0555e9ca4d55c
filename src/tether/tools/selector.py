"""Seams for choosing tools: ``ToolSelector`` trims the list, ``ToolSource`` feeds it."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeAlias, runtime_checkable

from ..messages import Message
from .caller import user_locals
from .tool import Tool

__all__ = [
    "ListingCache",
    "ToolSelector",
    "ToolSource",
    "as_tool_list",
    "only_tools",
    "read_tools",
]


@runtime_checkable
class ToolSelector(Protocol):
    """Chooses which tools the model sees on the next iteration."""

    async def select(self, messages: Iterable[Message], tools: Iterable[Tool]) -> Iterable[Tool]:
        """Return the subset of ``tools`` to offer, given the history so far."""
        ...


@runtime_checkable
class ToolSource(Protocol):
    """A changing set of tools (an MCP server, a plugin registry), read again every iteration.

    ``list_tools`` may be a coroutine (a server lists its tools over the wire). A source may also
    have a ``revision`` attribute that changes whenever its list does; the loop then lists it
    again only when ``revision`` moved, and reuses the last listing otherwise.
    """

    def list_tools(self) -> Sequence[Tool] | Awaitable[Sequence[Tool]]:
        """The tools available right now."""
        ...


ListingCache: TypeAlias = dict[int, tuple[object, Sequence[Tool]]]
"""A run's last listing per source (by ``id``), with the ``revision`` it was made at."""


def as_tool_list(items: Sequence[Any]) -> list[Tool | ToolSource]:
    """``Agent(tools=...)`` as the loop reads it: each plain function made a ``Tool`` as ``@tool``
    makes one (its annotations and docstring give the schema). The same list when it holds only
    tools and sources; a ``TypeError`` naming the item for anything else."""
    if all(isinstance(item, Tool | ToolSource) for item in items):
        return items if isinstance(items, list) else list(items)
    local_ns = user_locals()
    return [_as_item(item, index, local_ns) for index, item in enumerate(items)]


def _as_item(item: Any, index: int, local_ns: Mapping[str, Any]) -> Tool | ToolSource:
    if isinstance(item, Tool | ToolSource):
        return item
    if not callable(item) or inspect.isclass(item):
        raise TypeError(
            f"tools[{index}] is {item!r} ({type(item).__name__}): the tool list takes a Tool, "
            "a ToolSource or a function"
        )
    from .decorator import make_tool  # noqa: PLC0415 - pydantic, only when a function is given

    try:
        return make_tool(item, local_ns)
    except TypeError as exc:
        raise TypeError(f"tools[{index}] ({item!r}) cannot be made a tool: {exc}") from None


def only_tools(items: Sequence[Tool | ToolSource]) -> list[Tool] | None:
    """``items`` as a list when every one is a ``Tool`` (no source to ask) and none is deferred
    (nothing to search for); None otherwise."""
    for item in items:
        if (type(item) is not Tool and not isinstance(item, Tool)) or item.deferred:
            return None
    return list(items)  # type: ignore[arg-type]


async def read_tools(
    items: Iterable[Tool | ToolSource], cache: ListingCache | None = None
) -> list[Tool]:
    """The tools on offer now: ``Tool``s as they are, each source listed (or its listing reused)."""
    out: list[Tool] = []
    for item in items:
        if type(item) is Tool or isinstance(item, Tool):
            out.append(item)
        elif isinstance(item, ToolSource):
            out.extend(await _list(item, cache))
        else:
            raise TypeError(
                f"the tool list holds {item!r}: neither a Tool nor a ToolSource (a function is "
                "made a tool when the agent is made; one added later needs tool(fn))"
            )
    return out


async def _list(source: ToolSource, cache: ListingCache | None) -> Sequence[Tool]:
    revision = getattr(source, "revision", None)
    if cache is not None and revision is not None:
        known = cache.get(id(source))
        if known is not None and known[0] == revision:
            return known[1]
    listed = source.list_tools()
    if inspect.isawaitable(listed):
        listed = await listed
    tools = tuple(listed)
    for tool in tools:
        if not isinstance(tool, Tool):
            raise TypeError(f"tool source {source!r} listed {tool!r}, which is not a Tool")
    if cache is not None and revision is not None:
        cache[id(source)] = (revision, tools)
    return tools

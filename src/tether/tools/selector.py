"""Seams for choosing tools: ``ToolSelector`` trims the list, ``ToolSource`` feeds it."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Iterable, Sequence
from typing import Protocol, TypeAlias, runtime_checkable

from ..messages import Message
from .tool import Tool

__all__ = ["ListingCache", "ToolSelector", "ToolSource", "only_tools", "read_tools"]


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


def only_tools(items: Sequence[Tool | ToolSource]) -> list[Tool] | None:
    """``items`` as a list when every one is a ``Tool`` (no source to ask); None otherwise."""
    for item in items:
        if type(item) is not Tool and not isinstance(item, Tool):
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
            raise TypeError(f"the tool list holds {item!r}: neither a Tool nor a ToolSource")
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

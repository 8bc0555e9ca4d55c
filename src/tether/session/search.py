"""``AgentSession(tool_search=...)``: the selector that puts a session's tools behind a search,
or offers every one of them."""

from __future__ import annotations

from collections.abc import Iterable

from ..mcp.deferral import checked_threshold
from ..messages import Message
from ..tools.search import ToolSearch
from ..tools.selector import ToolSelector
from ..tools.tool import Tool

__all__ = ["tool_selector"]


class _Every:
    """Offers every tool, deferred or not (``tool_search=False``)."""

    async def select(self, messages: Iterable[Message], tools: Iterable[Tool]) -> list[Tool]:
        return list(tools)


def tool_selector(tool_search: int | bool | None) -> ToolSelector | None:
    """None: each server defers its own tools; a number: a search past that many tools of the
    session's; ``False``: every tool offered."""
    if tool_search is None:
        return None
    threshold = checked_threshold(tool_search)
    return _Every() if threshold is None else ToolSearch(threshold=threshold)

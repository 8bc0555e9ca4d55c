"""Deferred loading for a server's large tool set: past its ``tool_search`` threshold every tool
it lists is marked ``deferred``, so the model is offered a search for them, not every schema."""

from __future__ import annotations

from ..tools.tool import Tool

__all__ = ["checked_threshold", "deferred_past"]


def checked_threshold(tool_search: object) -> int | None:
    """``tool_search`` as a threshold (None: never defer); a ``ValueError`` for anything but a
    count >= 0 or ``False``."""
    if tool_search is False:
        return None
    if isinstance(tool_search, bool) or not isinstance(tool_search, int) or tool_search < 0:
        raise ValueError(
            f"tool_search must be a number of tools (past it they are searched for) or False, "
            f"got {tool_search!r}"
        )
    return tool_search


def deferred_past(tools: list[Tool], threshold: int | None) -> list[Tool]:
    """``tools``, each marked deferred when there are more than ``threshold`` of them."""
    if threshold is not None and len(tools) > threshold:
        for tool in tools:
            tool.deferred = True  # a listing's own tools, made for it: marked in place
    return tools

"""Seams for choosing tools: ``ToolSelector`` trims the list, ``ToolSource`` feeds it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from ..messages import Message
from .tool import Tool

__all__ = ["ToolSelector", "ToolSource"]


@runtime_checkable
class ToolSelector(Protocol):
    """Chooses which tools the model sees on the next iteration."""

    async def select(self, messages: Iterable[Message], tools: Iterable[Tool]) -> Iterable[Tool]:
        """Return the subset of ``tools`` to offer, given the history so far."""
        ...


@runtime_checkable
class ToolSource(Protocol):
    """A changing set of tools (an MCP server, a plugin registry), read again every iteration."""

    def list_tools(self) -> Sequence[Tool]:
        """The tools available right now."""
        ...

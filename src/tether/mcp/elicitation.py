"""``Elicitation``: an MCP server asking the user for input in the middle of a tool call, as the
application's ``on_elicit`` answerer sees it. The answerer returns a dict (the user accepted;
checked against what was asked) or None (the user declined)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

from ..types import Elicitation

__all__ = ["Elicitation", "OnElicit"]


OnElicit: TypeAlias = Callable[
    [Elicitation], "Mapping[str, Any] | Awaitable[Mapping[str, Any] | None] | None"
]
"""The application's answerer: a dict accepts (its missing fields take the schema's defaults),
None declines. A coroutine function is awaited; a plain function runs in a worker thread, so it
may block (``input()``)."""

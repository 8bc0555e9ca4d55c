"""An ``McpTool``'s MCP-shaped result (``{"content": [...]}``) kept as it is for the MCP client
of a served call: audio, embedded resources and all, where the model reads it reduced to text and
images (``reduce_mcp_result``). The served call gathers the values its tools return
(``gathering``); the one it serves is the one the call's result was reduced from, so a result a
guard or middleware changed is served as changed. The SDK is imported on first use."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..messages import ToolResultBlock
from .content import reduce_mcp_result

__all__ = ["as_it_is", "gathering", "keep"]

_GATHERED: ContextVar[list[dict[str, Any]] | None] = ContextVar("tether_mcp_results", default=None)


def keep(value: Any) -> None:
    """Note ``value``, an MCP-shaped result, for the served call it belongs to (if any)."""
    gathered = _GATHERED.get()
    if gathered is not None and reduce_mcp_result(value) is not value:
        gathered.append(value)


@contextmanager
def gathering() -> Iterator[list[dict[str, Any]]]:
    """The MCP-shaped results returned while this block runs (in this task and its tasks)."""
    gathered: list[dict[str, Any]] = []
    token = _GATHERED.set(gathered)
    try:
        yield gathered
    finally:
        _GATHERED.reset(token)


def as_it_is(result: ToolResultBlock, gathered: Sequence[dict[str, Any]]) -> Any | None:
    """The SDK's ``CallToolResult`` of the gathered value ``result`` was reduced from, or None
    (nothing gathered, the result changed since, or a value the SDK does not read)."""
    import mcp_types as types  # noqa: PLC0415 - the SDK, on first use
    from pydantic import ValidationError  # noqa: PLC0415

    for value in reversed(gathered):
        reduced = reduce_mcp_result(value)
        if (reduced.content, reduced.is_error) != (result.content, result.is_error):
            continue
        try:
            return types.CallToolResult.model_validate(value)
        except ValidationError:
            return None
    return None

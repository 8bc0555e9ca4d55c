"""What a served tool returns, as MCP describes it: the ``outputSchema`` of a tool whose handler
returns an object (a pydantic model, a dataclass, a TypedDict, a mapping), and a result's
``structuredContent`` (the JSON object tether's result text already is). Text and other values
have no output schema: a client reads their text."""

from __future__ import annotations

import functools
import json
import typing
from typing import Any

from ..messages import ToolResultBlock
from ..tools.tool import Tool

__all__ = ["output_schema", "with_structure"]

_NOT_OBJECTS = (str, bytes, type(None), Any, ToolResultBlock)


@functools.lru_cache(maxsize=1024)  # read at every listing and call; a tool's hints stay put
def output_schema(tool: Tool) -> dict[str, Any] | None:
    """The JSON schema of what ``tool``'s handler returns, when that is an object; None when it
    returns text, a value of another kind, or says nothing of what it returns."""
    try:
        returns = typing.get_type_hints(tool.handler).get("return")
    except Exception:  # a hint that does not resolve: the tool's text is all a client gets
        return None
    if returns is None or returns in _NOT_OBJECTS:
        return None
    from pydantic import TypeAdapter  # noqa: PLC0415 - only for a tool that returns an object

    try:
        schema: dict[str, Any] = TypeAdapter(returns).json_schema()
    except Exception:  # a type pydantic cannot describe
        return None
    return schema if schema.get("type") == "object" else None


def with_structure(result: Any, schema: dict[str, Any] | None) -> Any:
    """The SDK's ``CallToolResult`` of a tool with an output ``schema``, its text's JSON object as
    ``structuredContent``; a result that holds no object is an error result saying so (a client
    checks the one against the other). Error results and tools without a schema pass as they
    are, and so does what is not a result yet (a 2026-era question for the user)."""
    import mcp_types as types  # noqa: PLC0415 - the SDK, loaded by the server already

    if schema is None or not isinstance(result, types.CallToolResult) or result.is_error:
        return result
    text = "".join(item.text for item in result.content if isinstance(item, types.TextContent))
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        said = "the tool's result is not the object its output schema describes"
        return types.CallToolResult(content=[types.TextContent(text=said)], is_error=True)
    return result.model_copy(update={"structured_content": value})
